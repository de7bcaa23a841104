"""The bot on its state store (issue 17): the real app, real stores, for each backend.

Every test taking ``backend`` runs twice: ``[sqlite]`` (a file in ``tmp_path``, ``STATE_PATH``)
and ``[postgresql]`` (a fresh database on the server at ``SLACKZILLA_TEST_DATABASE_URL``,
default ``postgresql://postgres@127.0.0.1:5432/test``, dropped afterwards; ``DATABASE_URL``).
When no PostgreSQL server answers, the ``[postgresql]`` cases skip and say why.

"Restarting" stops one app (conftest ``make_bot``) and starts another on the same store;
"two replicas" are two apps with different ``REPLICA_ID`` on the same store, each with
its own connections. PostgreSQL "down then up" goes through a TCP proxy the test stops
and restarts (the server itself is shared and stays up).
"""
from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from urllib.parse import urlencode, urlsplit

import pytest
from click.testing import CliRunner
from state_backends import (ADMIN_URL, StoreTarget, drop_database, fresh_database, require_postgres,
                            with_database)
from tcp_proxy import TcpProxy
from openai_server import FakeOpenAIServer, text_reply
from slack_fake import ADMIN, USER

from bot.identity import Identity
from bot.scheduler import ScheduleLease, scheduled_reindex
from bot.settings import Settings, SettingsError
from bot.slack.ask_flow import AskOptions
from bot.state import InFlightAnswer, StateConfig, open_store
from bot.state.resilient import ResilientState
from rag.engine import Engine
from rag.ingest.reindexer import Reindexer

QUESTION = "how does the deploy webhook verify signatures?"
FAST = AskOptions(update_interval_s=0.1, stream_interval_s=0.1)

Backend = StoreTarget


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path):
    if request.param == "sqlite":
        b = Backend("sqlite", str(tmp_path / "state" / "state.sqlite"))
        yield b
        b.close_all()
        return
    require_postgres()
    name = fresh_database("slz_durable_test")
    b = Backend("postgresql", with_database(ADMIN_URL, name))
    try:
        yield b
    finally:
        b.close_all()
        drop_database(name)




def footer_texts(bot) -> list[str]:
    return [json.dumps(c.body.get("blocks", []), ensure_ascii=False) for c in bot.fake.answers()]


# -- restarts --------------------------------------------------------------------------------------

async def test_a_restart_keeps_thread_memory_dedupe_and_votes(make_bot, backend):
    async with FakeOpenAIServer() as model:
        model.script(text_reply("It uses an HMAC (src/webhook.js:4-7)."),
                     text_reply("The secret comes from DEPLOY_SECRET (src/server.js:6)."))
        env = {**backend.env, "REPLICA_ID": "web-1", "AI_URL": model.base_url, "AI_API_KEY": "sk-test-key",
               "AI_MODEL": "fake-model"}
        first = await make_bot(ask_options=FAST, **env)
        await first.slash("/sz-ask", QUESTION)
        asked = await first.answered(1)
        vote = await first.click("sz_feedback_up", asked.answer_id, user_id=USER)
        assert vote.status == 200
        event = {"type": "app_mention", "user": USER, "text": "<@U0BOT> hello again", "ts": "1700000900.000001",
                 "channel": "C0CHANNEL", "event_ts": "1700000900.000001", "team": "T0TEAM"}
        body = {"token": "legacy-verification-token", "team_id": "T0TEAM", "api_app_id": "A0APP",
                "type": "event_callback", "event_id": f"EvRestart{uuid.uuid4().hex[:6]}", "event_time": 1,
                "event": event, "authorizations": [{"team_id": "T0TEAM", "user_id": "U0BOT", "is_bot": True}]}
        assert (await first.post_signed(json.dumps(body), headers={"Content-Type": "application/json"})).status == 200
        await first.answered(2)
        await first.stop()

        second = await make_bot(ask_options=FAST, **env)  # the same replica, restarted
        model.script(text_reply("Still an HMAC."))
        await second.mention("and where does the secret come from?", thread_ts=asked.anchor_ts)
        await second.answered(1)
        history = [m for m in model.requests[-1]["messages"] if m["role"] in ("user", "assistant")]
        assert history[0] == {"role": "user", "content": QUESTION}  # the turn from before the restart
        assert history[1] == {"role": "assistant", "content": "It uses an HMAC (src/webhook.js:4-7)."}
        # the event answered before the restart, delivered again (no retry header): not answered again
        again = await second.post_signed(json.dumps(body), headers={"Content-Type": "application/json"})
        assert again.status == 200
        await asyncio.sleep(0.5)
        assert len(second.ask_flow.completed) == 1 and len(model.requests) == 3
        votes = second.context.feedback.entries()
        assert [(v.user_id, v.answer_id, v.vote) for v in votes] == [(USER, asked.answer_id, "up")]
        assert votes[0].question_chars == len(QUESTION) and votes[0].model == "fake-model"
        async with second.session.get(f"{second.base_url}/api/metrics") as response:
            metrics = await response.json()
        assert metrics["feedback"] == {"up": 1, "down": 0}  # read from the store, not this process
        async with second.session.get(f"{second.base_url}/metrics") as response:
            assert 'slackzilla_feedback_current{vote="up"} 1.0' in await response.text()


