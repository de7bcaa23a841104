"""Slack delivery under faults and load (issue 13), end to end: the real app over HTTP with signed
requests, the Web API recorder scripted to fail (tests/slack_fake.py: 429 with Retry-After, 500,
``ok: false``, ``response_url`` 404/500) and the local OpenAI-compatible SSE server for answers.

Each test asserts on the Web API calls the recorder received: every step of a delivery is
checked, retried by slack-sdk's retry handlers after Retry-After, and falls back in order
(bot.slack.delivery); progress is shed before answers wait (bot.slack.budget); an answer goes
out exactly once, paginated within Slack's limits, with fences that hold.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import pytest
from openai_server import FakeOpenAIServer, text_reply
from slack_fake import STREAM_METHODS, USER, rate_limited, server_error

from bot.slack.ask_flow import AskOptions

INTERVAL = 0.2
QUESTION = "how does the deploy webhook verify signatures?"
ZWSP = "\u200b"
#: Slack's documented limits (Block Kit reference, chat.postMessage): what every message must keep.
MAX_BLOCKS, MAX_SECTION, MAX_TEXT = 50, 3000, 40_000
#: msg_blocks_too_long starts at about 13,200 characters of block text (slackapi/bolt-js#2509).
MAX_BLOCK_TEXT = 13_000


def model_env(server: FakeOpenAIServer, **extra: str) -> dict:
    return {"AI_URL": server.base_url, "AI_API_KEY": "sk-test-key", "AI_MODEL": "fake-model", **extra}


@pytest.fixture
def ask_bot(make_bot):
    async def start(**env):  # the flow's intervals shortened; Slack's own rate limits (the default budget)
        return await make_bot(ask_options=AskOptions(update_interval_s=INTERVAL, stream_interval_s=INTERVAL), **env)

    return start




def all_text(call) -> str:
    return str(call.body.get("text", "")) + "\n" + json.dumps(call.body.get("blocks", []), ensure_ascii=False)


def sections(call) -> list[str]:
    return [b["text"]["text"] for b in call.body.get("blocks") or [] if b.get("type") == "section"]


def streamed_text(bot) -> str:
    out = []
    for call in bot.fake.calls:
        if call.method in STREAM_METHODS:
            out += [chunk["text"] for chunk in call.body.get("chunks") or [] if chunk.get("type") == "markdown_text"]
            out.append(call.body.get("markdown_text") or "")
    return "".join(out)


def posts_and_updates(bot) -> list:
    return [c for c in bot.fake.calls if c.method in ("chat.postMessage", "chat.update", "response_url",
                                                       "chat.postEphemeral")]


def block_chars(call) -> int:
    """Characters of text inside the blocks (what Slack's msg_blocks_too_long counts)."""
    total = 0
    for block in call.body.get("blocks") or []:
        if block.get("type") == "section":
            total += len(block["text"]["text"])
        elif block.get("type") == "context":
            total += sum(len(e.get("text", "")) for e in block["elements"])
    return total


def assert_valid_message(call) -> None:
    """Within Slack's limits: ≤ 50 blocks, section text ≤ 3,000, text ≤ 40,000, block text ≤ 13,000,
    and balanced fences in every section."""
    blocks = call.body.get("blocks") or []
    assert len(blocks) <= MAX_BLOCKS, len(blocks)
    assert len(call.body.get("text") or "") <= MAX_TEXT
    assert block_chars(call) <= MAX_BLOCK_TEXT, block_chars(call)
    for text in sections(call):
        assert len(text) <= MAX_SECTION and text.count("```") % 2 == 0, text[-120:]


# -- every step checked, retried after Retry-After ------------------------------------------------

@pytest.mark.parametrize("fault", [rate_limited(retry_after=1), server_error(500)], ids=["429", "500"])
async def test_a_transient_fault_on_the_progress_post_is_retried_and_keeps_progress_and_stream(ask_bot, fault):
    answer = "The webhook compares an HMAC of the body in constant time (src/webhook.js:4-7). " * 3
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=6, usage=(50, 20), gap_s=0.1))
        bot = await ask_bot(**model_env(model))
        bot.fake.script("chat.postMessage", fault)
        await bot.slash("/sz-ask", QUESTION)
        outcome = await bot.answered()
    first, second = bot.fake.of("chat.postMessage")[:2]
    if fault.status == 429:  # slack-sdk's RateLimitErrorRetryHandler waited Retry-After (+ jitter)
        assert second.at - first.at >= 1.0, second.at - first.at
    assert first.body["text"] == second.body["text"]  # the same progress message, once it went through
    assert outcome.anchor_ts and outcome.streamed and outcome.mode == "stream" and outcome.delivered
    assert streamed_text(bot) == answer
    assert [c.method for c in bot.fake.calls].count("response_url") == 0  # no fallback path
    assert len(bot.fake.answers()) == 1


