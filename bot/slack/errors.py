"""Why Slack refused a call: the Web API error code of an exception, in one place."""
from __future__ import annotations

from slack_sdk.errors import SlackApiError

__all__ = ["error_code", "slack_error"]


def slack_error(err: BaseException, default: str | None = "error") -> str | None:
    """The Web API error code (``"not_in_channel"``, ``"msg_too_long"`` …) of a :class:`SlackApiError`.

    Returns ``default`` for a ``SlackApiError`` whose response names no error, and
    ``None`` for any other exception.
    """
    if not isinstance(err, SlackApiError):
        return None
    code = err.response.get("error", default)
    return None if code is None else str(code)


def error_code(err: BaseException, default: str = "error") -> str:
    """The Slack error code of ``err``, else its type name (``"TimeoutError"``): a short reason for logs and users."""
    return slack_error(err, default) or type(err).__name__