async def test_the_reindex_history_in_the_status_survives_a_restart(make_bot, backend):
    first = await make_bot(ask_options=FAST, REPLICA_ID="web-1", **backend.env)
    record = await first.context.reindexer.run_async(trigger="admin", user=ADMIN)
    deadline = time.monotonic() + 5
    store = backend.open()
    while record.id not in [run["id"] for run in store.runs()]:  # written off the event loop
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    await first.stop()
    second = await make_bot(ask_options=FAST, REPLICA_ID="web-1", **backend.env)
    status = await asyncio.to_thread(second.context.status)
    assert record.id in [run["id"] for run in status["reindex"]["history"]]
    assert second.context.reindexer.history == []  # it came from the store


async def test_an_answer_in_flight_at_a_crash_is_finished_by_the_next_start(make_bot, backend):
    store = backend.open()
    # what a replica that died mid-answer leaves behind: its progress message and the record
    store.begin_answer(InFlightAnswer(answer_id="deadbeef00000001", channel="C0CHANNEL", thread_ts=None,
                                      message_ts="1700000100.000001", replica_id="web-1", started_at=time.time()))
    store.begin_answer(InFlightAnswer(answer_id="deadbeef00000002", channel="C0CHANNEL", thread_ts=None,
                                      message_ts="1700000100.000002", replica_id="web-2", started_at=time.time()))
    bot = await make_bot(ask_options=FAST, REPLICA_ID="web-1", **backend.env)
    calls = await bot.fake.wait_for(lambda cs: any(c.method == "chat.update" for c in cs))
    update, = [c for c in calls if c.method == "chat.update"]
    assert update.body["ts"] == "1700000100.000001" and "interrupted, please ask again" in update.body["text"]
    deadline = time.monotonic() + 5
    while [a.answer_id for a in store.unfinished()] != ["deadbeef00000002"]:  # web-2's is web-2's to finish
        assert time.monotonic() < deadline, store.unfinished()
        await asyncio.sleep(0.05)
    # a normal answer is recorded while it runs and finished afterwards
    await bot.slash("/sz-ask", QUESTION)
    await bot.answered(1)
    deadline = time.monotonic() + 5  # finish_answer runs in the flow's finally, just after the post
    while [a.replica_id for a in store.unfinished()] != ["web-2"]:
        assert time.monotonic() < deadline, store.unfinished()
        await asyncio.sleep(0.05)


# -- two replicas ------------------------------------------------------------------------------------

