"""The HTTP API on the bot's aiohttp server: JSON routes, Prometheus text, admin token, SSE /api/ask."""
from __future__ import annotations

import json

from openai._streaming import SSEDecoder  # the SDK's own SSE decoder: no hand-written parser here
from openai_server import FakeOpenAIServer, Reply, chunk, text_reply
from slack_fake import ADMIN_TOKEN

from commands.registry import CommandSpec


async def get(bot, path: str, **kwargs):
    async with bot.session.get(bot.base_url + path, **kwargs) as response:
        body = await response.read()
        return response.status, response.headers, body


def events(raw: bytes) -> list:
    return list(SSEDecoder().iter_bytes(iter([raw])))


async def test_read_only_routes(make_bot):
    bot = await make_bot()
    await bot.slash("/sz-ping")
    await bot.fake.wait_for("response_url")

    status, _, body = await get(bot, "/healthz")
    assert status == 200 and json.loads(body)["ok"] is True

    status, _, body = await get(bot, "/api/status")
    data = json.loads(body)
    assert status == 200
    assert data["index"]["generation"] >= 1 and data["index"]["files"] == 3 and data["index"]["ready"]
    assert data["repo"] == "repo" and data["mode"] == "http" and data["model"] is None
    assert data["version"] and data["uptime_s"] >= 0 and data["reindex"]["running"] is False

    status, _, body = await get(bot, "/api/commands")
    commands = {c["id"]: c for c in json.loads(body)["commands"]}
    assert commands["hash"]["name"] == "/sz-hash" and commands["hash"]["ai_safe"] is True
    assert commands["reindex"]["admin_only"] is True and len(commands) == len(bot.context.registry)

    status, _, body = await get(bot, "/api/release")
    release = json.loads(body)
    assert release["name"] == "slackzilla" and release["version"]
    assert release["changelog"]["title"].startswith("[0.1.0]") and "### Added" in release["changelog"]["body"]

    status, _, body = await get(bot, "/api/logs?limit=200&level=info")
    logs = json.loads(body)["logs"]
    assert status == 200 and any("command id=ping" in entry["message"] for entry in logs)
    assert all("stack" not in entry for entry in logs)

    status, _, body = await get(bot, "/api/metrics")
    ping = json.loads(body)["commands"]["ping"]
    assert ping["count"] == 1 and ping["failed"] == 0 and ping["p50_ms"] is not None

    status, headers, body = await get(bot, "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert 'slackzilla_commands_total{command="ping",result="ok"} 1.0' in body.decode()

    status, _, body = await get(bot, "/api/routes")
    [route] = json.loads(body)["routes"]
    assert (route["method"], route["route"], route["path"], route["line"]) == ("POST", "/deploy", "src/server.js", 5)
    for query, count in (("path=deploy&method=post", 1), ("method=GET", 0), ("path=/users", 0)):
        status, _, body = await get(bot, f"/api/routes?{query}")
        assert len(json.loads(body)["routes"]) == count, query


async def test_bad_query_parameters_are_clear(make_bot):
    bot = await make_bot()
    for query, expected in (("limit=abc", "whole number"), ("limit=0", "between 1 and 500"),
                            ("level=loud", "unknown log level")):
        status, _, body = await get(bot, f"/api/logs?{query}")
        assert status == 400 and expected in json.loads(body)["message"], query
    status, _, body = await get(bot, "/api/logs?include_stack=1")
    assert status == 403  # stack traces only with the admin token


async def test_admin_errors_is_off_without_a_token(make_bot):
    bot = await make_bot()
    status, _, body = await get(bot, "/api/admin/errors")
    assert status == 404 and "ADMIN_API_TOKEN" in json.loads(body)["message"]


async def test_admin_errors_needs_the_bearer_token(make_bot):
    def explode(request):
        raise ValueError("kaput")

    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN,
                         extra_specs=[CommandSpec("explode", "Always fails.", "", "fun", explode)])
    await bot.slash("/sz-explode")
    await bot.fake.wait_for("response_url")
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": ADMIN_TOKEN},
                    {"Authorization": f"Basic {ADMIN_TOKEN}"}, {"Authorization": f"Bearer {ADMIN_TOKEN}x"}):
        status, response_headers, _ = await get(bot, "/api/admin/errors", headers=headers)
        assert status == 401, headers
        assert response_headers["WWW-Authenticate"].startswith("Bearer")
    status, _, body = await get(bot, "/api/admin/errors", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    [error] = json.loads(body)["errors"]
    assert status == 200 and error["type"] == "ValueError" and error["command"] == "explode"
    assert "Traceback" not in error["stack"] or "explode" in error["stack"]
    status, _, body = await get(bot, "/api/logs?include_stack=1",
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert status == 200


async def test_ask_streams_activity_token_and_done_events(make_bot):
    answer = "It checks an HMAC of the body (src/webhook.js:4-7)."
    async with FakeOpenAIServer() as model:
        model.script(text_reply(answer, pieces=5, usage=(50, 10)))
        bot = await make_bot(AI_URL=model.base_url, AI_API_KEY="sk-test", AI_MODEL="fake-model")
        async with bot.session.post(bot.base_url + "/api/ask",
                                    json={"question": "how is the deploy webhook verified?"}) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/event-stream")
            raw = await response.read()
    stream = events(raw)
    kinds = [e.event for e in stream]
    assert kinds[-1] == "done" and "activity" in kinds and "token" in kinds
    assert kinds.index("activity") < kinds.index("token")
    tokens = "".join(e.json()["text"] for e in stream if e.event == "token")
    done = stream[-1].json()
    assert tokens == answer == done["answer"]
    assert done["sources"][0]["path"].startswith(("src/webhook.js", "README.md"))
    stages = {e.json()["stage"] for e in stream if e.event == "activity"}
    assert {"retrieval", "context", "ai"} <= stages
    assert bot.context.metrics()["asks"]["total"] == 1


async def test_ask_rejects_bad_bodies(make_bot):
    bot = await make_bot()
    for payload, expected in ((b"not json", "must be JSON"), (b'{"question": ""}', "non-empty"),
                              (b'{"question": 42}', "non-empty"), (b"[1, 2]", "non-empty"),
                              (b'{"question": "q", "with_ai": "yes"}', "with_ai"),
                              # a field the API does not take was ignored: the answer silently used defaults
                              (b'{"question": "q", "top_k": 3}', 'Unknown field(s): top_k'),
                              (b'{"question": "q", "repo": "web", "kind": "test"}', 'Unknown field(s): kind, repo'),
                              # nested past Python's recursion limit: RecursionError, an HTTP 500 with a traceback
                              (b"[" * 50_000, "must be JSON")):
        async with bot.session.post(bot.base_url + "/api/ask", data=payload,
                                    headers={"Content-Type": "application/json"}) as response:
            assert response.status == 400, payload
            assert expected in (await response.json())["message"], payload


async def test_ask_refuses_a_chunked_body_over_the_cap_with_a_json_413(make_bot):
    """Without Content-Length the 64 KiB cap was not applied: a chunked 500 KB question was answered,
    and one over aiohttp's 1 MiB default got a plain-text 413 instead of the API's JSON error."""
    from bot.api.routes import MAX_QUESTION_BODY_BYTES

    bot = await make_bot()
    for size in (MAX_QUESTION_BODY_BYTES + 10, 2 * 1024 * 1024):
        payload = json.dumps({"question": "where is the webhook verified? " + "x" * size}).encode()

        async def chunked(data=payload):
            for start in range(0, len(data), 16 * 1024):
                yield data[start:start + 16 * 1024]

        async with bot.session.post(bot.base_url + "/api/ask", data=chunked(),
                                    headers={"Content-Type": "application/json"}) as response:
            assert response.status == 413, size
            assert (await response.json()) == {"error": "too_large",
                                               "message": f"The body is larger than {MAX_QUESTION_BODY_BYTES} bytes."}
    async def small():
        yield json.dumps({"question": "where is the deploy webhook verified?", "with_ai": False}).encode()

    async with bot.session.post(bot.base_url + "/api/ask", data=small()) as response:
        assert response.status == 200 and events(await response.read())[-1].event == "done"


async def test_ask_stops_the_answer_when_the_client_goes_away(make_bot, caplog):
    """A client that disconnects mid-answer: the model kept streaming to the end (its tokens paid for),
    every batch of text failed to send and was logged as an ERROR ("Task exception was never
    retrieved", with a traceback), and "client went away" came only at the very end."""
    import asyncio
    import logging
    import time

    words = [chunk({"role": "assistant", "content": "word "})] * 60 + [chunk({}, finish_reason="stop"), "[DONE]"]
    async with FakeOpenAIServer() as model:
        model.script(Reply(events=words, gap_s=0.1))  # six seconds of streaming
        bot = await make_bot(AI_URL=model.base_url, AI_API_KEY="sk-test", AI_MODEL="fake-model")
        caplog.set_level(logging.INFO)
        async with bot.session.post(bot.base_url + "/api/ask",
                                    json={"question": "how is the deploy webhook verified?"}) as response:
            async for line in response.content:
                if line.startswith(b"event: token"):
                    break
            left = time.monotonic()
            response.close()
        while "client went away" not in caplog.text and time.monotonic() - left < 8:
            await asyncio.sleep(0.05)
        assert "client went away" in caplog.text
        assert time.monotonic() - left < 3, "the answer ran on after the client left"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "callback" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_ask_without_model_and_with_the_admin_token(make_bot):
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    body = {"question": "where is the deploy webhook signature checked?", "with_ai": False}
    async with bot.session.post(bot.base_url + "/api/ask", json=body) as response:
        assert response.status == 401
    async with bot.session.post(bot.base_url + "/api/ask", json=body,
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as response:
        assert response.status == 200
        stream = events(await response.read())
    done = stream[-1]
    assert done.event == "done" and done.json()["mode"] == "local"
    assert any(s["path"] == "src/webhook.js" for s in done.json()["sources"])

