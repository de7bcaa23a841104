"""/sz-ask in Slack, end to end: the real app over HTTP, the Web API recorder, a local model server.

Each test drives the app bound on 127.0.0.1 (conftest ``make_bot``) with signed
requests and asserts on the Web API calls tests/slack_fake.py recorded: the
progress message, its coalesced updates, the streamed thread reply, the final
Block Kit answer, and every failure path. Intervals are shortened through
``AskOptions`` (the flow's own knob), never by patching the code under test.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from urllib.parse import urlencode

import pytest
from openai_server import FakeOpenAIServer, error_reply, hang_reply, text_reply, tool_reply
from slack_fake import ADMIN, STREAM_METHODS, USER

from bot.slack.ask_flow import AskOptions
from bot.slack.guards import DuplicateFilter, RateLimiter
from bot.slack.render import MAX_PAGES
from bot.slack.stream import Coalescer

INTERVAL = 0.2
QUESTION = "how does the deploy webhook verify signatures?"
ZWSP = "\u200b"


def model_env(server: FakeOpenAIServer, **extra: str) -> dict:
    return {"AI_URL": server.base_url, "AI_API_KEY": "sk-test-key", "AI_MODEL": "fake-model", **extra}


@pytest.fixture
def ask_bot(make_bot):
    """``await ask_bot(**env)``: the real app with the flow's intervals shortened to INTERVAL."""

    async def start(**env):
        return await make_bot(ask_options=AskOptions(update_interval_s=INTERVAL, stream_interval_s=INTERVAL), **env)

    return start


async def finished(bot, count: int = 1, *, timeout: float = 20.0):
    """Wait until ``count`` questions went through the flow; returns the newest outcome."""
    deadline = time.monotonic() + timeout
    while len(bot.ask_flow.completed) < count:
        assert time.monotonic() < deadline, f"calls so far: {bot.fake.methods()}"
        await asyncio.sleep(0.02)
    return bot.ask_flow.completed[-1]


def slack_calls(bot) -> list:
    return [c for c in bot.fake.calls if c.method.startswith(("chat.", "files.")) or c.method == "upload"]


def all_text(call) -> str:
    return call.body.get("text", "") + "\n" + json.dumps(call.body.get("blocks", []), ensure_ascii=False)


def streamed_text(bot) -> str:
    """The Markdown the stream carried (chunks of startStream, appendStream and stopStream)."""
    out = []
    for call in bot.fake.calls:
        if call.method in STREAM_METHODS:
            out += [chunk["text"] for chunk in call.body.get("chunks") or [] if chunk.get("type") == "markdown_text"]
            out.append(call.body.get("markdown_text") or "")
    return "".join(out)


def sections(blocks: list[dict]) -> list[str]:
    return [b["text"]["text"] for b in blocks if b["type"] == "section"]


def assert_spaced(calls, interval: float) -> None:
    """Consecutive calls reached Slack at least ``interval`` apart (10 % slack for clocks)."""
    for before, after in zip(calls, calls[1:]):
        assert after.at - before.at >= interval * 0.9, [round(c.at - calls[0].at, 3) for c in calls]


# -- the full sequence --------------------------------------------------------------------------