async def test_two_apps_sharing_one_store_answer_a_delivered_and_a_retried_event_once(make_bot, backend):
    one = await make_bot(ask_options=FAST, REPLICA_ID="web-1", **backend.env)
    two = await make_bot(ask_options=FAST, REPLICA_ID="web-2", **backend.env)
    def body(event_id: str, text: str, ts: str) -> str:  # two messages never share a ts in a channel
        event = {"type": "app_mention", "user": USER, "text": f"<@U0BOT> {text}", "ts": ts,
                 "channel": "C0CHANNEL", "event_ts": ts, "team": "T0TEAM"}
        return json.dumps({"token": "legacy-verification-token", "team_id": "T0TEAM", "api_app_id": "A0APP",
                           "type": "event_callback", "event_id": event_id, "event_time": 1, "event": event,
                           "authorizations": [{"team_id": "T0TEAM", "user_id": "U0BOT", "is_bot": True}]})

    json_headers = {"Content-Type": "application/json"}
    delivered = body(f"EvBoth{uuid.uuid4().hex[:8]}", "where is the webhook?", "1700000700.000001")
    both = await asyncio.gather(one.post_signed(delivered, headers=json_headers),
                                two.post_signed(delivered, headers=json_headers))
    assert [r.status for r in both] == [200, 200]
    retried = body(f"EvRetry{uuid.uuid4().hex[:8]}", "and where is the server?", "1700000700.000002")
    assert (await one.post_signed(retried, headers=json_headers)).status == 200
    retry = await two.post_signed(retried, headers={**json_headers, "X-Slack-Retry-Num": "1",
                                                    "X-Slack-Retry-Reason": "http_timeout"})
    assert retry.status == 200
    deadline = time.monotonic() + 20
    while len(one.ask_flow.completed) + len(two.ask_flow.completed) < 2:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    assert len(one.ask_flow.completed) + len(two.ask_flow.completed) == 2  # each event once
    # a slash command delivered twice (same trigger id), once to each replica: answered once
    form = urlencode(one.form("/sz-ask", "where is the deploy webhook?"))
    first, second = await asyncio.gather(one.post_signed(form), two.post_signed(form))
    assert sorted([first.body == "", second.body == ""]) == [False, True]
    # the rate limit counts across replicas
    assert await _ask_until_limited(one, two) == 6


async def _ask_until_limited(one, two) -> int:
    """Asks alternating between the replicas by one new user until refused; the number allowed."""
    for n in range(1, 10):
        bot = (one, two)[n % 2]
        response = await bot.slash("/sz-ask", f"question number {n} about the deploy webhook", user_id=ADMIN)
        if "try again" in response.body.lower() or "retry" in response.body.lower():
            return n - 1
    return 9


async def test_two_schedulers_sharing_one_store_run_one_reindex_per_interval(bot_repo, tmp_path, backend):
    stores = [ResilientState(backend.open(), replica_id=f"web-{i}", owned=False) for i in (1, 2)]
    now = [1_900_000_000.0]
    engines = [Engine.open(bot_repo, index_path=tmp_path / "shared-index.sqlite") for _ in stores]
    try:
        reindexers = [Reindexer(engine) for engine in engines]
        leases = [ScheduleLease(state, repo=bot_repo.name, interval_s=60, clock=lambda: now[0]) for state in stores]
        runs = []
        for tick in range(4):  # four intervals; both replicas' schedules fire in each (a second apart)
            for reindexer, lease in zip(reindexers, leases):
                record = await scheduled_reindex(reindexer, lease=lease)
                runs.append((tick, lease.state.replica_id if record is not None else None))
                now[0] += 1
            now[0] += 58
        ran = [(tick, who) for tick, who in runs if who]
        assert [tick for tick, _ in ran] == [0, 1, 2, 3]  # exactly one run per interval
        assert sum(lease.skipped for lease in leases) == 4
        now[0] -= 58  # back inside the last interval
        holder = leases[1].holder()
        assert holder is not None and holder[0] == ran[-1][1]
    finally:
        for engine in engines:
            engine.close()


