"""Secrets never reach the model, Slack or the channel through a question or tool output (issue 14).

The real app (signed requests, recording Slack Web API) and a local model server: a secret pasted
into /sz-ask is not in the channel's "asked:" line nor in what the model receives; values of the
repository's .env never reach the model through getLogs.
"""
from __future__ import annotations

import json
import logging

from openai_server import FakeOpenAIServer, text_reply, tool_reply
from test_ask_flow import all_text, finished, model_env, slack_calls

SECRET_QUESTION = "why does login fail with password=hunter2hunter2 and SESSION_KEY=prod-secret-123?"


async def test_a_secret_pasted_into_a_question_is_not_posted_nor_sent(make_bot):
    async with FakeOpenAIServer() as model:
        model.script(text_reply("Check the credentials file (src/server.js:1-3)."))
        bot = await make_bot(**model_env(model))
        await bot.slash("/sz-ask", SECRET_QUESTION)
        await finished(bot)
        sent = json.dumps(model.requests)
    posted = "\n".join(all_text(c) for c in slack_calls(bot))
    assert "hunter2hunter2" not in posted and "prod-secret-123" not in posted
    assert "password=[REDACTED]" in posted
    assert "hunter2hunter2" not in sent and "prod-secret-123" not in sent


async def test_values_of_the_repository_env_file_never_reach_the_model_through_tools(make_bot, bot_repo, caplog):
    (bot_repo / ".env").write_text("SESSION_TOKEN_VALUE=zz9envOnlyValue777\nDEBUG=true\n")
    async with FakeOpenAIServer() as model:
        model.script(tool_reply([("getLogs", json.dumps({"limit": 10}))]), text_reply("The logs show a login error."))
        bot = await make_bot(**model_env(model))
        logging.getLogger("bot.test").warning("login failed for session zz9envOnlyValue777 on node 3")
        await bot.slash("/sz-ask", "what do the recent logs say about logins?")
        await finished(bot)
        tool_messages = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages and "login failed for session" in tool_messages[0]
    assert "zz9envOnlyValue777" not in tool_messages[0] and "[REDACTED]" in tool_messages[0]
