"""A local Socket Mode endpoint: the WebSocket that Slack's ``apps.connections.open`` URL points at.

    async with SocketModeServer() as slack:
        fake.socket_mode_url = slack.url           # tests/slack_fake.py answers apps.connections.open with it
        ...start the bot with SLACK_APP_TOKEN...   # slack_sdk's SocketModeClient connects here
        await slack.wait_connected()
        envelope_id = await slack.send_event({"type": "app_mention", ...}, event_id="Ev1", retry_attempt=0)
        await slack.wait_ack(envelope_id)
        await slack.down()                         # connections closed, new ones refused (an outage)

An aiohttp WebSocket server on 127.0.0.1, port 0. Each connection is greeted with Slack's
``{"type": "hello"}``; envelopes are sent in Slack's Socket Mode shape (``envelope_id``,
``type: events_api``, ``payload``, ``retry_attempt``, ``retry_reason``,
docs.slack.dev/apis/events-api/using-socket-mode), and the client's acknowledgements
(``{"envelope_id": …}``) are recorded. aiohttp answers the client's pings (autoping), as
Slack does.
"""
from __future__ import annotations

import asyncio
import json
import time
import uuid

from aiohttp import WSMsgType, web

__all__ = ["SocketModeServer", "event_envelope"]


def event_envelope(event: dict, *, event_id: str, retry_attempt: int = 0, retry_reason: str = "",
                   envelope_id: str | None = None) -> dict:
    """An ``events_api`` envelope wrapping an ``event_callback`` for ``event`` (as Slack sends it)."""
    return {
        "envelope_id": envelope_id or str(uuid.uuid4()), "type": "events_api", "accepts_response_payload": False,
        "retry_attempt": retry_attempt, "retry_reason": retry_reason,
        "payload": {"token": "legacy-verification-token", "team_id": "T0TEAM", "api_app_id": "A0APP",
                    "type": "event_callback", "event_id": event_id, "event_time": int(time.time()), "event": event,
                    "authorizations": [{"team_id": "T0TEAM", "user_id": "U0BOT", "is_bot": True}]},
    }


class SocketModeServer:
    """Use as ``async with SocketModeServer() as slack:``; ``slack.url`` is the ``wss`` URL to hand out."""

    def __init__(self) -> None:
        self.acks: list[dict] = []
        self.connections = 0
        self._sockets: set[web.WebSocketResponse] = set()
        self._accepting = True
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def __aenter__(self) -> "SocketModeServer":
        app = web.Application()
        app.router.add_get("/link", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        await self.down()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link"

    @property
    def connected(self) -> bool:
        return any(not ws.closed for ws in self._sockets)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if not self._accepting:
            return web.Response(status=503, text="down")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections += 1
        self._sockets.add(ws)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "connection_info": {"app_id": "A0APP"}}))
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    data = json.loads(message.data)
                    if "envelope_id" in data:
                        self.acks.append(data)
        finally:
            self._sockets.discard(ws)
        return ws

    async def wait_connected(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.connected:
            assert time.monotonic() < deadline, "the Socket Mode client never connected"
            await asyncio.sleep(0.02)

    async def send(self, envelope: dict) -> str:
        """Send ``envelope`` to the connected client; returns its ``envelope_id``."""
        await self.wait_connected()
        ws = next(ws for ws in self._sockets if not ws.closed)
        await ws.send_str(json.dumps(envelope))
        return envelope["envelope_id"]

    async def send_event(self, event: dict, *, event_id: str, retry_attempt: int = 0,
                         retry_reason: str = "") -> str:
        return await self.send(event_envelope(event, event_id=event_id, retry_attempt=retry_attempt,
                                              retry_reason=retry_reason))

    async def wait_ack(self, envelope_id: str, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for ack in self.acks:
                if ack.get("envelope_id") == envelope_id:
                    return ack
            assert time.monotonic() < deadline, f"envelope {envelope_id} was never acknowledged"
            await asyncio.sleep(0.02)

    async def down(self) -> None:
        """Close every connection and refuse new ones (HTTP 503 on the upgrade)."""
        self._accepting = False
        for ws in list(self._sockets):
            await ws.close()

    def up(self) -> None:
        """Accept connections again."""
        self._accepting = True