async def test_status_names_the_replica_holding_the_schedule(make_bot, backend):
    bot = await make_bot(ask_options=FAST, REPLICA_ID="web-9", **backend.env)
    store = backend.open()
    assert store.try_lease(f"reindex:{bot.context.engine.repo_root.name}", "web-1", 600)
    lease = bot.context.lease  # the app's own (it runs no schedule here, but knows who does)
    assert lease is not None and not await lease.acquire()
    status = await asyncio.to_thread(bot.context.status)
    assert status["reindex"]["scheduled_by"] == "web-1" and status["reindex"]["schedule_skipped"] == 1
    assert status["state"]["backend"] == backend.kind and status["state"]["available"] is True
    result = await bot.context.run_command("status", "", identity=Identity(USER))
    assert ("reindex: scheduled by", "web-1") in result.fields  # what /sz-status shows
    assert status["state"]["replica"] == "web-9"
    assert "password" not in json.dumps(status["state"])


# -- PostgreSQL down, then up ---------------------------------------------------------------------------

async def test_postgresql_down_then_up_the_bot_answers_says_memory_is_off_and_catches_up(make_bot, caplog):
    require_postgres()
    admin = urlsplit(ADMIN_URL)
    name = fresh_database("slz_durable_test")
    proxy = TcpProxy((admin.hostname or "127.0.0.1", admin.port or 5432))
    proxy.up()
    userinfo = admin.netloc.rsplit("@", 1)[0] + "@" if "@" in admin.netloc else ""
    url = with_database(ADMIN_URL, name, netloc=f"{userinfo}127.0.0.1:{proxy.port}")
    try:
        bot = await make_bot(ask_options=FAST, REPLICA_ID="web-1", DATABASE_URL=url, STATE_TIMEOUT_S="1")
        await bot.slash("/sz-ask", QUESTION)
        first = await bot.answered(1)
        assert "memory off" not in " ".join(footer_texts(bot))

        proxy.down()
        bot.fake.clear()
        started = time.perf_counter()
        ack = await bot.slash("/sz-ask", "where is the deploy webhook?")
        assert ack.status == 200 and "Working on" in ack.body and ack.seconds < 3  # still acked in time
        down = await bot.answered(2)
        assert down.ok and time.perf_counter() - started < 15
        assert "memory off" in " ".join(footer_texts(bot))  # the footer says so
        vote = await bot.click("sz_feedback_down", down.answer_id, user_id=USER)  # kept, written later
        assert vote.status == 200
        warnings = [r.getMessage() for r in caplog.records if "state store unavailable" in r.getMessage()]
        assert warnings and all("postgres@" not in w or ":***@" in w or "@127" in w for w in warnings)
        kinds = [w.split("(")[1].split(")")[0] for w in warnings]
        assert len(kinds) == len(set(kinds))  # one line per failure kind
        async with bot.session.get(f"{bot.base_url}/api/metrics") as response:
            failures = (await response.json())["state"]["failures"]
        assert sum(failures.values()) >= 1

        proxy.up()
        await asyncio.sleep(2.5)  # the fallback window passes; the next call tries the store again
        bot.fake.clear()
        await bot.mention("and where does the secret come from?", thread_ts=first.anchor_ts)
        await bot.answered(3)
        assert "memory off" not in " ".join(footer_texts(bot))
        assert any("available again" in r.getMessage() for r in caplog.records)
        store = open_store(StateConfig(database_url=with_database(ADMIN_URL, name)))
        try:
            votes = store.votes()  # the vote cast while the store was down was written when it came back
            assert [(v.user_id, v.answer_id, v.vote) for v in votes] == [(USER, down.answer_id, "down")]
            deadline = time.monotonic() + 5  # the last answer's finish_answer runs just after its post
            while store.unfinished():
                assert time.monotonic() < deadline, store.unfinished()
                await asyncio.sleep(0.05)
        finally:
            store.close()
    finally:
        proxy.down()
        drop_database(name)


async def test_a_store_unreachable_at_start_is_not_fatal_and_its_password_is_never_logged(make_bot, caplog):
    secret = "s3cret-Pw-42"
    bot = await make_bot(ask_options=FAST, DATABASE_URL=f"postgresql://bot:{secret}@127.0.0.1:1/sz",
                         STATE_TIMEOUT_S="0.5")
    ack = await bot.slash("/sz-ask", QUESTION)
    assert ack.status == 200 and "Working on" in ack.body
    outcome = await bot.answered(1)
    assert outcome.ok and "memory off" in " ".join(footer_texts(bot))
    status = await asyncio.to_thread(bot.context.status)
    assert status["state"]["available"] is False
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "state store unavailable" in logged and secret not in logged
    assert secret not in json.dumps(status) and secret not in repr(bot.settings)


