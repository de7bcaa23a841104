"""Benchmark stand-ins for Slack's Web API and a slow OpenAI-compatible model (``slackzilla bench --load``).

**Not for production, and not fakes of the unit under test:** the load benchmark runs the real
bot (``slackzilla serve``) and needs the two remote services it talks to. This module serves
both from one aiohttp application in its own process, so their work never competes with the
bot's event loop or GIL (on a real deployment they are other machines):

``POST /v1/chat/completions``
    A streamed chat completion (``stream: true`` only) in OpenAI's SSE shape: a role chunk,
    ``answer_tokens`` content chunks of one word each, ``token_delay_s`` apart, a
    ``finish_reason: stop`` chunk, a usage chunk (``choices == []``) and ``data: [DONE]``.
    Every answer starts with :data:`ANSWER_MARKER` so the recorder can tell a model answer
    from the bot's local fallback.
``POST /api/<method>``
    The Web API methods the bot calls (``auth.test``, ``chat.postMessage``, ``chat.update``,
    ``chat.postEphemeral``, ``chat.startStream`` / ``appendStream`` / ``stopStream``,
    ``conversations.replies``), answered the way Slack answers them; unknown methods get
    ``{"ok": false, "error": "unknown_method"}``. Each call is recorded.
``POST /response_url/<name>``
    A slash command's ``response_url``; the posted text is recorded under ``name``.
``GET /_bench/summary``
    What was recorded (:meth:`Recorder.summary`).

The recorder counts, per channel, the messages that carry an answer's feedback buttons
(block ``sz_feedback``, :data:`bot.slack.render.FEEDBACK_BLOCK_ID`): the benchmark gives
every question its own channel, so exactly one such message per channel means the
answer arrived once.

Run ``python -m bot.bench.standins [--token-delay-ms 40] [--answer-tokens 120]``: it prints
``{"port": N}`` on its first stdout line and serves on 127.0.0.1 until SIGTERM/SIGINT.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from aiohttp import web

from bot.slack.messages import memory_off_note
from bot.slack.render import FEEDBACK_BLOCK_ID

__all__ = ["ANSWER_MARKER", "ModelStandIn", "Recorder", "build_app", "main"]

ANSWER_MARKER = "Benchmark answer:"
"""First words of every model answer the stand-in streams."""
DEFAULT_TOKEN_DELAY_S = 0.040
DEFAULT_ANSWER_TOKENS = 120
_WORDS = ("the", "index", "is", "updated", "by", "the", "reindexer", "which", "walks", "the", "repository",
          "and", "parses", "each", "changed", "file", "before", "it", "commits", "one", "new", "generation")
_TEXT_KEPT = 300
"""Characters of each recorded ``response_url`` text kept for the summary."""


@dataclass
class Recorder:
    """What the Slack stand-in received (wall-clock times, epoch seconds)."""

    methods: Counter = field(default_factory=Counter)
    finals: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    finals_from_model: Counter = field(default_factory=Counter)
    finals_memory_off: Counter = field(default_factory=Counter)
    responses: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    model_requests: list[float] = field(default_factory=list)
    model_streams_done: int = 0
    _ts: itertools.count = field(default_factory=lambda: itertools.count(1))

    def next_ts(self) -> str:
        """A message timestamp in Slack's ``seconds.micro`` form, unique per stand-in."""
        return f"1700000000.{next(self._ts):06d}"

    def record_message(self, method: str, body: dict) -> None:
        """Count ``method``; a message with feedback buttons counts as a final answer in its channel."""
        self.methods[method] += 1
        blocks = body.get("blocks")
        if not isinstance(blocks, list):
            return
        if any(isinstance(b, dict) and b.get("block_id") == FEEDBACK_BLOCK_ID for b in blocks):
            channel = str(body.get("channel", ""))
            self.finals[channel].append(time.time())
            text = json.dumps(blocks, ensure_ascii=False) + str(body.get("text", ""))
            if ANSWER_MARKER in text:
                self.finals_from_model[channel] += 1
            if memory_off_note() in text:
                self.finals_memory_off[channel] += 1

    def summary(self) -> dict:
        """``{"methods": {method: n}, "finals": {channel: [epoch s, …]}, "finals_from_model": {channel: n},
        "finals_memory_off": {channel: n},
        "responses": {name: [text, …]}, "model_requests": [epoch s, …], "model_streams_done": n}``."""
        return {"methods": dict(self.methods), "finals": dict(self.finals),
                "finals_from_model": dict(self.finals_from_model),
                "finals_memory_off": dict(self.finals_memory_off), "responses": dict(self.responses),
                "model_requests": self.model_requests, "model_streams_done": self.model_streams_done}