async def test_a_failed_stream_append_goes_with_the_next_one_and_keeps_the_stream(ask_bot):
    answer = "First the body is read, then its HMAC is compared in constant time (src/webhook.js:4-7). " * 4
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=12, usage=(50, 20), gap_s=0.1))
        bot = await ask_bot(**model_env(model))
        bot.fake.script("chat.appendStream", server_error(500))
        await bot.slash("/sz-ask", QUESTION)
        outcome = await bot.answered()
    appends = bot.fake.of("chat.appendStream")
    assert len(appends) >= 2 and appends[0].reply == {}  # the first append failed ...
    assert outcome.streamed and outcome.mode == "stream"  # ... and the answer stayed in the stream
    delivered = [c for c in bot.fake.calls if c.method in STREAM_METHODS and c.reply.get("ok")]
    sent = "".join([chunk["text"] for c in delivered for chunk in c.body.get("chunks") or []
                    if chunk.get("type") == "markdown_text"] + [c.body.get("markdown_text") or "" for c in delivered])
    assert sent == answer  # nothing lost, nothing twice


async def test_retry_after_on_a_progress_update_pauses_that_method(ask_bot):
    answer = "Signatures are checked with an HMAC (src/webhook.js:4-7). " * 4
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=20, usage=(50, 20), gap_s=0.15))
        bot = await ask_bot(**model_env(model))
        bot.fake.refuse_streaming()  # every state of the answer is a chat.update
        bot.fake.script("chat.update", rate_limited(retry_after=2))
        await bot.slash("/sz-ask", QUESTION)
        outcome = await bot.answered()
    limited, *rest = bot.fake.of("chat.update")
    assert rest and rest[0].at - limited.at >= 2.0, [round(c.at - limited.at, 2) for c in rest]
    assert outcome.delivered and outcome.mode == "in_place" and len(bot.fake.answers()) == 1
    assert "Signatures are checked" in all_text(bot.fake.answers()[0])


async def test_persistent_update_failures_give_one_copy_and_no_stale_searching(ask_bot):
    answer = "It verifies an HMAC of the body (src/webhook.js:4-7) with crypto.timingSafeEqual."
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=5, usage=(50, 20), gap_s=0.1))
        bot = await ask_bot(**model_env(model))
        bot.fake.fail_status["chat.update"] = 500  # retried by the handlers, failing every time
        await bot.slash("/sz-ask", QUESTION)
        outcome = await bot.answered()
    assert streamed_text(bot) == answer  # the stream carried the answer ...
    copies = [c for c in bot.fake.calls if c.method in ("chat.postMessage", "response_url", "chat.postEphemeral")
              and "timingSafeEqual" in all_text(c) and c.reply.get("ok")]
    assert copies == []  # ... and nothing posted it a second time
    deleted = [c.body["ts"] for c in bot.fake.of("chat.delete")]
    assert deleted == [outcome.anchor_ts]  # "Searching…" could not be edited: it is gone
    assert outcome.delivered and outcome.mode == "stream"


async def test_updates_failing_without_a_stream_post_the_answer_once_and_remove_searching(ask_bot):
    answer = "It verifies an HMAC of the body (src/webhook.js:4-7) with crypto.timingSafeEqual."
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=5, usage=(50, 20), gap_s=0.1))
        bot = await ask_bot(**model_env(model))
        bot.fake.refuse_streaming()
        bot.fake.fail["chat.update"] = "cant_update_message"
        await bot.slash("/sz-ask", QUESTION)
        outcome = await bot.answered()
    copies = [c for c in posts_and_updates(bot) if "timingSafeEqual" in all_text(c) and c.reply.get("ok")]
    assert [c.method for c in copies] == ["chat.postMessage"] and bot.fake.of("chat.delete")
    assert bot.fake.of("chat.delete")[0].body["ts"] == outcome.anchor_ts
    assert outcome.delivered and outcome.mode == "reply"


