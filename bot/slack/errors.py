"""Why Slack refused a call: the Web API error code of an exception, in one place.

Slack answers a refusal in two ways: HTTP 200 with ``{"ok": false, "error": "not_in_channel"}``
(slack-sdk raises ``SlackApiError``), or an HTTP error status (429, 5xx; ``response_url``
also 404 when it expired or was used up). :func:`error_code` names either as one short
token for logs, metrics labels and the asker: the ``error`` field, else ``http_<status>``,
else the exception's type name.
"""
from __future__ import annotations

from slack_sdk.errors import SlackApiError

__all__ = ["ResponseUrlError", "error_code", "is_refusal", "slack_error"]


class ResponseUrlError(Exception):
    """A ``response_url`` post that Slack did not accept (its webhook client returns the status
    instead of raising): ``status`` is the HTTP status, ``body`` what Slack said (short)."""

    def __init__(self, status: int, body: str = "") -> None:
        self.status = status
        self.body = body[:200]
        super().__init__(f"response_url answered HTTP {status}: {self.body}")


def slack_error(err: BaseException, default: str | None = "error") -> str | None:
    """The Web API error code (``"not_in_channel"``, ``"msg_too_long"`` …) of a :class:`SlackApiError`.

    Returns ``http_<status>`` for a ``SlackApiError`` whose response names no error but has a
    non-200 status (a 5xx page), else ``default``; ``None`` for any other exception.
    """
    if not isinstance(err, SlackApiError):
        return None
    data = getattr(err.response, "data", None)
    code = data.get("error") if isinstance(data, dict) else None
    if code is None:
        status = getattr(err.response, "status_code", None)
        if isinstance(status, int) and status != 200:
            return f"http_{status}"
        return None if default is None else str(default)
    return str(code)


def error_code(err: BaseException, default: str = "error") -> str:
    """The Slack error code of ``err`` (``http_404`` for a refused ``response_url``), else its type
    name (``"TimeoutError"``): a short reason for logs, metrics and users."""
    if isinstance(err, ResponseUrlError):
        return f"http_{err.status}"
    return slack_error(err, default) or type(err).__name__


def is_refusal(err: BaseException) -> bool:
    """Slack refused the call itself (``ok: false`` with HTTP 200: the message is gone, the channel
    archived …), as opposed to a 429, a 5xx or a connection failure that may pass."""
    return isinstance(err, SlackApiError) and getattr(err.response, "status_code", 200) == 200
