"""Each delivery processed once, decided by identity (issue 13): retries, duplicates, edits, replays.

The real app (conftest ``make_bot``) with signed HTTP requests, and the real server
(:func:`bot.server.start`) in Socket Mode, its slack_sdk client connected to a local
WebSocket (tests/socket_mode_server.py), so envelopes take the path Bolt's
``AsyncSocketModeHandler`` gives them (``retry_attempt`` → ``X-Slack-Retry-Num``).
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from urllib.parse import urlencode

import pytest
from slack_fake import BOT_TOKEN, SIGNING_SECRET, USER, SlackFake
from socket_mode_server import SocketModeServer

from bot.slack.ask_flow import AskOptions
from bot.slack.guards import DELIVERY_TTL_S, DuplicateFilter, delivery_identities

FAST = AskOptions(update_interval_s=0.1, stream_interval_s=0.1)
JSON = {"Content-Type": "application/json"}


def mention_event(text: str, *, ts: str, **extra) -> dict:
    return {"type": "app_mention", "user": USER, "text": f"<@U0BOT> {text}", "ts": ts, "channel": "C0CHANNEL",
            "event_ts": ts, "team": "T0TEAM", **extra}


def event_body(event: dict, event_id: str) -> str:
    return json.dumps({"token": "legacy-verification-token", "team_id": "T0TEAM", "api_app_id": "A0APP",
                       "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
                       "event": event, "authorizations": [{"team_id": "T0TEAM", "user_id": "U0BOT", "is_bot": True}]})


async def answered(flow, count: int, *, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while len(flow.completed) < count:
        assert time.monotonic() < deadline, f"{len(flow.completed)} of {count} answered"
        await asyncio.sleep(0.02)


async def settle(flow, count: int) -> None:
    """Wait for ``count`` answers, give a wrongly accepted delivery time to start, check none did."""
    await answered(flow, count)
    await asyncio.sleep(0.5)
    assert len(flow.completed) == count


def retry(attempt: int, reason: str = "http_timeout") -> dict:
    return {**JSON, "X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason}


# -- HTTP ------------------------------------------------------------------------------------------

async def test_a_retry_whose_first_delivery_never_arrived_is_answered_once(make_bot):
    bot = await make_bot(ask_options=FAST)
    body = event_body(mention_event("where is the deploy webhook?", ts="1700001000.000001"), "EvLostFirst1")
    # the first delivery went to a bot that was restarting: Slack's first retry is all we get
    first_retry = await bot.post_signed(body, headers=retry(1))
    second_retry = await bot.post_signed(body, headers=retry(2))
    assert (first_retry.status, second_retry.status) == (200, 200)
    await settle(bot.ask_flow, 1)


async def test_a_retry_of_an_answered_event_and_a_duplicate_are_not_answered_again(make_bot):
    bot = await make_bot(ask_options=FAST)
    body = event_body(mention_event("where is the deploy webhook?", ts="1700001100.000001"), "EvAnswered1")
    assert (await bot.post_signed(body, headers=JSON)).status == 200
    assert (await bot.post_signed(body, headers=retry(1))).status == 200
    assert (await bot.post_signed(body, headers=JSON)).status == 200  # the same event, no header
    await settle(bot.ask_flow, 1)


async def test_a_mention_by_another_bot_is_not_answered(make_bot):
    """Another bot's message mentioning ours (``bot_id``, ``subtype: bot_message``, often no ``user``) was
    answered ("Someone asked…"): two bots answering each other's mentions loop. A person's is answered."""
    bot = await make_bot(ask_options=FAST)
    by_bot = mention_event("where is the deploy webhook?", ts="1700001150.000001", bot_id="B0OTHER",
                           subtype="bot_message")
    del by_bot["user"]
    assert (await bot.post_signed(event_body(by_bot, "EvByBot1"), headers=JSON)).status == 200
    with_user = mention_event("where is the deploy webhook?", ts="1700001150.000002", bot_id="B0OTHER")
    assert (await bot.post_signed(event_body(with_user, "EvByBot2"), headers=JSON)).status == 200
    await asyncio.sleep(0.8)
    assert not bot.ask_flow.completed and not bot.fake.of("chat.postMessage")
    person = mention_event("where is the deploy webhook?", ts="1700001150.000003")
    assert (await bot.post_signed(event_body(person, "EvByPerson"), headers=JSON)).status == 200
    await settle(bot.ask_flow, 1)


async def test_an_edited_mention_is_answered_once(make_bot):
    bot = await make_bot(ask_options=FAST)
    ts = "1700001200.000001"
    original = event_body(mention_event("where is the deploy webhook?", ts=ts), "EvEditOriginal")
    assert (await bot.post_signed(original, headers=JSON)).status == 200
    await answered(bot.ask_flow, 1)
    # Slack re-fires app_mention for the edited message: a new event id, the same message ts
    edited = event_body(mention_event("where is the deploy webhook verified?", ts=ts,
                                      edited={"user": USER, "ts": "1700001260.000000"}), "EvEditRefired")
    assert (await bot.post_signed(edited, headers=JSON)).status == 200
    await settle(bot.ask_flow, 1)
    # a new message (its own ts) in the same thread is a new question
    follow_up = event_body(mention_event("and where is the server?", ts="1700001300.000001", thread_ts=ts),
                           "EvEditFollowUp")
    assert (await bot.post_signed(follow_up, headers=JSON)).status == 200
    await settle(bot.ask_flow, 2)


async def test_a_replayed_slash_command_is_answered_once_and_a_cheap_command_never_twice(make_bot):
    bot = await make_bot(ask_options=FAST)
    ask = urlencode(bot.form("/sz-ask", "where is the deploy webhook?"))
    timestamp = int(time.time())
    responses = [await bot.post_signed(ask, timestamp=timestamp) for _ in range(2)]  # byte for byte the same
    assert [r.status for r in responses] == [200, 200] and responses[1].body == ""
    await settle(bot.ask_flow, 1)

    ping = urlencode(bot.form("/sz-ping", ""))
    replayed = [await bot.post_signed(ping, timestamp=timestamp) for _ in range(2)]
    resent = await bot.post_signed(ping, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "timeout"})
    assert [r.status for r in (*replayed, resent)] == [200, 200, 200]
    await bot.fake.wait_for("response_url")
    await asyncio.sleep(0.5)
    pongs = [c for c in bot.fake.of("response_url") if "Pong" in json.dumps(c.body)]
    assert len(pongs) == 1  # the same trigger and the same signature: run once


async def test_delivery_memory_survives_a_restart(make_bot, tmp_path):
    env = {"STATE_PATH": str(tmp_path / "state" / "state.sqlite"), "REPLICA_ID": "web-1"}
    first = await make_bot(ask_options=FAST, **env)
    ts = "1700001400.000001"
    body = event_body(mention_event("where is the deploy webhook?", ts=ts), "EvBeforeRestart")
    assert (await first.post_signed(body, headers=JSON)).status == 200
    await answered(first.ask_flow, 1)
    ping = urlencode(first.form("/sz-ping", ""))
    timestamp = int(time.time())
    assert (await first.post_signed(ping, timestamp=timestamp)).status == 200
    await first.fake.wait_for("response_url")
    await first.stop()

    second = await make_bot(ask_options=FAST, **env)  # a new app on the same state database
    second.fake.clear()
    assert (await second.post_signed(body, headers=retry(1))).status == 200  # Slack's retry after the restart
    edited = event_body(mention_event("where is the deploy webhook checked?", ts=ts,
                                      edited={"user": USER, "ts": "1700001460.000000"}), "EvAfterRestartEdit")
    assert (await second.post_signed(edited, headers=JSON)).status == 200
    assert (await second.post_signed(ping, timestamp=timestamp)).status == 200  # a replay
    await asyncio.sleep(0.8)
    assert len(second.ask_flow.completed) == 0 and second.fake.of("response_url") == []


async def test_without_the_store_deliveries_are_remembered_for_the_whole_retry_schedule():
    from bot.slack.guards import deliver_once

    now = [1000.0]
    guard = deliver_once(memory=DuplicateFilter(window_s=DELIVERY_TTL_S, clock=lambda: now[0]))
    body = json.loads(event_body(mention_event("where?", ts="1700001500.000001"), "EvNoStore"))
    processed = []

    class Request:
        headers = {"x-slack-retry-num": ["1"], "x-slack-retry-reason": ["http_timeout"]}

    async def next_() -> None:
        processed.append(now[0])

    await guard(body=body, request=Request(), next=next_)
    now[0] += 5 * 60 + 30  # Slack's last retry comes about 5 minutes after the first
    response = await guard(body=body, request=Request(), next=next_)
    assert processed == [1000.0] and response.status == 200
    assert DELIVERY_TTL_S >= 600


def test_delivery_identities():
    mention = json.loads(event_body(mention_event("q", ts="1.2", client_msg_id="m-1"), "Ev1"))
    assert delivery_identities(mention, {"x-slack-signature": ["v0=abc"]}) == [
        "event:Ev1", "msg:m-1", "mention:C0CHANNEL:1.2", "sig:v0=abc"]
    changed = {"type": "event_callback", "event_id": "Ev2",
               "event": {"type": "message", "subtype": "message_changed", "channel": "C1",
                         "message": {"ts": "1.2", "client_msg_id": "m-1"}}}
    assert delivery_identities(changed) == ["event:Ev2", "msg:m-1"]
    assert delivery_identities({"command": "/sz-ask", "trigger_id": "t1"}) == ["slash:t1"]
    assert delivery_identities({"type": "block_actions", "trigger_id": "t2"}) == ["action:t2"]
    assert delivery_identities({}) == []


# -- Socket Mode -------------------------------------------------------------------------------------

@pytest.fixture
async def socket_bot(bot_repo, tmp_path):
    """``await socket_bot()``: the real server in Socket Mode, connected to a local Socket Mode endpoint."""
    from bot.server import start
    from bot.settings import Settings

    started = []
    async with SocketModeServer() as slack:
        with SlackFake() as fake:
            fake.socket_mode_url = slack.url

            async def run(**env):
                settings = Settings.from_env({
                    "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": "xapp-1-test", "REPO_PATH": str(bot_repo),
                    "RAG_INDEX_PATH": str(tmp_path / "socket.sqlite"), "SLACK_API_URL": fake.api_url,
                    "PORT": "0", "REINDEX_INTERVAL_S": "0", **env}, dotenv_path=None)
                server = await start(settings)
                started.append(server)
                await asyncio.wait_for(server.startup_task, timeout=20)  # the index is built
                await slack.wait_connected()
                return server, slack, fake

            yield run
            for server in started:
                await server.stop()


async def test_socket_mode_mentions_are_answered_once_whatever_retry_attempt_says(socket_bot):
    server, slack, fake = await socket_bot()
    flow = server.bot.ask_flow
    first = mention_event("where is the deploy webhook?", ts="1700002000.000001")
    envelope = await slack.send_event(first, event_id="EvSocket1", retry_attempt=0)  # every first delivery
    await slack.wait_ack(envelope)
    await answered(flow, 1)
    retried = await slack.send_event(first, event_id="EvSocket1", retry_attempt=1, retry_reason="timeout")
    await slack.wait_ack(retried)
    await settle(flow, 1)  # the retry of an answered event is acked, not answered

    lost = mention_event("and where is the server?", ts="1700002100.000001")  # its first delivery never came
    for attempt in (1, 2):
        await slack.wait_ack(await slack.send_event(lost, event_id="EvSocket2", retry_attempt=attempt,
                                                    retry_reason="timeout"))
    await settle(flow, 2)
    assert len(fake.answers()) == 2


# -- malformed signature headers ---------------------------------------------------------------------

async def test_malformed_signature_headers_get_a_4xx_and_one_log_line(make_bot, caplog):
    bot = await make_bot()
    body = urlencode(bot.form("/sz-ping", ""))
    caplog.set_level(logging.INFO)
    cases = {
        "non-numeric timestamp": ({"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=" + "0" * 64},
                                  400, "malformed_timestamp"),
        "huge timestamp": ({"X-Slack-Request-Timestamp": "9" * 40, "X-Slack-Signature": "v0=" + "0" * 64},
                           400, "malformed_timestamp"),
        "non-hex signature": ({"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=zz"},
                              400, "malformed_signature"),
        "non-ASCII signature": ({"X-Slack-Request-Timestamp": str(int(time.time())),
                                 "X-Slack-Signature": "v0=" + "é" * 64}, 400, "malformed_signature"),
        "no signature": ({"X-Slack-Request-Timestamp": str(int(time.time()))}, 401, "unsigned"),
    }
    for name, (headers, status, code) in cases.items():
        caplog.clear()
        async with bot.session.post(f"{bot.base_url}/slack/events", data=body.encode(),
                                    headers={"Content-Type": "application/x-www-form-urlencoded",
                                             **{k: v.encode("utf-8").decode("latin-1") for k, v in headers.items()}}
                                    ) as response:
            assert response.status == status, name
            assert (await response.json())["error"] == code, name
        # (the test runner's access log aside: `slackzilla serve` runs without one)
        lines = [r for r in caplog.records if r.name != "aiohttp.access"]
        assert len(lines) == 1 and "refused a request to /slack/events" in lines[0].getMessage(), \
            (name, [r.getMessage() for r in caplog.records])
        assert not any(r.exc_info for r in caplog.records), name
        assert "sz-ping" not in caplog.text  # metadata only, never the body
    # a body that is not UTF-8, correctly signed over its bytes: refused, not an HTTP 500
    raw = b"command=%2Fsz-ping&text=\xff\xfe"
    timestamp = str(int(time.time()))
    import hashlib
    import hmac
    signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), f"v0:{timestamp}:".encode() + raw,
                                 hashlib.sha256).hexdigest()
    async with bot.session.post(f"{bot.base_url}/slack/events", data=raw,
                                headers={"Content-Type": "application/x-www-form-urlencoded",
                                         "X-Slack-Request-Timestamp": timestamp,
                                         "X-Slack-Signature": signature}) as response:
        assert response.status == 400 and (await response.json())["error"] == "malformed_body"
    # correctly signed JSON that is not a Slack payload: Bolt answered HTTP 500 with a traceback
    for raw in (b"[1, 2", b"[1, 2]", b'{"type": "event_callback", "event": null}', b'"text"', b"[" * 50_000):
        signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), f"v0:{timestamp}:".encode() + raw,
                                     hashlib.sha256).hexdigest()
        caplog.clear()
        async with bot.session.post(f"{bot.base_url}/slack/events", data=raw,
                                    headers={"Content-Type": "application/json", "X-Slack-Request-Timestamp": timestamp,
                                             "X-Slack-Signature": signature}) as response:
            assert response.status == 400, raw
            assert (await response.json())["error"] == "malformed_body", raw
        assert not any(r.exc_info for r in caplog.records), raw
    assert (await bot.slash("/sz-ping")).status == 200  # well-formed requests still pass
    await bot.fake.wait_for("response_url")