# -- configuration and the CLI ----------------------------------------------------------------------------

def test_state_settings_are_parsed_once_every_bad_value_reported_no_password_shown(tmp_path):
    base = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "REPO_PATH": str(tmp_path)}
    with pytest.raises(SettingsError) as err:
        Settings.from_env({**base, "DATABASE_URL": "mysql://bot:hunter22@db/x", "REPLICA_ID": "two words",
                           "STATE_TIMEOUT_S": "soon"}, dotenv_path=None)
    text = str(err.value)
    assert "DATABASE_URL" in text and "REPLICA_ID" in text and "STATE_TIMEOUT_S" in text
    assert "hunter22" not in text
    settings = Settings.from_env({**base, "DATABASE_URL": "postgresql://bot:hunter22@db:5432/sz",
                                  "REPLICA_ID": "web-1"}, dotenv_path=None)
    assert "hunter22" not in repr(settings) and "postgresql://bot:***@db:5432/sz" in repr(settings)
    config = settings.state_config(tmp_path / "index.sqlite")
    assert config.database_url.endswith("/sz") and config.replica_id == "web-1" and "hunter22" not in repr(config)
    local = Settings.from_env(base, dotenv_path=None)
    assert local.state_config(tmp_path / "ix" / "index.sqlite").path == tmp_path / "ix" / "state.sqlite"
    assert local.replica_id.endswith(f"-{os.getpid()}")
    elsewhere = Settings.from_env({**base, "STATE_PATH": str(tmp_path / "s.db")}, dotenv_path=None)
    assert elsewhere.state_config(tmp_path / "index.sqlite").path == tmp_path / "s.db"


def test_the_state_command_shows_and_prunes_the_store(tmp_path, monkeypatch, backend):
    store = backend.open()
    store.claim("event:old", ttl_s=1, now=1.0)
    store.append_turns("C1:1.0", [("user", "q"), ("assistant", "a")])
    monkeypatch.setenv("REPO_PATH", str(tmp_path))
    for key, value in backend.env.items():
        monkeypatch.setenv(key, value)
    from bot.cli import cli

    shown = CliRunner().invoke(cli, ["state", "--json"])
    assert shown.exit_code == 0, shown.output
    info = json.loads(shown.output)
    assert info["backend"] == backend.kind and info["counts"]["claims"] == 1 and info["counts"]["turns"] == 2
    pruned = CliRunner().invoke(cli, ["state", "--prune"])
    assert pruned.exit_code == 0, pruned.output
    assert "pruned" in pruned.output and "claims 1" in pruned.output
    assert store.counts()["claims"] == 0 and store.counts()["turns"] == 2


# -- the ack path ----------------------------------------------------------------------------------

async def test_ack_path_store_calls_do_not_queue_behind_a_busy_default_executor(backend):
    """Under load the loop's default executor is full of retrievals and reindex work; a claim on
    Slack's 3-second ack path must still reach the store within its 1 s bound, not fall back."""
    from concurrent.futures import ThreadPoolExecutor

    import threading

    state = ResilientState(backend.open(), replica_id="web-1", owned=False)
    loop = asyncio.get_running_loop()
    busy = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(busy)
    release = threading.Event()
    blocker = asyncio.ensure_future(asyncio.to_thread(release.wait, 10))  # the one default worker is taken
    try:
        started = time.monotonic()
        ok, claimed = await state.acall("claim", lambda s: s.claim(f"event:{uuid.uuid4().hex}", 60), timeout_s=1.0)
        assert ok and claimed is True, "the claim fell back to memory: it waited for the default executor"
        assert time.monotonic() - started < 1.0
        assert await state.awrite("votes", lambda s: None) is True
    finally:
        release.set()
        await blocker
        state.close()
    assert await state.acall("claim", lambda s: s.claim("event:after-close", 60)) == (False, None)
