"""bot.slack.errors: the Slack error code of an exception, in one place."""
from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.slack_response import SlackResponse

from bot.slack.errors import error_code, slack_error


def _refusal(data: dict) -> SlackApiError:
    response = SlackResponse(client=None, http_verb="POST", api_url="https://slack.test/api/chat.update",
                             req_args={}, data=data, headers={}, status_code=200)
    return SlackApiError("refused", response)


def test_the_web_api_error_code_or_the_type_name():
    assert slack_error(_refusal({"ok": False, "error": "not_in_channel"})) == "not_in_channel"
    assert error_code(_refusal({"ok": False, "error": "msg_too_long"})) == "msg_too_long"
    assert slack_error(_refusal({"ok": False})) == "error"
    assert slack_error(_refusal({"ok": False}), "Slack refused the message") == "Slack refused the message"
    assert slack_error(TimeoutError()) is None
    assert error_code(TimeoutError()) == "TimeoutError"
