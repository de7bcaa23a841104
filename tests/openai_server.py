"""A local OpenAI-compatible chat-completions server that speaks real SSE.

Tests point ``AsyncOpenAI(base_url=server.base_url)`` at it, so the SDK's own
HTTP client and SSE decoder run unchanged; only the provider is fake. It binds
``127.0.0.1`` on port 0 (aiohttp ``AppRunner`` + ``TCPSite``) and runs on the
test's event loop.

Each request to ``POST /v1/chat/completions`` consumes the next scripted
:class:`Reply`; the JSON body of every request is kept in ``server.requests``
so tests can assert on the exact messages the model received. Builders cover
what real providers do: plain answers, tool calls split across many chunks,
``: ping`` keep-alive comments, a usage chunk with ``choices == []``, no usage
at all, empty ``tool_calls`` arrays on content deltas, invalid-JSON arguments,
streams that stop without ``[DONE]`` or ``finish_reason``, HTTP errors and a
provider that hangs.

Usage::

    async with FakeOpenAIServer() as server:
        server.script(text_reply("Hello", usage=(10, 2)))
        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = [
    "FakeOpenAIServer",
    "Reply",
    "chunk",
    "error_reply",
    "hang_reply",
    "text_reply",
    "tool_reply",
    "usage_chunk",
    "split",
]

DONE = "[DONE]"
PING = ": ping"


@dataclass
class Reply:
    """One scripted HTTP response.

    Attributes:
        events: SSE items in order: a dict is sent as ``data: <json>``, ``"[DONE]"``
            as ``data: [DONE]``, a string starting with ``:`` as a raw comment line,
            a string starting with ``raw:`` as the SSE block after the prefix, verbatim
            (``raw:event: ping\ndata:``, ``raw:retry: 3000``), any other string as
            ``data: <string>`` verbatim (for malformed JSON), ``bytes`` as the SSE block
            verbatim (text that is not UTF-8).
        status: HTTP status; anything but 200 sends ``error_body`` as JSON instead.
        error_body: the JSON body of an error response.
        hang_s: seconds to wait after the headers (streaming) or before answering
            (errors) — a provider that hangs; released when the server stops.
        gap_s: pause between events, in seconds.
        tail_s: after the events, keep the stream open this long with ``: ping``
            keep-alives every 0.2 s before ending it (a provider that lingers).
        headers: extra response headers (``Retry-After`` on a 429).
        drop: after the events, close the connection without ending the response (a provider or
            proxy that dies mid-answer: the client sees an incomplete chunked body).
    """

    events: list[Any] = field(default_factory=list)
    status: int = 200
    error_body: dict | None = None
    hang_s: float = 0.0
    gap_s: float = 0.0
    tail_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


def chunk(delta: dict | None = None, *, finish_reason: str | None = None, usage: dict | None = None,
          choices: bool = True) -> dict:
    """One ``chat.completion.chunk`` object (``choices=False`` gives ``choices == []``)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "fake-model",
        "choices": [],
    }
    if choices:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason, "logprobs": None}]
    if usage is not None:
        body["usage"] = usage
    return body


def usage_chunk(prompt: int, completion: int) -> dict:
    """The final usage chunk OpenAI sends with ``include_usage``: ``choices == []``."""
    return chunk(choices=False, usage={
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
    })


def split(text: str, pieces: int) -> list[str]:
    """Split ``text`` into ``pieces`` non-empty parts (fewer when the text is shorter)."""
    if not text:
        return [""]
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    out, pos = [], 0
    for i in range(pieces):
        step = size + (1 if i < extra else 0)
        out.append(text[pos:pos + step])
        pos += step
    return out


def text_reply(text: str, *, pieces: int = 3, usage: tuple[int, int] | None = None,
               finish_reason: str | None = "stop", done: bool = True, ping: bool = False,
               empty_tool_calls: bool = False, gap_s: float = 0.0) -> Reply:
    """A streamed plain answer.

    Args:
        text: the answer, sent in ``pieces`` content deltas.
        usage: ``(prompt, completion)`` → a trailing usage chunk with empty choices;
            ``None`` → no usage at all.
        finish_reason: sent on a last empty delta; ``None`` → never sent.
        done: send ``data: [DONE]`` at the end.
        ping: a ``: ping`` keep-alive comment before every event.
        empty_tool_calls: every content delta carries ``"tool_calls": []``.
    """
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    for piece in split(text, pieces):
        delta: dict[str, Any] = {"content": piece}
        if empty_tool_calls:
            delta["tool_calls"] = []
        events.append(chunk(delta))
    if finish_reason is not None:
        events.append(chunk({}, finish_reason=finish_reason))
    if usage is not None:
        events.append(usage_chunk(*usage))
    if done:
        events.append(DONE)
    if ping:
        events = [item for event in events for item in (PING, event)]
    return Reply(events=events, gap_s=gap_s)