@dataclass(frozen=True)
class ModelStandIn:
    """How the model stand-in streams: ``answer_tokens`` words, ``token_delay_s`` apart."""

    token_delay_s: float = DEFAULT_TOKEN_DELAY_S
    answer_tokens: int = DEFAULT_ANSWER_TOKENS

    def words(self) -> list[str]:
        """The answer, one streamed word per item, starting with :data:`ANSWER_MARKER`."""
        words = ANSWER_MARKER.split() + [_WORDS[i % len(_WORDS)] for i in range(self.answer_tokens)]
        return [w + " " for w in words[:-1]] + [words[-1] + "."]


def _chunk(delta: dict | None, *, finish_reason: str | None = None, usage: dict | None = None) -> bytes:
    body: dict = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()),
                  "model": "bench-model", "choices": []}
    if delta is not None:
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _decode(raw: bytes, content_type: str) -> dict:
    if not raw:
        return {}
    if "application/json" in content_type:
        with contextlib.suppress(ValueError):
            value = json.loads(raw)
            return value if isinstance(value, dict) else {}
        return {}
    body: dict = {}
    for key, value in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        if value[:1] in ("[", "{"):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        body[key] = value
    return body


_BOT = {"team_id": "T0BENCH", "user_id": "U0BOT", "bot_id": "B0BOT", "team": "Bench", "user": "slackzilla"}


def build_app(recorder: Recorder, model: ModelStandIn) -> web.Application:
    """The aiohttp application serving both stand-ins (module docstring)."""

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        recorder.model_requests.append(time.time())
        if not body.get("stream"):
            return web.json_response({"error": {"message": "the benchmark stand-in only streams"}}, status=400)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        try:
            await response.write(_chunk({"role": "assistant", "content": ""}))
            words = model.words()
            for word in words:
                await asyncio.sleep(model.token_delay_s)
                await response.write(_chunk({"content": word}))
            await response.write(_chunk({}, finish_reason="stop"))
            await response.write(_chunk(None, usage={"prompt_tokens": 1000, "completion_tokens": len(words),
                                                     "total_tokens": 1000 + len(words)}))
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
            recorder.model_streams_done += 1
        except ConnectionResetError:  # the bot gave up (deadline, shutdown)
            pass
        return response

    async def web_api(request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = _decode(await request.read(), request.headers.get("Content-Type", ""))
        recorder.record_message(method, body)
        channel = body.get("channel", "C0BENCH")
        if method == "auth.test":
            payload = {"ok": True, "url": "https://bench.slack.invalid/", **_BOT}
        elif method in ("chat.postMessage", "chat.startStream"):
            ts = recorder.next_ts()
            payload = {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts, "bot_id": _BOT["bot_id"]}}
        elif method in ("chat.update", "chat.appendStream", "chat.stopStream"):
            payload = {"ok": True, "channel": channel, "ts": body.get("ts")}
        elif method == "chat.postEphemeral":
            payload = {"ok": True, "message_ts": recorder.next_ts()}
        elif method == "conversations.replies":
            payload = {"ok": True, "messages": [], "has_more": False}
        else:
            payload = {"ok": False, "error": "unknown_method"}
        return web.json_response(payload)

    async def response_url(request: web.Request) -> web.Response:
        body = _decode(await request.read(), request.headers.get("Content-Type", ""))
        name = request.match_info["name"]
        recorder.record_message("response_url", body)
        recorder.responses[name].append(str(body.get("text", ""))[:_TEXT_KEPT])
        return web.Response(text="ok")

    async def summary(_request: web.Request) -> web.Response:
        return web.json_response(recorder.summary())

    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_post("/api/{method}", web_api)
    app.router.add_get("/api/{method}", web_api)
    app.router.add_post("/response_url/{name}", response_url)
    app.router.add_get("/_bench/summary", summary)
    return app


async def _serve(model: ModelStandIn) -> None:
    runner = web.AppRunner(build_app(Recorder(), model), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(json.dumps({"port": port}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    """``python -m bot.bench.standins``: serve both stand-ins until SIGTERM (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m bot.bench.standins", description=__doc__.splitlines()[0])
    parser.add_argument("--token-delay-ms", type=float, default=DEFAULT_TOKEN_DELAY_S * 1000)
    parser.add_argument("--answer-tokens", type=int, default=DEFAULT_ANSWER_TOKENS)
    args = parser.parse_args(argv)
    asyncio.run(_serve(ModelStandIn(token_delay_s=args.token_delay_ms / 1000, answer_tokens=args.answer_tokens)))


if __name__ == "__main__":
    sys.exit(main())