async def test_response_url_404_after_a_refused_post_is_logged_as_a_failure_and_counted(ask_bot, caplog):
    bot = await ask_bot()
    for method in ("chat.postMessage", "chat.postEphemeral"):
        bot.fake.fail[method] = "not_in_channel"  # not in the channel, and no DM with the asker either
    bot.fake.fail_status["response_url"] = 404
    caplog.set_level(logging.INFO)
    await bot.slash("/sz-ask", QUESTION)
    outcome = await bot.answered()
    assert bot.fake.of("response_url")  # it was tried ...
    lines = [r.getMessage() for r in caplog.records if "ask" in r.getMessage() and "deliver" in r.getMessage()]
    assert not any("ok=True" in line for line in lines), lines  # ... and is not taken for a delivery
    assert outcome.mode == "lost" and outcome.delivered is False
    lost = [r for r in caplog.records if "not delivered" in r.getMessage()]
    assert lost and lost[0].levelno == logging.ERROR and "response_url" in lost[0].getMessage()
    assert QUESTION not in caplog.text
    exposition = bot.context.runtime.metrics.prometheus_text().decode()
    assert re.search(r'slackzilla_slack_answers_lost_total\{reason="[a-z_0-9]+"\} 1\.0', exposition), exposition
    assert 'slackzilla_slack_delivery_failures_total{reason="http_404",step="response_url"} 1.0' in exposition
    assert bot.context.metrics()["slack"]["answers_lost"] == 1


async def test_a_500_from_response_url_is_retried_then_falls_back_to_an_ephemeral_note(ask_bot):
    bot = await ask_bot()
    bot.fake.fail["chat.postMessage"] = "not_in_channel"
    bot.fake.fail_status["response_url"] = 500
    await bot.slash("/sz-ask", QUESTION)
    outcome = await bot.answered()
    assert len(bot.fake.of("response_url")) >= 2  # retried by ServerErrorRetryHandler
    ephemeral, = bot.fake.of("chat.postEphemeral")
    assert ephemeral.body["user"] == USER and "src/webhook.js" in all_text(ephemeral)
    assert outcome.delivered and outcome.mode == "ephemeral"


# -- the budget --------------------------------------------------------------------------------------

async def test_twenty_asks_stay_within_the_chat_update_budget_and_each_answer_goes_out_once(ask_bot):
    count = 20
    async with FakeOpenAIServer() as model:
        model.script(*[text_reply(f"Answer number {i}: the HMAC is checked (src/webhook.js:4-7). " * 3,
                                  pieces=15, usage=(50, 20), gap_s=0.1) for i in range(count)])
        bot = await ask_bot(**model_env(model, ASK_RATE_PER_MIN="0"))
        bot.fake.refuse_streaming()  # the heaviest case: every state of every answer is a chat.update
        started = time.monotonic()
        await asyncio.gather(*[bot.slash("/sz-ask", f"question {i} about the webhook signature", user_id=f"U{i:04d}")
                               for i in range(count)])
        await bot.answered(count, timeout=60)
        outcomes = list(bot.ask_flow.completed)
    elapsed = time.monotonic() - started
    updates = bot.fake.of("chat.update")
    allowed = 50 + 50 / 60 * elapsed + 1  # Tier 3: ~50 per minute, app-wide
    assert len(updates) <= allowed, (len(updates), round(elapsed, 1))
    answers = bot.fake.answers()
    for i in range(count):
        mine = [c for c in answers if f"Answer number {i}:" in all_text(c)]
        assert len(mine) == 1, (i, [c.method for c in mine])
    assert all(o.delivered for o in outcomes)
    for outcome in outcomes:  # no progress message left at "Searching…"
        last = [c for c in updates if c.body.get("ts") == outcome.anchor_ts][-1]
        assert "Searching" not in last.body["text"]
    shed = bot.context.metrics()["slack"]["shed"]
    assert shed.get("chat.update", 0) > 0