def tool_reply(calls: list[tuple[str, str]], *, pieces: int = 4, usage: tuple[int, int] | None = None,
               content: str = "", done: bool = True, ids: bool = True) -> Reply:
    """A streamed assistant turn that calls tools.

    Args:
        calls: ``(name, arguments_json_text)`` per call; the arguments text is sent
            as is (so invalid JSON can be scripted), split over ``pieces`` deltas,
            and the calls are interleaved chunk by chunk to exercise index-based
            accumulation.
        content: optional text sent before the calls.
        ids: send a ``call_<n>`` id on each call's first delta.
    """
    events: list[Any] = [chunk({"role": "assistant", "content": content or None})]
    parts = [split(arguments, pieces) for _, arguments in calls]
    for index, (name, _) in enumerate(calls):
        first: dict[str, Any] = {"index": index, "type": "function", "function": {"name": name, "arguments": ""}}
        if ids:
            first["id"] = f"call_{index}"
        events.append(chunk({"tool_calls": [first]}))
    for step in range(max(len(p) for p in parts)):
        for index, pieces_of_call in enumerate(parts):
            if step < len(pieces_of_call):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": pieces_of_call[step]}}]}))
    events.append(chunk({}, finish_reason="tool_calls"))
    if usage is not None:
        events.append(usage_chunk(*usage))
    if done:
        events.append(DONE)
    return Reply(events=events)


def error_reply(status: int, message: str = "provider error") -> Reply:
    """An HTTP error response with OpenAI's error body."""
    return Reply(status=status, error_body={"error": {"message": message, "type": "server_error", "code": None}})


def hang_reply(seconds: float = 3600.0) -> Reply:
    """A provider that sends the stream headers and then nothing for ``seconds``."""
    return Reply(events=[], hang_s=seconds)


class FakeOpenAIServer:
    """The scripted server; use as ``async with FakeOpenAIServer() as server``.

    Attributes:
        requests: JSON bodies of the chat-completion requests received, in order.
        headers: the matching request headers (lower-case names).
        peers: the client ``(host, port)`` of each request's TCP connection (one pool reused
            across requests shows as one port).
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[tuple] = []
        self._replies: list[Reply] = []
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self.port = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — what ``AI_URL`` would hold."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests (one reply per request)."""
        self._replies.extend(replies)

    async def __aenter__(self) -> FakeOpenAIServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _wait(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(await request.json())
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        self.peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        if not self._replies:
            return web.json_response({"error": {"message": "no scripted reply left"}}, status=500)
        reply = self._replies.pop(0)
        if reply.status != 200:
            if reply.hang_s:
                await self._wait(reply.hang_s)
            return web.json_response(reply.error_body or {}, status=reply.status, headers=reply.headers)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        if reply.hang_s:
            await self._wait(reply.hang_s)
        try:
            for event in reply.events:
                if reply.gap_s:
                    await self._wait(reply.gap_s)
                if isinstance(event, bytes):
                    await response.write(event + b"\n\n")
                    continue
                if isinstance(event, dict):
                    line = "data: " + json.dumps(event)
                elif event.startswith(":"):
                    line = event
                elif event.startswith("raw:"):
                    line = event[len("raw:"):]
                else:
                    line = "data: " + event
                await response.write((line + "\n\n").encode())
            if reply.drop:
                await asyncio.sleep(0.05)  # the events reach the client first
                request.transport.close()
                return response
            deadline = asyncio.get_running_loop().time() + reply.tail_s
            while reply.tail_s and asyncio.get_running_loop().time() < deadline and not self._stopping.is_set():
                await response.write(b": ping\n\n")
                await self._wait(0.2)
            await response.write_eof()
        except ConnectionResetError:  # the client gave up (deadline, cancellation): fine
            pass
        return response