async def test_one_ask_posts_progress_streams_then_renders_the_final_blocks(ask_bot):
    answer = ("The webhook computes an HMAC of the body and compares it in constant time "
              "(src/webhook.js:4-7).\n\n```js\nconst ok = verifySignature(body, header, secret);\n```\n"
              "The **secret** comes from `DEPLOY_SECRET`.")
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=12, usage=(120, 30), gap_s=0.1))
        bot = await ask_bot(**model_env(model), REPO_WEB_URL="https://github.com/acme/shop")
        response = await bot.slash("/sz-ask", QUESTION)
        assert response.status == 200 and response.seconds < 3.0 and "Working on" in response.body
        outcome = await finished(bot)
    calls = slack_calls(bot)
    methods = [c.method for c in calls]
    assert methods[0] == "chat.postMessage"
    post = calls[0]
    anchor = outcome.anchor_ts
    assert post.body["channel"] == "C0CHANNEL" and post.body["unfurl_links"] is False
    assert ":mag: Searching *repo* for your question" in post.body["text"] and QUESTION not in post.body["text"]
    assert f"<@{USER}> asked: _{QUESTION}_" in all_text(post)  # in Slack the asker sees the question

    # the stream: a thread reply to the progress message, addressed to the asker
    start, = [c for c in calls if c.method == "chat.startStream"]
    appends = [c for c in calls if c.method == "chat.appendStream"]
    stop, = [c for c in calls if c.method == "chat.stopStream"]
    assert (start.body["thread_ts"], start.body["recipient_user_id"], start.body["recipient_team_id"]) == \
        (anchor, USER, "T0TEAM")
    assert methods.index("chat.startStream") < methods.index("chat.stopStream")
    assert all(calls.index(a) < calls.index(stop) for a in appends) and appends  # streamed in several steps
    assert streamed_text(bot) == answer
    assert_spaced([start, *appends], INTERVAL)

    # progress: coalesced updates of the channel message, bounded by the interval
    updates = [c for c in calls if c.method == "chat.update" and c.body["ts"] == anchor]
    elapsed = calls[-1].at - post.at
    assert 2 <= len(updates) <= elapsed / INTERVAL + 1, (len(updates), elapsed)
    assert_spaced([post, *updates], INTERVAL)  # the post counts: the first update waits too
    progress = "\n".join(all_text(u) for u in updates)
    assert re.search(r"Found \d+ sources in \d+ files: `src/webhook\.js:L1-L\d+`", progress)
    assert "Packed" in progress and "Asking fake-model" in progress
    assert "Writing the answer in the thread" in progress
    assert "Answered in the thread" in all_text(updates[-1]) and "150 tokens" in all_text(updates[-1])

    # the final Block Kit answer replaces the streamed reply, after the stream stopped
    final, = [c for c in calls if c.method == "chat.update" and c.body["ts"] == outcome.final_ts]
    assert outcome.mode == "stream" and outcome.final_ts == stop.body["ts"] != anchor
    assert calls.index(stop) < calls.index(final) < calls.index(updates[-1])
    blocks = final.body["blocks"]
    assert blocks[0]["type"] == "context" and f"<@{USER}> asked" in blocks[0]["elements"][0]["text"]
    body = "\n".join(sections(blocks))
    assert "*secret*" in body and "```\nconst ok = verifySignature(body, header, secret);\n```" in body
    sources = next(b["elements"][0]["text"] for b in blocks if b["type"] == "context"
                   and "*Sources:*" in b["elements"][0]["text"])
    assert "<https://github.com/acme/shop/blob/HEAD/src/webhook.js#L1-L" in sources
    assert "|src/webhook.js:L1-L" in sources
    footer = blocks[-2]["elements"][0]["text"]
    assert "`fake-model`" in footer and "150 tokens" in footer and re.search(r"\d+\.\d s", footer)
    actions = blocks[-1]
    assert [(e["action_id"], e["value"]) for e in actions["elements"]] == \
        [("sz_feedback_up", outcome.answer_id), ("sz_feedback_down", outcome.answer_id)]
    assert final.body["unfurl_links"] is False and final.body["unfurl_media"] is False
    assert bot.context.metrics()["asks"] == {"total": 1, "failed": 0, "declined": 0}


async def test_tool_calls_show_in_the_progress_with_their_duration(ask_bot):
    async with FakeOpenAIServer() as model:
        model.script(tool_reply([("getStatus", "{}")]), text_reply("The bot is up (live status)."))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", "is the bot healthy right now?")
        await finished(bot)
    progress = "\n".join(all_text(c) for c in bot.fake.of("chat.update"))
    assert re.search(r":wrench: `getStatus` \d+ ms", progress)
    done = all_text(bot.fake.of("chat.update")[-1])  # every round and tool stays listed at the end
    assert "fake-model asked for 1 tool call(s)" in done and "fake-model answered" in done
    assert re.search(r"`getStatus` \d+ ms", done)


