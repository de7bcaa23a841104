"""The real Bolt app over HTTP: signed slash commands in, Web API calls out (recorded by SlackFake).

The app is bound with an aiohttp AppRunner on 127.0.0.1 port 0 (conftest ``make_bot``),
its Web API points at tests/slack_fake.py and the model at tests/openai_server.py.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from urllib.parse import urlencode

import pytest
from openai_server import FakeOpenAIServer, Reply, text_reply, tool_reply
from slack_fake import ADMIN, USER

from commands.registry import CommandSpec

# Good and bad input per command; a command missing here fails test_every_command_is_covered.
CASES: dict[str, tuple[str, str, str]] = {
    # id: (good text, expected in the good answer, bad text)
    "8ball": ("will it ship?", ":8ball:", ""),
    "base64": ("encode hello", "aGVsbG8=", "decode !!!"),
    "calc": ("2+3*4", "14", "2+"),
    "case": ("upper hello", "HELLO", "sideways x"),
    "count": ("a b c", "3 words", ""),
    "hash": ("sha256 abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "md4 abc"),
    "help": ("", "/sz-hash", "nosuchcmd"),
    "ping": ("", "Pong!", "extra"),
    "random": ("1 10", "between 1 and 10", "10 1"),
    "repo": ("", "asks about", "frobnicate"),
    "roll": ("2d6", "2d6", "1000d1000"),
    "rps": ("rock", "rock", "lizard"),
    "status": ("", "version", "x"),
    "token": ("16", "16-character", "100000"),
    "unix": ("0", "1970-01-01T00:00:00Z", "notatime"),
    "uuid": ("", "UUID", "x"),
}
SPECIAL = {"ask", "reindex"}  # covered by their own tests below


def texts(call) -> str:
    """All text of one recorded message (fallback text and every block)."""
    return call.body.get("text", "") + "\n" + json.dumps(call.body.get("blocks", []), ensure_ascii=False)


async def answered(bot, *, timeout: float = 10.0):
    """The final answer message of the only /sz-ask (the one carrying the feedback buttons)."""
    await bot.fake.wait_for(lambda calls: bot.fake.answers(), timeout=timeout)
    [post] = bot.fake.answers()
    return post


def model_env(server: FakeOpenAIServer, **extra: str) -> dict:
    return {"AI_URL": server.base_url, "AI_API_KEY": "sk-test-key", "AI_MODEL": "fake-model", **extra}


# -- request verification ------------------------------------------------------------------------

async def test_signature_checks(make_bot):
    bot = await make_bot()
    ok = await bot.slash("/sz-ping")
    assert ok.status == 200
    body = urlencode(bot.form("/sz-ping", ""))
    wrong = await bot.post_signed(body, secret="not-the-signing-secret")
    stale = await bot.post_signed(body, timestamp=int(time.time()) - 301)
    forged = await bot.post_signed(body, signature="v0=" + "0" * 64)
    async with bot.session.post(f"{bot.base_url}/slack/events", data=body,
                                headers={"Content-Type": "application/x-www-form-urlencoded"}) as response:
        missing = response.status
    assert (wrong.status, stale.status, forged.status, missing) == (401, 401, 401, 401)
    await bot.fake.wait_for("response_url")
    await asyncio.sleep(0.2)
    assert len(bot.fake.of("response_url")) == 1  # only the signed request was answered
    assert "Pong!" in texts(bot.fake.of("response_url")[0])


# -- every registry command ----------------------------------------------------------------------

def test_every_command_is_covered():
    from commands.registry import build_registry

    assert set(CASES) | SPECIAL == {spec.id for spec in build_registry().all()}


async def test_every_command_with_good_and_bad_input(make_bot):
    bot = await make_bot()
    for command_id, (good, expected, bad) in CASES.items():
        slash = f"/sz-{command_id}"
        for text, wanted_ok in ((good, True), (bad, False)):
            bot.fake.clear()
            response = await bot.slash(slash, text)
            assert response.status == 200, (slash, text)
            calls = await bot.fake.wait_for("response_url")
            [reply] = [c for c in calls if c.method == "response_url"]
            shown = texts(reply)
            if wanted_ok:
                assert expected in shown, (slash, shown)
                assert ":warning:" not in reply.body["text"], (slash, shown)
                assert reply.body["blocks"], slash
            else:
                assert reply.body["response_type"] == "ephemeral", slash
                assert reply.body["text"].startswith(":warning:"), (slash, shown)
                assert "Usage: /sz-" in shown, (slash, shown)
    # results say where they go: /sz-roll is in the channel, /sz-hash only for the caller
    bot.fake.clear()
    await bot.slash("/sz-roll", "1d6")
    [roll] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    assert roll.body["response_type"] == "in_channel"
    metrics = bot.context.metrics()["commands"]
    assert metrics["hash"]["count"] == 2 and metrics["hash"]["failed"] == 1
    assert metrics["hash"]["p50_ms"] is not None


async def test_a_crashing_command_is_reported_and_captured(make_bot):
    def explode(request):
        raise RuntimeError(f"boom with secret input {request.text}")

    bot = await make_bot(extra_specs=[CommandSpec("explode", "Always fails.", "", "fun", explode)])
    await bot.slash("/sz-explode", "hunter2")
    [reply] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    assert reply.body["response_type"] == "ephemeral"
    assert reply.body["text"].startswith(":warning:") and "failed" in reply.body["text"]
    [captured] = bot.context.errors(limit=5, include_stack=True)
    assert captured["type"] == "RuntimeError" and captured["command"] == "explode"
    assert "hunter2" not in json.dumps(captured)


# -- /sz-ask -------------------------------------------------------------------------------------

async def test_ack_is_fast_while_the_model_is_slow(make_bot):
    async with FakeOpenAIServer() as model:
        slow = text_reply("too late")
        model.script(Reply(events=slow.events, hang_s=10.0))
        bot = await make_bot(**model_env(model, AI_TIMEOUT_S="2"))
        response = await bot.slash("/sz-ask", "how does the deploy webhook verify signatures?")
        assert response.status == 200
        assert response.seconds < 3.0
        assert "Working on" in response.body  # the ack carries a short ephemeral note
        # the loop stays free: another command is acked and answered while the model hangs
        ping = await bot.slash("/sz-ping")
        assert ping.status == 200 and ping.seconds < 1.0
        await bot.fake.wait_for(lambda calls: any("Pong!" in texts(c) for c in calls), timeout=5)
        assert not bot.fake.answers()  # the answer is not there yet (only the progress message)
        post = await answered(bot, timeout=15)
    shown = texts(post)
    assert ":warning:" in shown and "did not finish within 2 s" in shown  # the reason is visible
    assert "src/webhook.js:L" in shown  # and what still worked: the sources


async def test_ask_end_to_end_with_sources(make_bot):
    answer = "The webhook computes an HMAC of the body and compares it in constant time (src/webhook.js:4-7)."
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=4, usage=(120, 30)))
        bot = await make_bot(**model_env(model), REPO_WEB_URL="https://github.com/acme/shop")
        question = "how does the deploy webhook verify signatures?"
        response = await bot.slash("/sz-ask", question, user_id=USER)
        assert response.status == 200
        post = await answered(bot)
        sent = model.requests[0]
    assert post.body["channel"] == "C0CHANNEL"
    assert post.body["unfurl_links"] is False
    blocks = post.body["blocks"]
    shown = texts(post)
    assert answer.replace("(", "").split()[0] in shown and "constant time" in shown
    assert f"<@{USER}> asked: _{question}_" in blocks[0]["elements"][0]["text"]
    sources = next(b for b in blocks if b["type"] == "context" and "*Sources:*" in b["elements"][0]["text"])
    link = sources["elements"][0]["text"]
    assert "<https://github.com/acme/shop/blob/HEAD/src/webhook.js#L1-L" in link
    assert "|src/webhook.js:L1-L" in link
    footer = blocks[-2]["elements"][0]["text"]  # the feedback buttons come last
    assert "`fake-model`" in footer and "150 tokens" in footer
    # the model saw the repository excerpt, not just the question
    assert "verifySignature" in json.dumps(sent["messages"])
    assert bot.context.metrics()["asks"] == {"total": 1, "failed": 0, "declined": 0}
    assert bot.context.metrics()["tokens"]["total"] == 150


async def test_ask_without_a_model_lists_sources_and_empty_question_gets_usage(make_bot):
    bot = await make_bot()
    await bot.slash("/sz-ask", "where is the deploy webhook signature verified?")
    post = await answered(bot)
    shown = texts(post)
    assert "`src/webhook.js:L1-L" in shown and "AI_API_KEY" in shown
    bot.fake.clear()
    await bot.slash("/sz-ask", "   ")
    [reply] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    assert reply.body["response_type"] == "ephemeral" and "Usage: /sz-ask &lt;question&gt;" in texts(reply)


async def test_ask_falls_back_to_response_url_when_the_bot_may_not_post(make_bot):
    bot = await make_bot()
    bot.fake.fail["chat.postMessage"] = "not_in_channel"
    await bot.slash("/sz-ask", "deploy webhook signature")
    [reply] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    assert reply.body["response_type"] == "in_channel" and "src/webhook.js" in texts(reply)


async def test_ask_before_the_index_exists_says_so(make_bot):
    bot = await make_bot(index=False)
    await bot.slash("/sz-ask", "deploy webhook")
    calls = await bot.fake.wait_for(lambda cs: any(c.body.get("text", "").startswith(":warning:") for c in cs))
    [reply] = [c for c in calls if c.body.get("text", "").startswith(":warning:")]
    assert reply.method == "chat.update"  # the visible progress message now says why
    assert "index" in reply.body["text"].lower()


# -- the model's runCommand goes through the same registry and checks ----------------------------

async def test_model_run_command_is_refused_for_admin_only_commands(make_bot):
    async with FakeOpenAIServer() as model:
        model.script(
            tool_reply([("runCommand", '{"commandId": "reindex", "text": "full"}'),
                        ("runCommand", '{"commandId": "hash", "text": "sha256 abc"}')]),
            text_reply("Done."),
        )
        bot = await make_bot(**model_env(model))
        runs_before = bot.context.reindexer.state.runs
        await bot.slash("/sz-ask", "please reindex and hash abc", user_id=USER)
        await answered(bot)
        tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    # each tool message is a label line ("Live runtime evidence ...") and the tool's JSON
    refused, hashed = (json.loads(m["content"].split("\n", 1)[1]) for m in tool_messages)
    assert refused["ok"] is False and refused["error"]["code"] == "refused"
    assert hashed["ok"] is True and "ba7816bf" in json.dumps(hashed)
    assert bot.context.reindexer.state.runs == runs_before  # nothing was reindexed


async def test_model_reads_live_state_through_the_same_handlers(make_bot):
    async with FakeOpenAIServer() as model:
        model.script(
            tool_reply([("getStatus", "{}"), ("getLogs", '{"limit": 2, "level": "info"}'),
                        ("getRoutes", '{"method": "POST"}'), ("getCommands", '{"id": "reindex"}')]),
            text_reply("Status looks fine."),
        )
        bot = await make_bot(**model_env(model))
        await bot.slash("/sz-ping")  # something to find in the logs
        await bot.fake.wait_for("response_url")
        await bot.slash("/sz-ask", "what is the bot status and which routes exist?")
        await answered(bot)
        status, logs, routes, commands = (json.loads(m["content"].split("\n", 1)[1])
                                          for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert status["ok"] and status["result"]["index"]["files"] == 3 and status["result"]["repo"] == "repo"
    assert logs["ok"] and 1 <= len(logs["result"]) <= 2
    assert any("command id=ping" in entry["message"] for entry in logs["result"])
    assert routes["result"] == [{"path": "src/server.js", "line": 5, "method": "POST", "route": "/deploy",
                                 "router": "app", "match": "exact", "source": "call", "score": 0,
                                 "handler": None}]
    assert commands["result"]["commands"][0]["admin_only"] is True


async def test_a_named_admin_command_in_a_question_keeps_the_admin_check(make_bot):
    bot = await make_bot()
    await bot.slash("/sz-ask", "run /sz-reindex full", user_id=USER)
    post = await answered(bot)
    assert "restricted to admins" in texts(post)
    assert bot.context.reindexer.state.runs == 0


# -- /sz-reindex ---------------------------------------------------------------------------------

async def test_reindex_is_refused_for_non_admins(make_bot):
    bot = await make_bot()
    await bot.slash("/sz-reindex", "", user_id=USER)
    [reply] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    assert reply.body["response_type"] == "ephemeral"
    assert "/sz-reindex is restricted to admins" in reply.body["text"]
    assert bot.context.reindexer.state.runs == 0


async def test_admin_reindex_posts_progress_then_summary(make_bot, bot_repo):
    bot = await make_bot()
    (bot_repo / "docs.md").write_text("# Docs\n\nNew page.\n", encoding="utf-8")
    (bot_repo / "src" / "server.js").unlink()
    response = await bot.slash("/sz-reindex", "", user_id=ADMIN)
    assert response.status == 200 and response.seconds < 3.0
    calls = await bot.fake.wait_for(lambda cs: len([c for c in cs if c.method == "response_url"]) >= 2)
    progress, summary = [c for c in calls if c.method == "response_url"][:2]
    assert "Reindex started" in progress.body["text"] and f"<@{ADMIN}>" in progress.body["text"]
    assert progress.body["response_type"] == "in_channel"
    assert summary.body["response_type"] == "in_channel"
    assert "Reindex done in" in summary.body["text"]
    assert "1 added, 0 changed, 1 removed" in summary.body["text"]
    [run] = bot.context.status()["reindex"]["history"]
    assert (run["trigger"], run["user"], run["ok"]) == ("admin", ADMIN, True)


async def test_a_second_reindex_is_told_one_is_running(make_bot):
    bot = await make_bot()
    release = asyncio.Event()

    async def hold(record) -> None:
        await release.wait()

    running = asyncio.create_task(bot.context.reindexer.run_async(trigger="schedule", on_start=hold))
    await asyncio.sleep(0.05)
    await bot.slash("/sz-reindex", "full", user_id=ADMIN)
    [reply] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    release.set()
    record = await running
    assert record.ok is True
    assert reply.body["response_type"] == "ephemeral"
    assert "A reindex is already running" in reply.body["text"]
    assert bot.context.metrics()["reindex"] == {"runs": 1, "busy_refusals": 1}
    assert 'slackzilla_reindex{kind="busy_refusals"} 1.0' in bot.context.prometheus_text().decode()


# -- rendering ----------------------------------------------------------------------------------

def test_rendering_escapes_text_and_neutralises_broadcasts():
    from bot.slack.render import MAX_SECTION_CHARS, escape, render_answer, split_markdown

    assert escape("a < b && <!channel> <!here|here> <!subteam^S123> <@U123> <https://x.io|x>") == (
        "a &lt; b &amp;&amp; @\u200bchannel @\u200bhere @\u200bsubteam <@U123> <https://x.io|x>")
    text = "intro\n```js\n" + "\n".join(f"line {i} " + "x" * 60 for i in range(200)) + "\n```\nend"
    pieces = split_markdown(text)
    assert len(pieces) > 1 and all(len(p) <= MAX_SECTION_CHARS for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)  # no piece leaves a fence open
    payload = render_answer("<!everyone> see `x`", sources=[], question="q?", user_id="U1")
    assert "<!everyone>" not in json.dumps(payload) and "No matching files" in json.dumps(payload)


# -- serving ---------------------------------------------------------------------------------------

async def test_socket_mode_app_refuses_http_events_signed_with_an_empty_secret(make_bot):
    bot = await make_bot(SLACK_APP_TOKEN="xapp-1-test", SLACK_SIGNING_SECRET="")
    assert bot.settings.socket_mode and bot.settings.slack_signing_secret is None
    body = urlencode(bot.form("/sz-ping", ""))
    timestamp = int(time.time())
    empty_key = hmac.new(b"", f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    response = await bot.post_signed(body, timestamp=timestamp, signature=f"v0={empty_key}")
    assert response.status == 401


async def test_start_serves_http_on_host_and_port_then_stops(slack_fake, bot_repo, tmp_path):
    import aiohttp

    from bot.server import start
    from bot.settings import Settings
    from slack_fake import BOT_TOKEN, SIGNING_SECRET, BotHarness

    settings = Settings.from_env({
        "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "REPO_PATH": str(bot_repo),
        "RAG_INDEX_PATH": str(tmp_path / "served.sqlite"), "SLACK_API_URL": slack_fake.api_url,
        "HOST": "127.0.0.1", "PORT": "0",
    }, dotenv_path=None)
    server = await start(settings)
    try:
        await asyncio.wait_for(server.startup_task, timeout=20)
        async with aiohttp.ClientSession() as session:
            bot = BotHarness(server.app, server.context, slack_fake, f"http://127.0.0.1:{server.port}", session,
                             settings)
            async with session.get(f"{bot.base_url}/api/status") as response:
                status = await response.json()
            assert status["index"]["files"] == 3
            assert [run["trigger"] for run in status["reindex"]["history"]] == ["startup"]
            assert status["next_reindex_at"] > time.time() + 200  # REINDEX_INTERVAL_S defaults to 300
            assert (await bot.slash("/sz-ping")).status == 200
            await slack_fake.wait_for("response_url")
    finally:
        await server.stop()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"http://127.0.0.1:{server.port}/healthz")


async def test_slack_encoded_characters_reach_commands_decoded(make_bot):
    # Slack sends a typed "a & b <c>" as "a &amp; b &lt;c&gt;" (its text encoding).
    bot = await make_bot()
    response = await bot.slash("/sz-count", "a &amp; b &lt;c&gt;")
    assert response.status == 200
    [reply] = [c for c in await bot.fake.wait_for("response_url") if c.method == "response_url"]
    assert "9" in texts(reply) and "19" not in texts(reply)  # 9 characters typed, 19 as encoded


def test_slack_unescape_decodes_once():
    from bot.slack.app import slack_unescape

    assert slack_unescape("a &amp; b &lt;c&gt;") == "a & b <c>"
    assert slack_unescape("&amp;lt;") == "&lt;"  # a typed "&lt;" stays literal


def test_api_ask_without_a_token_is_for_local_clients_only():
    from unittest.mock import Mock

    from aiohttp.test_utils import make_mocked_request

    from bot.api.routes import _from_loopback

    def request_from(host: str):
        transport = Mock()
        transport.get_extra_info.side_effect = lambda name, default=None: (host, 5555) if name == "peername" else default
        return make_mocked_request("POST", "/api/ask", transport=transport)

    assert _from_loopback(request_from("127.0.0.1")) and _from_loopback(request_from("::1"))
    assert not _from_loopback(request_from("10.1.2.3")) and not _from_loopback(request_from("203.0.113.9"))


async def test_status_names_the_odd_files_the_last_reindex_skipped(make_bot, bot_repo):
    bot = await make_bot()
    (bot_repo / "data").mkdir()
    (bot_repo / "data" / "cities.json").write_text("[" + ",".join(f'{{"id": {i}}}' for i in range(4000)) + "]")
    await bot.slash("/sz-reindex", "", user_id=ADMIN)
    await bot.fake.wait_for(lambda cs: len([c for c in cs if c.method == "response_url"]) >= 2)
    status = bot.context.status()
    assert status["index"]["not_indexed"] == "data/cities.json (data_file)"
    await bot.slash("/sz-status", "", user_id=USER)
    reply = await bot.fake.wait_for(lambda cs: [c for c in cs if c.method == "response_url" and "Status" in json.dumps(c.body)])
    assert "data/cities.json (data_file)" in json.dumps(reply[-1].body)


# -- start-up log ----------------------------------------------------------------------------------

async def test_start_up_does_not_warn_that_the_environments_own_token_is_unused(make_bot, monkeypatch, caplog):
    from slack_fake import BOT_TOKEN

    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)  # as systemd's EnvironmentFile or an exported .env gives it
    with caplog.at_level("WARNING", logger="slackzilla.bolt"):
        await make_bot()
    assert not [r for r in caplog.records if "will be unused" in r.getMessage()]


async def test_a_different_token_in_the_environment_is_still_reported(make_bot, monkeypatch, caplog):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-some-other-workspace")
    with caplog.at_level("WARNING", logger="slackzilla.bolt"):
        await make_bot()
    assert [r for r in caplog.records if "will be unused" in r.getMessage()]
