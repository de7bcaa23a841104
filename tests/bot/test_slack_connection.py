"""The connection to Slack (issue 13): a rejected token stops the start, /healthz tells the truth,
a bot without Slack for SLACK_UNREACHABLE_EXIT_S exits non-zero.

The real server (:func:`bot.server.start`) and the real ``slackzilla serve`` in a subprocess, with
the Web API at the local fake (tests/slack_fake.py), behind a TCP forwarder the test takes down
and brings back (tests/tcp_proxy.py), and in Socket Mode a local WebSocket endpoint
(tests/socket_mode_server.py) that slack_sdk's client connects to.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
from slack_fake import BOT_TOKEN, SIGNING_SECRET, SlackFake
from socket_mode_server import SocketModeServer
from tcp_proxy import TcpProxy

from bot.settings import Settings

APP_TOKEN = "xapp-1-test-app-token"


def serve_env(bot_repo: Path, tmp_path: Path, api_url: str, **extra: str) -> dict:
    return {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "REPO_PATH": str(bot_repo),
            "RAG_INDEX_PATH": str(tmp_path / "index.sqlite"), "SLACK_API_URL": api_url, "PORT": "0",
            "REINDEX_INTERVAL_S": "0", **extra}


async def healthz(server) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{server.port}/healthz") as response:
            return response.status, await response.json()


async def until(predicate, *, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


@pytest.fixture
def proxied_fake(slack_fake):
    """``(fake, proxy, api_url)``: the Web API fake reached through a TCP forwarder."""
    port = urlsplit(slack_fake.base).port
    proxy = TcpProxy(("127.0.0.1", port))
    proxy.up()
    yield slack_fake, proxy, f"http://127.0.0.1:{proxy.port}/api/"
    proxy.down()


async def test_http_mode_healthz_follows_the_web_api_and_the_bot_gives_up_after_the_timeout(
        proxied_fake, bot_repo, tmp_path):
    from bot.server import start
    from bot.slack.health import SlackUnreachableError

    fake, proxy, api_url = proxied_fake
    settings = Settings.from_env(serve_env(bot_repo, tmp_path, api_url, SLACK_UNREACHABLE_EXIT_S="1.5"),
                                 dotenv_path=None)
    server = await start(settings)
    try:
        status, body = await healthz(server)
        assert status == 200 and body["ok"] is True and body["slack"]["web_api"] == "ok"
        proxy.down()  # Slack unreachable

        async def unhealthy() -> bool:
            return (await healthz(server))[0] == 503

        await until(unhealthy, what="/healthz to say Slack is unreachable")
        status, body = await healthz(server)
        assert body["ok"] is False and body["slack"]["web_api"] == "unreachable"
        assert "exit_in_s" in body["slack"] and not server.watch_task.done()
        proxy.up()  # back before the timeout: healthy again, no exit

        async def healthy() -> bool:
            return (await healthz(server))[0] == 200

        await until(healthy, what="/healthz to recover")
        proxy.down()
        started = time.monotonic()
        error = await asyncio.wait_for(server.wait_fatal(), timeout=10)
        assert isinstance(error, SlackUnreachableError) and "SLACK_UNREACHABLE_EXIT_S" in str(error)
        assert 1.0 <= time.monotonic() - started <= 6
    finally:
        await server.stop()


async def test_socket_mode_healthz_reports_the_websocket_and_a_rejected_app_token_stops_the_start(
        slack_fake, bot_repo, tmp_path):
    from bot.server import start
    from bot.slack.health import SlackAuthError, SlackUnreachableError

    async with SocketModeServer() as slack:
        slack_fake.socket_mode_url = slack.url
        env = serve_env(bot_repo, tmp_path, slack_fake.api_url, SLACK_APP_TOKEN=APP_TOKEN,
                        SLACK_UNREACHABLE_EXIT_S="2")
        server = await start(Settings.from_env(env, dotenv_path=None))
        try:
            await slack.wait_connected()

            async def connected() -> bool:
                status, body = await healthz(server)
                return status == 200 and body["slack"]["socket"] == "connected"

            await until(connected, what="/healthz to report the WebSocket")
            await slack.down()  # the WebSocket drops and reconnecting fails

            async def disconnected() -> bool:
                status, body = await healthz(server)
                return status == 503 and body["slack"]["socket"] == "disconnected" and body["ok"] is False

            await until(disconnected, what="/healthz to report the lost WebSocket")
            error = await asyncio.wait_for(server.wait_fatal(), timeout=15)
            assert isinstance(error, SlackUnreachableError) and "Socket Mode" in str(error)
        finally:
            await server.stop()

        slack_fake.fail["apps.connections.open"] = "invalid_auth"
        with pytest.raises(SlackAuthError, match=r"Slack rejected SLACK_APP_TOKEN \(invalid_auth\)"):
            await start(Settings.from_env(env, dotenv_path=None))


def _script() -> str:
    found = shutil.which("slackzilla") or str(Path(sys.executable).with_name("slackzilla"))
    assert Path(found).exists(), "the slackzilla console script is not installed (pip install -e .)"
    return found


def _serve(env: dict, timeout: float) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AI_", "ADMIN_"))}
    try:
        return subprocess.run([_script(), "serve"], env={**clean, **env}, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr.decode("utf-8", "replace") if isinstance(err.stderr, bytes) else err.stderr
        raise AssertionError(f"`slackzilla serve` was still running after {timeout} s; stderr: {stderr}") from None


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked", "account_inactive"])
def test_serve_with_a_token_slack_rejects_says_so_once_and_exits_non_zero(slack_fake, bot_repo, tmp_path, error):
    slack_fake.fail["auth.test"] = error
    done = _serve(serve_env(bot_repo, tmp_path, slack_fake.api_url), timeout=60)
    assert done.returncode == 1
    assert done.stderr.count(f"Slack rejected SLACK_BOT_TOKEN ({error})") == 1, done.stderr
    assert "Traceback" not in done.stderr and BOT_TOKEN not in done.stderr
    assert [c.method for c in slack_fake.calls] == ["auth.test"]  # checked once, nothing served


def test_serve_without_slack_exits_non_zero_after_the_timeout(bot_repo, tmp_path):
    with SlackFake() as fake:
        closed = fake.api_url
    started = time.monotonic()
    done = _serve(serve_env(bot_repo, tmp_path, closed, SLACK_UNREACHABLE_EXIT_S="1"), timeout=60)
    assert done.returncode == 1, done.stderr
    assert "Slack has not been reachable" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("error: Slack has not been reachable") == 1
    assert time.monotonic() - started < 45


def test_health_logs_an_outage_once_and_its_end_once(caplog):
    from bot.slack.health import SlackHealth

    now = [100.0]
    health = SlackHealth(socket_mode=True, clock=lambda: now[0], exit_after_s=300)
    assert health.ok and health.to_json()["socket"] == "connecting"  # nothing checked: not a failure
    caplog.set_level("INFO", logger="bot.slack.health")
    health.record(web_api="ok", socket="connecting")
    assert not health.ok  # checked, and the WebSocket is not up yet
    now[0] += 1
    health.record(web_api="ok", socket="connected")
    assert health.ok and health.down_for() == 0
    for _ in range(5):
        now[0] += 10
        health.record(web_api="unreachable", socket="disconnected", error="ClientConnectorError: refused")
    assert not health.ok and health.down_for() == 40
    assert health.to_json()["exit_in_s"] == 260
    now[0] += 10
    health.record(web_api="ok", socket="connected")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "waiting for the Socket Mode connection" and messages[1] == "Socket Mode connected"
    assert [m for m in messages if m.startswith("Slack is not reachable")] == [
        "Slack is not reachable (web API unreachable: ClientConnectorError: refused; Socket Mode disconnected); "
        "exiting after 300 s without Slack; /healthz reports it"]
    assert messages[-1] == "Slack is reachable again after 50 s" and len(messages) == 4