async def test_streaming_refused_falls_back_to_updating_in_place(ask_bot):
    answer = "First part of the answer. " * 10 + "\n\nSecond part, still streaming. " * 10
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=10, usage=(50, 20), gap_s=0.1))
        bot = await ask_bot(**model_env(model))
        bot.fake.refuse_streaming()
        await bot.slash("/sz-ask", QUESTION)
        outcome = await finished(bot)
    calls = slack_calls(bot)
    assert [c.method for c in calls if c.method in STREAM_METHODS] == ["chat.startStream"]  # tried once
    assert outcome.mode == "in_place" and outcome.final_ts == outcome.anchor_ts and not outcome.streamed
    updates = [c for c in calls if c.method == "chat.update"]
    assert all(u.body["ts"] == outcome.anchor_ts for u in updates)
    partial = [u for u in updates if "First part of the answer" in all_text(u) and u is not updates[-1]]
    assert partial, "the answer so far is shown in the progress message while it streams"
    elapsed = updates[-1].at - calls[0].at
    assert len(updates) <= elapsed / INTERVAL + 1
    assert_spaced([calls[0], *updates], INTERVAL)
    assert bot.fake.answers() == [updates[-1]] and "Second part, still streaming." in all_text(updates[-1])


async def test_a_20000_character_answer_with_three_code_blocks_renders_valid_blocks(ask_bot):
    code = "\n".join(f"  const value{i} = compute({i}, 'x'.repeat({i}));" for i in range(60))
    prose = "\n\n".join(f"Paragraph {i}: " + "the router matches each layer in order. " * 8 for i in range(8))
    answer = "\n\n".join(f"{prose}\n\n```js\n{code}\n```" for _ in range(3))
    answer = (answer + "\n\n" + prose + "\n\n" + prose)[:20_000]
    assert len(answer) == 20_000 and answer.count("```") == 6
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=40, usage=(900, 5000)))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", "walk me through the router")
        await finished(bot)
    final, = bot.fake.answers()
    outcome = bot.ask_flow.completed[-1]
    pages = [final, *[c for c in bot.fake.of("chat.postMessage") if c.body.get("thread_ts") == outcome.thread_ts]]
    assert len(pages) == outcome.pages >= 2  # paginated: one message's blocks hold at most 12,000 characters
    texts = [text for page in pages for text in sections(page.body["blocks"])]
    assert all(len(page.body["blocks"]) <= 50 for page in pages) and len(texts) >= 7
    for text in texts:
        assert len(text) <= 3000 and text.count("```") % 2 == 0, text[-80:]
    for line in code.splitlines():  # every code line is inside a fence, intact
        assert any(_inside_fence(text, line) for text in texts), line
    assert not bot.fake.of("files.getUploadURLExternal")


def _inside_fence(text: str, line: str) -> bool:
    inside = False
    for row in text.split("\n"):
        if row.startswith("```"):
            inside = not inside
        elif row == line:
            return inside
    return False


