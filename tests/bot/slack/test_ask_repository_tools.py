"""/sz-ask when the model looks further: repository tools through the real app (issue 16).

The model (a local SSE server) calls ``searchCode`` then ``readFile`` and cites what it read:
Slack's progress message shows each step as it happens, and the final answer links the cited
lines at the pinned commit; a hostile read is refused in the progress, never shown.
"""
from __future__ import annotations

import json

from openai_server import FakeOpenAIServer, text_reply, tool_reply
from test_ask_flow import INTERVAL, all_text, finished, model_env, slack_calls

from bot.slack.ask_flow import AskOptions

RETRY = ("// Card payments are retried with a growing pause.\n"
         "function pauseBeforeAttempt(attempt) {\n"
         "  return Math.min(30000, 250 * 2 ** attempt);\n"
         "}\n\nmodule.exports = { pauseBeforeAttempt };\n")


async def test_the_model_searches_reads_and_cites_what_it_read(make_bot, bot_repo):
    (bot_repo / "src" / "billing").mkdir()
    (bot_repo / "src" / "billing" / "pause.js").write_text(RETRY)
    answer = "Each retry waits 250 ms doubled per attempt, at most 30 s (src/billing/pause.js:2-4)."
    async with FakeOpenAIServer() as model:
        model.script(
            tool_reply([("searchCode", json.dumps({"query": "retry pause attempt"}))]),
            tool_reply([("readFile", json.dumps({"path": "src/billing/pause.js", "start": 1, "end": 6})),
                        ("readFile", json.dumps({"path": "../../etc/passwd"}))]),
            text_reply(answer, usage=(200, 30)),
        )
        bot = await make_bot(ask_options=AskOptions(update_interval_s=INTERVAL, stream_interval_s=INTERVAL),
                             REPO_WEB_URL="https://github.com/acme/shop", **model_env(model))
        await bot.slash("/sz-ask", "How long do we wait between card payment attempts?")
        outcome = await finished(bot)
        tool_messages = [m for m in model.requests[2]["messages"] if m["role"] == "tool"]
    assert outcome.ok
    progress = "\n".join(all_text(c) for c in slack_calls(bot) if c.method == "chat.update")
    assert "searching `retry pause attempt`… 1 hit" in progress
    assert "reading `src/billing/pause.js:1-6`" in progress
    assert "etc/passwd" in progress and "refused" in progress
    assert "root:" not in "\n".join(m["content"] for m in tool_messages)
    final, = bot.fake.answers()
    shown = all_text(final)
    assert "/src/billing/pause.js#L1-L6|src/billing/pause.js:L1-L6>" in shown and "not among" not in shown.lower()


async def test_answers_share_one_model_client_and_its_connections(make_bot):
    # Building an OpenAI client (and its TLS context) per answer once blocked the event loop under load.
    async with FakeOpenAIServer() as model:
        model.script(text_reply("One (src/server.js:1-3)."), text_reply("Two (src/server.js:1-3)."))
        bot = await make_bot(**model_env(model))
        await bot.slash("/sz-ask", "how is the deploy route protected?")
        await finished(bot, 1)
        await bot.slash("/sz-ask", "and which header carries the signature?")
        await finished(bot, 2)
        peers = list(model.peers)
    assert len(peers) == 2 and peers[0] == peers[1]  # the second answer reused the first one's connection