# -- long answers and fences ---------------------------------------------------------------------------

async def test_a_60000_character_answer_goes_out_as_several_valid_messages_carrying_all_the_text(ask_bot):
    code = "\n".join(f"  const value{i} = compute({i}, 'x'.repeat({i}));" for i in range(80))
    paragraph = "The router matches each layer in order and calls next() on a miss. " * 6
    parts, i = [], 0
    while sum(len(p) + 2 for p in parts) < 60_000:
        parts.append(f"Part {i}. {paragraph}" if i % 5 else f"```js\n{code}\n```")
        i += 1
    answer = "\n\n".join(parts)[:60_000]
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=60, usage=(900, 15000)))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", "walk me through the router")
        outcome = await bot.answered()
    continued = [c for c in bot.fake.of("chat.postMessage") if c.body.get("thread_ts") == outcome.thread_ts]
    pages = [outcome_final(bot, outcome), *continued]
    assert len(pages) >= 5, [c.method for c in pages]
    for page in pages:
        assert_valid_message(page)
        assert page.body["text"].strip()
    shown = "\n".join("\n".join(sections(p)) for p in pages)
    numbers = [int(n) for n in re.findall(r"Part (\d+)\. ", shown)]
    expected = [int(n) for n in re.findall(r"Part (\d+)\. ", answer)]
    assert numbers == expected  # every part, once, in order
    for line in code.splitlines():  # every code line whole, inside a fence
        assert line in shown.split("\n"), line
    assert not bot.fake.of("files.getUploadURLExternal")
    assert outcome.pages == len(pages)


def outcome_final(bot, outcome):
    return [c for c in bot.fake.of("chat.update") if c.body["ts"] == outcome.final_ts][-1]


async def test_the_plain_text_retry_after_invalid_blocks_carries_the_answer(ask_bot):
    answer = "The secret comes from DEPLOY_SECRET and the HMAC uses sha256 (src/webhook.js:4-7)."
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=4, usage=(50, 20)))
        bot = await ask_bot(**model_env(model))
        bot.fake.refuse_streaming()
        bot.fake.refuse_blocks["chat.update"] = "invalid_blocks"
        bot.fake.refuse_blocks["chat.postMessage"] = "invalid_blocks"
        await bot.mention("where does the secret come from?")
        outcome = await bot.answered()
    plain = [c for c in posts_and_updates(bot) if "blocks" not in c.body and "DEPLOY_SECRET" in c.body.get("text", "")]
    assert plain, [c.summary() for c in posts_and_updates(bot)]
    assert "src/webhook.js" in plain[-1].body["text"]  # the sources line too
    assert outcome.delivered


async def test_fences_with_backticks_inside_stay_one_code_block(ask_bot):
    answer = ("Use a template literal:\n\n"
              "```js\nconst md = `\n```bash\nnpm test\n```\n`;\n```\n\n"
              "A four-backtick fence shows a fence:\n\n"
              "````md\n```js\nconsole.log(1)\n```\n````\n\n"
              "Inline, write ``` to open a fence.")
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=5, usage=(50, 20)))
        bot = await ask_bot(**model_env(model))
        await bot.slash("/sz-ask", "how do I quote a fence?")
        await bot.answered()
    final, = bot.fake.answers()
    body = "\n".join(sections(final))
    fences = [line for line in body.split("\n") if line.startswith("```")]
    assert fences == ["```"] * 4, body  # two code blocks, each opened and closed once
    assert body.count("```") == 4  # no other run of three backticks anywhere
    assert f"`{ZWSP}`{ZWSP}`bash" in body and f"`{ZWSP}`{ZWSP}`js" in body
    assert "console.log(1)" in body and "npm test" in body


# -- interrupted answers -------------------------------------------------------------------------------