async def test_an_answer_beyond_the_page_limit_uploads_the_rest_as_a_snippet(ask_bot):
    answer = "\n\n".join(f"Section {i}. " + "Words about the index and its updates. " * 60 for i in range(75))
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=20))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", "tell me everything")
        outcome = await finished(bot, timeout=60)
    final, = bot.fake.answers()
    pages = [final, *[c for c in bot.fake.of("chat.postMessage") if c.body.get("thread_ts") == outcome.thread_ts]]
    assert len(pages) == MAX_PAGES == outcome.pages and "rest is attached" in all_text(final)
    get_url, = bot.fake.of("files.getUploadURLExternal")
    upload, = bot.fake.of("upload")
    complete, = bot.fake.of("files.completeUploadExternal")
    assert complete.body["channel_id"] == "C0CHANNEL" and complete.body["thread_ts"] == outcome.anchor_ts
    assert get_url.body["filename"] == f"answer-{outcome.answer_id}.md"
    shown = "\n".join(text for page in pages for text in sections(page.body["blocks"]))
    numbers = [int(n) for n in re.findall(r"Section (\d+)\.", shown)]
    assert numbers == list(range(len(numbers)))
    snippet = upload.body["content"]
    assert 40 < numbers[-1] < 74 and snippet.lstrip().startswith(f"Section {numbers[-1] + 1}. ")
    assert snippet.rstrip().endswith("Section 74. " + "Words about the index and its updates. " * 59
                                     + "Words about the index and its updates.")
    assert upload.body["bytes"] == len(snippet.encode())


# -- safety ---------------------------------------------------------------------------------------

async def test_broadcasts_and_mentions_from_the_model_are_neutralised(ask_bot):
    answer = ("Heads up <!channel> and <!here|here> and <!subteam^S0DEV|@devs>: ask <@U123> or @everyone. "
              "See <https://example.com/a?b=1|the docs> & check a<b.")
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=7))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", "who should I ping? <!here>")
        await finished(bot)
    final, = bot.fake.answers()
    everything = "\n".join(all_text(c) for c in slack_calls(bot)) + streamed_text(bot)
    for needle in ("<!channel>", "<!here", "<!subteam", "<@U123>", " @everyone", " @here"):
        assert needle not in everything, needle
    shown = all_text(final)
    assert f"@{ZWSP}channel" in shown and f"@{ZWSP}devs" in shown and f"@{ZWSP}U123" in shown
    assert "<https://example.com/a?b=1|the docs>" in shown and "&amp; check a&lt;b" in shown
    assert f"<@{USER}> asked" in shown  # our own heading still names the asker


# -- retries, duplicates, rate limit ---------------------------------------------------------------

