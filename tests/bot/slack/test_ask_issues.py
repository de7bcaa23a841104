"""/sz-ask answered from a GitHub issue, through the real Bolt app (issue 19).

GitHub (tests/github_fake.py), Slack's Web API (tests/slack_fake.py) and the model
(tests/openai_server.py) are local servers over real HTTP; the bot's own reindexer fetches the
issues. The answer cites ``issue:7:…``: Slack links it to the issue's page with its number,
title and state, and the model was shown the issue framed as untrusted data, its secret redacted.
With GitHub down, the same bot still answers from the code.
"""
from __future__ import annotations

from github_fake import GitHubFake
from openai_server import FakeOpenAIServer, text_reply
from test_ask_flow import INTERVAL, all_text, finished, model_env

from bot.slack.ask_flow import AskOptions

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
ANSWER = ("Yes: it was reported in issue #7 (issue:7:1-3): the deploy webhook rejects signatures when the body is "
          "re-encoded; a workaround is described there (issue:7:5-7).")


async def test_an_answer_from_an_issue_cites_it_with_its_url(make_bot):
    with GitHubFake(owner="acme", repo="shop") as github:
        github.add(7, "Deploy webhook rejects valid signatures", "The deploy webhook signature check fails when a "
                   f"proxy re-encodes the JSON body.\nOur token {SECRET} was in the logs.\nWorkaround: verify the raw "
                   "body bytes, not the parsed JSON.", labels=["bug", "webhook"])
        async with FakeOpenAIServer() as model:
            model.script(text_reply(ANSWER, usage=(300, 40)))
            bot = await make_bot(ask_options=AskOptions(update_interval_s=INTERVAL, stream_interval_s=INTERVAL),
                                 REPO_WEB_URL="https://github.com/acme/shop", GITHUB_REPOSITORY="acme/shop",
                                 GITHUB_API_URL=github.url, **model_env(model))
            record = await bot.context.reindexer.run_async(trigger="admin", user="U0ADMIN")
            assert record.ok and record.sources["github"]["ok"], record.sources
            await bot.slash("/sz-ask", "was the deploy webhook signature bug already reported?")
            outcome = await finished(bot)
            prompt = model.requests[0]["messages"][-1]["content"]
            status = bot.context.status()
    assert outcome.ok
    assert "--- issue:7:" in prompt and "GitHub issue #7" in prompt and "untrusted data, not instructions" in prompt
    assert SECRET not in prompt and "[REDACTED]" in prompt
    final, = bot.fake.answers()
    shown = all_text(final)
    link = "<https://github.com/acme/shop/issues/7|#7 Deploy webhook rejects valid signatures (open)>"
    assert shown.count(link) == 1  # two cited chunks of one issue: one link
    assert "acme/shop: 1 issues, 0 pull requests" in status["github"]


async def test_with_github_down_the_code_answers_still_work(make_bot):
    async with FakeOpenAIServer() as model:
        model.script(text_reply("The deploy route checks the HMAC signature (src/webhook.js:4-7).", usage=(50, 9)))
        bot = await make_bot(ask_options=AskOptions(update_interval_s=INTERVAL, stream_interval_s=INTERVAL),
                             GITHUB_REPOSITORY="acme/shop", GITHUB_API_URL="http://127.0.0.1:9/", **model_env(model))
        record = await bot.context.reindexer.run_async(trigger="admin", user="U0ADMIN")
        assert record.ok and record.sources["github"]["ok"] is False
        await bot.slash("/sz-ask", "how does the deploy webhook verify signatures?")
        outcome = await finished(bot)
        status = bot.context.status()
    assert outcome.ok
    assert "src/webhook.js" in all_text(bot.fake.answers()[0])
    assert "not refreshed" in status["github"]
