"""Who may call the HTTP API (issue 13): the admin token off loopback, Host and Origin checks.

The real app on 127.0.0.1 (conftest ``make_bot``); the rule reads the configured ``HOST`` and
``PUBLIC_HOSTS``, so ``HOST=0.0.0.0`` makes the same app "reachable from other hosts".
"""
from __future__ import annotations

import json

from slack_fake import ADMIN_TOKEN

from bot.settings import Settings

READ_ONLY = ("/api/status", "/api/commands", "/api/release", "/api/logs", "/api/metrics", "/api/routes", "/metrics")
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
QUESTION = {"question": "where is the deploy webhook signature checked?", "with_ai": False}


async def get(bot, path: str, **headers) -> tuple[int, dict | str]:
    async with bot.session.get(bot.base_url + path, headers=headers) as response:
        text = await response.text()
        return response.status, json.loads(text) if response.content_type == "application/json" else text


async def ask(bot, **headers) -> tuple[int, dict | None]:
    async with bot.session.post(bot.base_url + "/api/ask", json=QUESTION, headers=headers) as response:
        body = await response.json() if response.content_type == "application/json" else None
        await response.read()
        return response.status, body


async def test_a_server_bound_off_loopback_needs_the_token_for_every_route_but_healthz(make_bot):
    bot = await make_bot(HOST="0.0.0.0")
    for path in READ_ONLY:
        status, body = await get(bot, path)
        assert status == 403 and "ADMIN_API_TOKEN" in body["message"], path
    assert (await get(bot, "/healthz"))[0] == 200
    status, body = await ask(bot)
    assert status == 403 and "ADMIN_API_TOKEN" in body["message"]


async def test_with_the_token_set_an_exposed_server_answers_bearers_only(make_bot):
    bot = await make_bot(HOST="0.0.0.0", ADMIN_API_TOKEN=ADMIN_TOKEN)
    for path in READ_ONLY:
        status, body = await get(bot, path)
        assert status == 401 and body["error"] == "unauthorized", path
        assert (await get(bot, path, Authorization="Bearer wrong-token-0123456789"))[0] == 401, path
        assert (await get(bot, path, **BEARER))[0] == 200, path
    assert (await ask(bot))[0] == 401
    assert (await ask(bot, **BEARER))[0] == 200


async def test_public_hosts_mark_a_loopback_server_behind_a_proxy_as_exposed(make_bot):
    bot = await make_bot(PUBLIC_HOSTS="bot.example.com", ADMIN_API_TOKEN=ADMIN_TOKEN)
    assert (await get(bot, "/api/status"))[0] == 401  # from 127.0.0.1, as a reverse proxy's requests are
    assert (await get(bot, "/api/status", **BEARER))[0] == 200
    assert (await ask(bot, Host="bot.example.com"))[0] == 401
    assert (await ask(bot, Host="bot.example.com", **BEARER))[0] == 200
    status, body = await ask(bot, Host="other.example.com", **BEARER)
    assert status == 403 and body["error"] == "forbidden_host" and "PUBLIC_HOSTS" in body["message"]


async def test_a_local_server_refuses_other_host_names_dns_rebinding(make_bot):
    bot = await make_bot()
    port = bot.base_url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost"):
        assert (await get(bot, "/api/status", Host=host))[0] == 200, host
    for path in READ_ONLY:
        status, body = await get(bot, path, Host=f"rebound.example.net:{port}")
        assert status == 403 and body["error"] == "forbidden_host", path
    status, body = await ask(bot, Host=f"rebound.example.net:{port}")
    assert status == 403 and body["error"] == "forbidden_host"
    assert (await get(bot, "/healthz", Host=f"rebound.example.net:{port}"))[0] == 200


async def test_api_ask_refuses_browser_cross_site_requests(make_bot):
    bot = await make_bot()
    port = bot.base_url.rsplit(":", 1)[1]
    refused = [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://localhost:8080", "Host": f"localhost:{port}"},  # another port of this machine
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ]
    for headers in refused:
        status, body = await ask(bot, **headers)
        assert status == 403 and body["error"] == "cross_site", headers
    for headers in ({}, {"Origin": f"http://127.0.0.1:{port}"}, {"Sec-Fetch-Site": "same-origin"},
                    {"Sec-Fetch-Site": "none"}):
        assert (await ask(bot, **headers))[0] == 200, headers
    # the token does not make a foreign page's request acceptable
    tokened = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    assert (await ask(tokened, Origin="https://evil.example", **BEARER))[0] == 403


def test_the_exposure_rule():
    from bot.api.exposure import host_name, is_exposed, is_loopback_host

    def settings(**env):
        return Settings.from_env(env, dotenv_path=None, require_slack=False)

    assert not is_exposed(settings()) and not is_exposed(settings(HOST="localhost"))
    assert not is_exposed(settings(HOST="::1"))
    assert is_exposed(settings(HOST="0.0.0.0")) and is_exposed(settings(HOST="::"))
    assert is_exposed(settings(HOST="10.0.0.5")) and is_exposed(settings(HOST="bot.internal"))
    assert is_exposed(settings(PUBLIC_HOSTS="bot.example.com"))
    assert [host_name(h) for h in ("Bot.Example.com:443", "[::1]:3000", "127.0.0.1", "a:b:c", "")] == [
        "bot.example.com", "::1", "127.0.0.1", None, None]
    assert is_loopback_host("127.8.9.10") and is_loopback_host("x.localhost") and not is_loopback_host("10.0.0.1")
    assert not is_loopback_host("localhost.example.com")