async def test_a_retry_and_a_duplicate_delivery_produce_one_answer(ask_bot):
    bot = await ask_bot()
    body = urlencode(bot.form("/sz-ask", "where is the deploy webhook?"))
    first = await bot.post_signed(body)
    again = await bot.post_signed(body)  # the same delivery twice (same trigger_id)
    retry = await bot.post_signed(body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    typed_twice = await bot.slash("/sz-ask", "where is the  deploy webhook?")  # new trigger, same question
    assert [r.status for r in (first, again, retry, typed_twice)] == [200] * 4
    assert "Working on" in first.body and again.body == "" and retry.body == ""
    assert "answering it once" in json.loads(typed_twice.body)["text"]
    await finished(bot)
    await asyncio.sleep(0.5)
    assert len(bot.fake.of("chat.postMessage")) == 1 and len(bot.fake.answers()) == 1
    assert bot.context.metrics()["asks"]["total"] == 1


async def test_the_seventh_ask_in_a_minute_is_told_when_to_retry(ask_bot):
    bot = await ask_bot()
    responses = [await bot.slash("/sz-ask", f"question number {i} about the webhook") for i in range(7)]
    assert all("Working on" in r.body for r in responses[:6])
    refusal = json.loads(responses[6].body)
    assert refusal["response_type"] == "ephemeral"
    seconds = int(re.search(r"try again in (\d+) seconds", refusal["text"]).group(1))
    assert 50 <= seconds <= 60 and "6 questions in the last minute" in refusal["text"]
    assert "Working on" in (await bot.slash("/sz-ask", "another one", user_id=ADMIN)).body
    await finished(bot, 7)
    assert len(bot.fake.of("chat.postMessage")) == 7  # six for USER, one for ADMIN


# -- failures are visible, with what still worked -------------------------------------------------

async def test_the_final_answer_links_only_what_it_cites_and_nothing_when_it_declines(ask_bot):
    async with FakeOpenAIServer() as model:
        model.script(text_reply("Signatures: an HMAC compared in constant time (src/webhook.js:4-7)."),
                     text_reply("This is not documented in the repository."))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", QUESTION)
        await finished(bot)
        await bot.slash("/sz-ask", "how does the deploy webhook retry a failed signature check?")
        await finished(bot, 2)
    cited, declined = bot.fake.answers()

    def sources_line(call) -> str:
        return next(b["elements"][0]["text"] for b in call.body["blocks"] if b["type"] == "context"
                    and ("*Sources:*" in b["elements"][0]["text"] or "searched" in b["elements"][0]["text"]))
    assert "src/webhook.js:L" in sources_line(cited)
    assert "README.md" not in sources_line(cited) and "server.js" not in sources_line(cited)
    assert re.fullmatch(r"_None of the \d+ excerpts? searched answers this\._", sources_line(declined))
    assert bot.context.metrics()["asks"] == {"total": 2, "failed": 0, "declined": 1}
    exposition = bot.context.runtime.metrics.prometheus_text().decode()
    assert 'slackzilla_asks_total{result="declined"} 1.0' in exposition
    assert 'slackzilla_asks_total{result="ok"} 1.0' in exposition


async def test_model_down_shows_the_reason_and_the_sources(ask_bot):
    async with FakeOpenAIServer() as model:
        model.script(error_reply(500, "upstream exploded"), error_reply(500, "upstream exploded"))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", QUESTION)
        outcome = await finished(bot)
    final, = bot.fake.answers()
    shown = all_text(final)
    assert outcome.ok is False and ":warning:" in shown and "HTTP 500" in shown
    assert "`src/webhook.js:L1-L" in shown and "*Sources:*" in shown
    assert "Traceback" not in "\n".join(all_text(c) for c in slack_calls(bot))


async def test_model_timeout_shows_the_reason_and_the_sources(ask_bot):
    async with FakeOpenAIServer() as model:
        model.script(hang_reply(30))
        bot = await ask_bot(**model_env(model, AI_TIMEOUT_S="1"))
        started = time.monotonic()
        await bot.slash("/sz-ask", QUESTION)
        await finished(bot)
        assert time.monotonic() - started < 5
    final, = bot.fake.answers()
    shown = all_text(final)
    assert ":warning:" in shown and "did not finish within 1 s" in shown and "`src/webhook.js:L1-L" in shown


async def test_no_index_yet_is_said_in_the_progress_message(ask_bot):
    bot = await ask_bot(index=False)
    await bot.slash("/sz-ask", QUESTION)
    outcome = await finished(bot)
    last = bot.fake.of("chat.update")[-1]
    assert last.body["ts"] == outcome.anchor_ts and last.body["text"].startswith(":warning:")
    assert "index" in last.body["text"].lower() and outcome.error == "refused"


async def test_a_crashing_answer_is_said_and_captured_without_its_message(ask_bot, monkeypatch):
    bot = await ask_bot()

    async def boom(*args, **kwargs):
        raise RuntimeError("secret question text")

    monkeypatch.setattr(bot.ask_flow.asker, "answer", boom)
    await bot.slash("/sz-ask", QUESTION)
    outcome = await finished(bot)
    last = bot.fake.of("chat.update")[-1]
    assert last.body["ts"] == outcome.anchor_ts and outcome.error == "crashed"
    assert "Sorry, /sz-ask failed unexpectedly. The error has been logged." in last.body["text"]
    captured, = bot.context.errors(limit=5)
    assert captured["command"] == "ask" and "secret question text" not in captured["message"]
    assert bot.context.metrics()["commands"]["ask"]["failed"] == 1


async def test_slack_refusing_the_final_message_still_answers_visibly(ask_bot):
    bot = await ask_bot()
    bot.fake.refuse_streaming()
    bot.fake.fail["chat.update"] = "msg_too_long"
    await bot.slash("/sz-ask", QUESTION)
    outcome = await finished(bot)
    assert outcome.mode == "reply"
    reply = bot.fake.of("chat.postMessage")[-1]
    assert reply.body["thread_ts"] == outcome.anchor_ts and "`src/webhook.js:L1-L" in all_text(reply)
    # and when the bot may not post at all, the answer goes through response_url
    bot.fake.clear()
    bot.fake.fail["chat.postMessage"] = "not_in_channel"
    await bot.slash("/sz-ask", "deploy webhook signature")
    outcome = await finished(bot, 2)
    reply, = bot.fake.of("response_url")
    assert outcome.mode == "respond" and reply.body["response_type"] == "in_channel"
    assert "src/webhook.js" in all_text(reply)


# -- feedback and follow-ups ----------------------------------------------------------------------

async def test_feedback_clicks_are_acked_recorded_and_counted(ask_bot):
    bot = await ask_bot()
    await bot.slash("/sz-ask", QUESTION)
    outcome = await finished(bot)
    clicks = [await bot.click("sz_feedback_up", outcome.answer_id, user_id=USER),
              await bot.click("sz_feedback_down", outcome.answer_id, user_id=ADMIN),
              await bot.click("sz_feedback_up", outcome.answer_id, user_id=USER)]  # the same vote again
    assert all(c.status == 200 and c.seconds < 3 for c in clicks)
    votes = {(v.user_id, v.answer_id, v.vote) for v in bot.context.feedback.entries()}
    assert votes == {(USER, outcome.answer_id, "up"), (ADMIN, outcome.answer_id, "down")}
    vote = bot.context.feedback.entries(limit=1)[0]  # the answer's question length, sources, model: no text
    assert vote.question_chars == len(QUESTION) and "src/webhook.js" in vote.sources
    assert QUESTION not in repr(vote.to_json())
    async with bot.session.get(f"{bot.base_url}/api/metrics") as response:
        assert (await response.json())["feedback"] == {"up": 1, "down": 1}
    async with bot.session.get(f"{bot.base_url}/metrics") as response:
        prometheus = await response.text()
    assert 'slackzilla_feedback_total{vote="up"} 1.0' in prometheus
    assert 'slackzilla_feedback_current{vote="down"} 1.0' in prometheus
    thanks = await bot.fake.wait_for(lambda cs: len([c for c in cs if c.method == "response_url"]) >= 3)
    assert all(c.body["response_type"] == "ephemeral" for c in thanks if c.method == "response_url")


async def test_a_mention_in_the_answer_thread_is_answered_there_with_the_history(ask_bot):
    async with FakeOpenAIServer() as model:
        model.script(text_reply("It uses an HMAC (src/webhook.js:4-7)."),
                     text_reply("The secret comes from DEPLOY_SECRET (src/server.js:6)."))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", QUESTION)
        first = await finished(bot)
        bot.fake.clear()
        response = await bot.mention("and where does the secret come from?", thread_ts=first.anchor_ts)
        assert response.status == 200
        retried = await bot.mention("and where does the secret come from?", thread_ts=first.anchor_ts,
                                    headers={"X-Slack-Retry-Num": "1"})
        assert retried.status == 200
        second = await finished(bot, 2)
        await asyncio.sleep(0.3)
        assert len(model.requests) == 2  # the retry was not answered
        history = [m for m in model.requests[1]["messages"] if m["role"] in ("user", "assistant")]
    assert history[0] == {"role": "user", "content": QUESTION}
    assert history[1] == {"role": "assistant", "content": "It uses an HMAC (src/webhook.js:4-7)."}
    assert "where does the secret come from?" in history[-1]["content"]
    post, = bot.fake.of("chat.postMessage")
    start, = bot.fake.of("chat.startStream")
    assert post.body["thread_ts"] == start.body["thread_ts"] == first.anchor_ts == second.thread_ts
    assert "for your follow-up" in post.body["text"]
    final, = bot.fake.answers()
    assert "DEPLOY_SECRET" in all_text(final)


# -- the building blocks ----------------------------------------------------------------------------

async def test_the_coalescer_keeps_the_latest_state_and_spaces_sends():
    sent: list[tuple[float, int]] = []

    async def send(state: int) -> None:
        sent.append((time.monotonic(), state))

    started = time.monotonic()
    coalescer = Coalescer(send, interval_s=0.1)
    for state in range(40):
        coalescer.submit(state)
        await asyncio.sleep(0.01)
    assert await coalescer.aclose(999)
    elapsed = time.monotonic() - started
    assert sent[0][1] == 0 and sent[0][0] - started < 0.05 and sent[-1][1] == 999  # first at once, final last
    assert len(sent) <= elapsed / 0.1 + 2
    assert all(b[0] - a[0] >= 0.09 for a, b in zip(sent, sent[1:]))
    coalescer.submit(1000)  # closed: ignored
    await asyncio.sleep(0.05)
    assert sent[-1][1] == 999
    held = Coalescer(send, interval_s=0.2, just_sent=True)  # a message just posted: wait before the first edit
    held_from = time.monotonic()
    held.submit(1)
    await held.aclose()
    assert sent[-1][1] == 1 and sent[-1][0] - held_from >= 0.18


async def test_the_coalescer_survives_a_failing_send_and_reports_it():
    calls = []

    async def send(state: int) -> None:
        calls.append(state)
        if state == 1:
            raise RuntimeError("slack down")

    coalescer = Coalescer(send, interval_s=0)
    coalescer.submit(1)
    await coalescer.flush()
    assert coalescer.failures == 1 and isinstance(coalescer.last_error, RuntimeError)
    assert await coalescer.aclose(2) is True  # the last send worked
    assert calls == [1, 2]


async def test_a_coalescer_cancelled_while_it_waits_sends_nothing():
    calls = []

    async def send(state: int) -> None:
        calls.append(state)

    coalescer = Coalescer(send, interval_s=0.2, just_sent=True)  # the first state waits 0.2 s
    coalescer.submit(1)
    await asyncio.sleep(0.05)
    coalescer.cancel()  # the answer is ready: the pending progress state must not be sent
    await coalescer.flush()
    assert calls == [] and coalescer.failures == 0 and coalescer.sent == 0


def test_rate_limiter_window_and_retry_time():
    now = [1000.0]
    limiter = RateLimiter(6, clock=lambda: now[0])
    for step in range(6):
        assert limiter.hit("U1").allowed
        now[0] += 5
    refused = limiter.hit("U1")
    assert not refused.allowed and refused.retry_after_s == 30  # the first ask was 30 s ago
    assert limiter.hit("U2").allowed  # per user
    now[0] += 30
    assert limiter.hit("U1").allowed
    assert RateLimiter(0).hit("U1").allowed  # 0 turns the limit off
    with pytest.raises(ValueError):
        RateLimiter(-1)


def test_duplicate_filter_forgets_after_its_window():
    now = [0.0]
    duplicates = DuplicateFilter(window_s=10, clock=lambda: now[0])
    assert duplicates.check(("q", "U1", "hello")) is None
    now[0] = 4
    assert duplicates.check(("q", "U1", "hello")) == 4
    now[0] = 11
    assert duplicates.check(("q", "U1", "hello")) is None


async def test_shutdown_tells_the_asker_instead_of_leaving_searching_behind(ask_bot):
    async with FakeOpenAIServer() as model:
        model.script(hang_reply(30))
        bot = await ask_bot(**model_env(model, AI_TIMEOUT_S="20"))
        await bot.slash("/sz-ask", QUESTION)
        await bot.fake.wait_for("chat.postMessage")
        await asyncio.sleep(0.3)  # the answer is now waiting on the model
        cancelled = await bot.ask_flow.drain(timeout_s=0.2)
    assert cancelled == 1
    last = bot.fake.of("chat.update")[-1]
    assert "restarted before it could finish" in last.body["text"]