async def test_an_interrupted_answer_whose_edit_fails_transiently_is_kept_for_the_next_start(make_bot, tmp_path):
    from bot.state import InFlightAnswer, open_store

    env = {"STATE_PATH": str(tmp_path / "state.sqlite"), "REPLICA_ID": "web-1"}
    store = open_store(tmp_path / "state.sqlite")
    store.begin_answer(InFlightAnswer(answer_id="deadbeef00000001", channel="C0CHANNEL", thread_ts=None,
                                      message_ts="1700000100.000001", replica_id="web-1", started_at=time.time()))
    first = await make_bot(**env)
    first.fake.fail_status["chat.update"] = 503  # Slack is having a bad day at start-up
    await first.fake.wait_for(lambda cs: len([c for c in cs if c.method == "chat.update"]) >= 2, timeout=15)
    await asyncio.sleep(0.5)
    assert [a.answer_id for a in store.unfinished()] == ["deadbeef00000001"]  # kept: the edit did not happen
    await first.stop()
    first.fake.fail_status.clear()
    first.fake.clear()
    second = await make_bot(**env)
    update = (await second.fake.wait_for("chat.update"))[-1]
    assert update.body["ts"] == "1700000100.000001" and "interrupted, please ask again" in update.body["text"]
    deadline = time.monotonic() + 5
    while store.unfinished():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    store.close()


async def test_answers_cut_by_kill_9_are_marked_interrupted_when_serve_starts_again(slack_fake, bot_repo, tmp_path):
    """``slackzilla serve`` as a real process: an answer streaming when the process is killed with
    SIGKILL (no shutdown code runs) leaves both its progress message and its streamed reply behind;
    the next start edits each to "interrupted, please ask again"."""
    import os
    import signal
    import sys
    from urllib.parse import urlencode

    from slack_fake import BOT_TOKEN, SIGNING_SECRET, BotHarness

    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "SLACK_API_URL": slack_fake.api_url, "REPO_PATH": str(bot_repo), "HOST": "127.0.0.1", "PORT": "0",
           "RAG_INDEX_PATH": str(tmp_path / "index.sqlite"), "STATE_PATH": str(tmp_path / "state.sqlite"),
           "REPLICA_ID": "web-1", "REINDEX_INTERVAL_S": "0", "AI_MODEL": "fake-model", "AI_API_KEY": "sk-test"}
    serve = [os.path.join(os.path.dirname(sys.executable), "slackzilla"), "serve"]

    async def start_serving() -> tuple[asyncio.subprocess.Process, int]:
        proc = await asyncio.create_subprocess_exec(*serve, env=env, stderr=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            found = re.search(r"serving on 127\.0\.0\.1:(\d+)", line)
            if found:
                return proc, int(found.group(1))
            assert line, "serve exited before serving"
        raise AssertionError("serve did not start")

    from rag.engine import Engine

    # Built first: serve's start-up update runs in a child process (bot.isolated_update), and a question
    # arriving while an index is still being built for the first time is refused, not answered.
    engine = Engine.open(bot_repo, index_path=tmp_path / "index.sqlite")
    engine.update()
    engine.close()
    async with FakeOpenAIServer() as model:
        env["AI_URL"] = model.base_url
        model.script(text_reply("The first part of the answer streams, and then the process dies. " * 3,
                                pieces=30, gap_s=1.0))
        proc, port = await start_serving()
        import aiohttp
        async with aiohttp.ClientSession() as session:
            harness = BotHarness(None, None, slack_fake, f"http://127.0.0.1:{port}", session, None)
            response = await harness.post_signed(urlencode(harness.form("/sz-ask", QUESTION)))
            assert response.status == 200
            await slack_fake.wait_for("chat.startStream", timeout=30)
            from bot.state import open_store
            store = open_store(tmp_path / "state.sqlite")
            deadline = time.monotonic() + 15
            while len(store.unfinished()) < 2:  # each message is recorded once it exists
                assert time.monotonic() < deadline, store.unfinished()
                await asyncio.sleep(0.05)
            store.close()
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        progress_ts = slack_fake.of("chat.postMessage")[0].reply["ts"]  # what Slack answered before the kill
        stream_ts = slack_fake.of("chat.startStream")[0].reply["ts"]
        slack_fake.clear()
        proc, port = await start_serving()
        try:
            calls = await slack_fake.wait_for(lambda cs: len([c for c in cs if c.method == "chat.update"]) >= 2,
                                              timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    edited = {c.body["ts"]: c.body["text"] for c in calls if c.method == "chat.update"}
    assert set(edited) == {progress_ts, stream_ts}, edited
    assert all("interrupted, please ask again" in text for text in edited.values())
