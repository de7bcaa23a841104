"""A local stand-in for the Slack Web API and for ``response_url`` endpoints.

A stdlib ``http.server`` on 127.0.0.1, port 0, in a background thread. Point
``AsyncWebClient(base_url=fake.api_url)`` at it and put ``fake.response_url()``
in slash-command payloads; every request is recorded as a :class:`Call` and
answered the way Slack would for the methods the bot uses:

``auth.test``, ``chat.postMessage``, ``chat.update``, ``chat.delete``, ``chat.postEphemeral``,
``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream``,
``files.getUploadURLExternal`` + the upload POST + ``files.completeUploadExternal``
(what ``files_upload_v2`` calls), ``conversations.replies`` (``fake.replies[thread_ts] = [messages]``),
``chat.getPermalink``, ``usergroups.users.list`` (``fake.usergroups[id] = [user ids]``),
``apps.connections.open`` (Socket Mode: the WebSocket URL in ``fake.socket_mode_url``, see
tests/socket_mode_server.py) and ``response_url`` posts.
Unknown methods answer ``{"ok": false, "error": "unknown_method"}`` like Slack.

``fake.fail["chat.postMessage"] = "not_in_channel"`` makes a method fail with that
error (``ok: false``, HTTP 200); ``fake.fail_status["chat.update"] = 500`` makes every call
answer that HTTP status (``Retry-After: 1`` with 429); ``fake.script("chat.update",
rate_limited(retry_after=2), server_error())`` makes the next calls answer those
:class:`Scripted` replies in order, then normally again. ``"response_url"`` works as a method
name for all three (a 404 is what Slack answers for an expired or used-up ``response_url``).
``fake.refuse_blocks["chat.update"] = "invalid_blocks"`` refuses only the calls that carry blocks.
``fake.delay["chat.update"] = 1.5`` slows a method down (seconds);
``fake.refuse_streaming()`` makes the three ``chat.*Stream`` methods fail the way
Slack refuses streaming (``not_allowed`` by default).
``fake.answers()`` lists the messages that carry an answer's 👍/👎 buttons.

Modelled on slack_bolt's tests/mock_web_api_server (which uses a fixed port; this one doesn't).

:class:`BotHarness` drives a running app: ``await bot.slash("/sz-hash", "sha256 abc")``
sends a slash command signed the way Slack signs (``v0=`` HMAC-SHA256 of
``v0:<timestamp>:<body>`` with the signing secret, slack_sdk's ``SignatureVerifier``).
"""
from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import parse_qsl, urlencode

from slack_sdk.signature import SignatureVerifier

__all__ = ["SlackFake", "Call", "BotHarness", "Scripted", "SlashResponse", "ADMIN", "USER", "BOT_TOKEN",
           "SIGNING_SECRET", "ADMIN_TOKEN", "STREAM_METHODS", "rate_limited", "refused", "server_error"]

SIGNING_SECRET = "test-signing-secret-0123456789abcdef"
BOT_TOKEN = "xoxb-test-bot-token"
ADMIN = "U0ADMIN"
USER = "U0USER"
ADMIN_TOKEN = "admin-token-0123456789abcdef"

STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")

_BOT = {"team_id": "T0TEAM", "user_id": "U0BOT", "bot_id": "B0BOT", "team": "Test Team", "user": "slackzilla"}


@dataclass
class Call:
    """One request the fake received.

    ``method`` is the Web API method (``chat.postMessage``), ``response_url`` for
    response_url posts, or ``upload`` for file bytes; ``body`` is the decoded JSON or
    form body (JSON-encoded form values such as ``blocks`` are decoded too).
    """

    method: str
    body: dict
    headers: dict = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    #: the JSON the fake answered (``{}`` for a scripted HTTP error)
    reply: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line for reports: the method and the interesting keys."""
        keys = ("channel", "ts", "thread_ts", "response_type", "text", "markdown_text", "replace_original")
        shown = {k: self.body[k] for k in keys if k in self.body}
        if "text" in shown and isinstance(shown["text"], str) and len(shown["text"]) > 60:
            shown["text"] = shown["text"][:57] + "..."
        if "blocks" in self.body:
            shown["blocks"] = f"{len(self.body['blocks'])} blocks"
        return f"{self.method} {json.dumps(shown, ensure_ascii=False)}"


@dataclass(frozen=True)
class Scripted:
    """One scripted answer: an HTTP ``status`` (Slack's 429 carries ``Retry-After`` seconds and
    ``{"ok": false, "error": "ratelimited"}``; a 5xx an HTML page, as a load balancer sends it),
    or, with status 200, ``{"ok": false, "error": error}``."""

    status: int = 200
    error: str | None = None
    retry_after: int | None = None


def rate_limited(retry_after: int = 1) -> Scripted:
    """HTTP 429 with ``Retry-After: retry_after`` (Slack "Rate limits": the header gives seconds)."""
    return Scripted(429, "ratelimited", retry_after)


def server_error(status: int = 500) -> Scripted:
    return Scripted(status)


def refused(error: str) -> Scripted:
    """HTTP 200 with ``ok: false`` and ``error`` (``invalid_blocks``, ``msg_too_long`` …)."""
    return Scripted(200, error)


class SlackFake:
    """Start with ``with SlackFake() as fake:`` (or ``start()``/``stop()``)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.fail: dict[str, str] = {}
        self.fail_status: dict[str, int] = {}
        #: method → error answered (``ok: false``) to calls that carry ``blocks`` (text-only calls pass)
        self.refuse_blocks: dict[str, str] = {}
        self.delay: dict[str, float] = {}
        #: what ``apps.connections.open`` answers as ``url`` (a local Socket Mode server)
        self.socket_mode_url: str | None = None
        self._scripts: dict[str, list[Scripted]] = {}
        self.replies: dict[str, list[dict]] = {}
        self.usergroups: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------
    def start(self) -> "SlackFake":
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="slack-fake", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "SlackFake":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base(self) -> str:
        assert self._server is not None, "SlackFake not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        """The Web API base URL, with the trailing ``/`` ``AsyncWebClient`` expects."""
        return f"{self.base}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"{self.base}/response_url/{name}"

    # -- inspection ------------------------------------------------------
    def methods(self) -> list[str]:
        with self._lock:
            return [c.method for c in self.calls]

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    def script(self, method: str, *replies: Scripted) -> None:
        """Answer the next calls of ``method`` (or ``"response_url"``) with ``replies``, in order."""
        with self._lock:
            self._scripts.setdefault(method, []).extend(replies)

    def scripted(self, method: str) -> Scripted | None:
        """The answer due for a call of ``method`` now: the next scripted one, a persistent
        ``fail_status``/``fail``, or ``None`` (answer normally)."""
        with self._lock:
            queue = self._scripts.get(method)
            if queue:
                return queue.pop(0)
        if method in self.fail_status:
            status = self.fail_status[method]
            return Scripted(status, "ratelimited" if status == 429 else None, 1 if status == 429 else None)
        if method in self.fail:
            return Scripted(200, self.fail[method])
        return None

    def refuse_streaming(self, error: str = "not_allowed") -> None:
        """Make ``chat.startStream``/``appendStream``/``stopStream`` answer ``{"ok": false, "error": error}``."""
        for method in STREAM_METHODS:
            self.fail[method] = error

    def answers(self) -> list[Call]:
        """Calls (post, update, response_url) whose blocks hold the answer feedback buttons."""
        with self._lock:
            snapshot = list(self.calls)
        return [c for c in snapshot if any(
            isinstance(b, dict) and b.get("type") == "actions" and b.get("block_id") == "sz_feedback"
            for b in (c.body.get("blocks") or []) if isinstance(c.body.get("blocks"), list))]

    async def wait_for(self, condition: str | Callable[[list[Call]], bool], *, timeout: float = 10.0) -> list[Call]:
        """Wait until a call to ``condition`` (a method name) arrived, or the predicate holds.

        Returns the calls so far. Raises ``AssertionError`` with the recorded methods on timeout.
        """
        if isinstance(condition, str):
            method = condition
            condition = lambda calls: any(c.method == method for c in calls)  # noqa: E731
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                snapshot = list(self.calls)
            if condition(snapshot):
                return snapshot
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; calls so far: {[c.method for c in snapshot]}")
            await asyncio.sleep(0.02)

    # -- answers ---------------------------------------------------------
    def _record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def _next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def answer(self, method: str, body: dict) -> dict:
        """The JSON Slack would answer for ``method`` (before ``fail`` is applied)."""
        channel = body.get("channel", "C0CHANNEL")
        if method == "auth.test":
            return {"ok": True, "url": "https://test.slack.com/", **_BOT}
        if method in ("chat.postMessage", "chat.startStream"):
            ts = self._next_ts()
            return {"ok": True, "channel": channel, "ts": ts,
                    "message": {"text": body.get("text", ""), "ts": ts, "bot_id": _BOT["bot_id"]}}
        if method == "chat.delete":
            return {"ok": True, "channel": channel, "ts": body.get("ts")}
        if method in ("chat.update", "chat.appendStream", "chat.stopStream"):
            return {"ok": True, "channel": channel, "ts": body.get("ts"), "text": body.get("text", "")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):08d}"
            return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = body.get("files") or []
            if isinstance(files, str):  # JSON text inside a JSON body
                files = json.loads(files)
            return {"ok": True, "files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}
        if method == "conversations.replies":
            return {"ok": True, "messages": list(self.replies.get(body.get("ts"), [])), "has_more": False}
        if method == "chat.getPermalink":
            ts = str(body.get("message_ts", ""))
            return {"ok": True, "channel": channel,
                    "permalink": f"https://test.slack.com/archives/{channel}/p{ts.replace('.', '')}"}
        if method == "usergroups.users.list":
            return {"ok": True, "users": list(self.usergroups.get(body.get("usergroup"), []))}
        if method == "apps.connections.open" and self.socket_mode_url:
            return {"ok": True, "url": self.socket_mode_url}
        return {"ok": False, "error": "unknown_method"}


def _decode_body(raw: bytes, content_type: str) -> dict:
    if not raw:
        return {}
    if "application/json" in content_type:
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}
    if "application/x-www-form-urlencoded" in content_type:
        body: dict = {}
        for key, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True):
            if value[:1] in ("[", "{"):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            body[key] = value
        return body
    return {"_bytes": len(raw)}


def _make_handler(fake: SlackFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - silence stderr
            return

        def do_GET(self) -> None:  # noqa: N802
            self._handle()

        def do_POST(self) -> None:  # noqa: N802
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            query = dict(parse_qsl(self.path.split("?", 1)[1])) if "?" in self.path else {}
            body = {**query, **_decode_body(raw, self.headers.get("Content-Type", ""))}
            headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
            headers["has_authorization"] = "Authorization" in self.headers
            if path.startswith("/response_url/"):
                call = Call("response_url", body, headers)
                fake._record(call)
                due = fake.scripted("response_url")
                if due is None:
                    call.reply = {"ok": True}
                    self._send(200, b"ok", "text/plain")
                elif due.status == 200:
                    self._send(200, json.dumps({"ok": False, "error": due.error}).encode(), "application/json")
                else:
                    self._reply_status(due, text=b"no_active_hooks" if due.status == 404 else None)
                return
            if path.startswith("/upload/"):
                fake._record(Call("upload", {"file_id": path.rsplit("/", 1)[1], "bytes": len(raw),
                                             "content": raw.decode("utf-8", "replace")}, headers))
                self._send(200, b"OK - uploaded", "text/plain")
                return
            if not path.startswith("/api/"):
                self._send(404, b"not found", "text/plain")
                return
            method = path[len("/api/"):]
            call = Call(method, body, headers)
            fake._record(call)
            pause = fake.delay.get(method)
            if pause:
                time.sleep(pause)
            due = fake.scripted(method)
            if due is not None and due.status != 200:
                self._reply_status(due)
                return
            if due is None and body.get("blocks") and method in fake.refuse_blocks:
                due = Scripted(200, fake.refuse_blocks[method])
            payload = {"ok": False, "error": due.error} if due is not None else fake.answer(method, body)
            call.reply = payload
            self._send(200, json.dumps(payload).encode(), "application/json; charset=utf-8")

        def _reply_status(self, due: Scripted, *, text: bytes | None = None) -> None:
            if due.status == 429:
                self._send(429, json.dumps({"ok": False, "error": due.error or "ratelimited"}).encode(),
                           "application/json; charset=utf-8", {"Retry-After": str(due.retry_after or 1)})
            elif text is not None:
                self._send(due.status, text, "text/plain")
            else:
                self._send(due.status, b"<html><body>Server Error</body></html>", "text/html")

        def _send(self, status: int, data: bytes, content_type: str, extra: dict | None = None) -> None:
            self.send_response(status)
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@dataclass
class SlashResponse:
    status: int
    body: str
    seconds: float


@dataclass
class BotHarness:
    """The real app on 127.0.0.1 (``base_url``) with its Web API at ``fake``.

    ``await bot.slash("/sz-hash", "sha256 abc")`` sends a correctly signed slash
    command and returns the HTTP status, body and the time the ack took.
    """

    app: object
    context: object
    fake: SlackFake
    base_url: str
    session: object
    settings: object
    counter: list = field(default_factory=lambda: [0])
    #: makes trigger and event ids unique across harnesses (apps restarted on one state store)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    #: the app's ``bot.slack.ask_flow.AskFlow`` (from the composed ``bot.compose.Bot``)
    ask_flow: object = None

    async def answered(self, count: int = 1, *, timeout: float = 30.0):
        """Wait until the ask flow has finished ``count`` asks (delivered, and the thread's memory and
        repository recorded: an answer visible in Slack is not yet the end) → the last ``AskOutcome``.

        Raises ``AssertionError`` with the Web API methods called so far after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while len(self.ask_flow.completed) < count:
            assert time.monotonic() < deadline, f"{len(self.ask_flow.completed)} of {count} asks finished; " \
                                                f"calls so far: {self.fake.methods()}"
            await asyncio.sleep(0.02)
        return self.ask_flow.completed[-1]

    def form(self, command: str, text: str, *, user_id: str = USER, channel_id: str = "C0CHANNEL") -> dict:
        self.counter[0] += 1
        return {
            "token": "legacy-verification-token", "team_id": "T0TEAM", "team_domain": "test",
            "channel_id": channel_id, "channel_name": "general", "user_id": user_id, "user_name": "someone",
            "command": command, "text": text, "api_app_id": "A0APP", "is_enterprise_install": "false",
            "response_url": self.fake.response_url(f"r{self.counter[0]}"),
            "trigger_id": f"trigger-{self.run_id}-{self.counter[0]}",
        }

    async def post_signed(self, body: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET,
                          signature: str | None = None, headers: dict | None = None) -> SlashResponse:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        sent = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts}
        sent["X-Slack-Signature"] = signature or SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
        sent.update(headers or {})
        started = time.perf_counter()
        async with self.session.post(f"{self.base_url}/slack/events", data=body, headers=sent) as response:
            text = await response.text()
        return SlashResponse(response.status, text, time.perf_counter() - started)

    async def slash(self, command: str, text: str = "", *, user_id: str = USER, **kwargs) -> SlashResponse:
        return await self.post_signed(urlencode(self.form(command, text, user_id=user_id)), **kwargs)

    async def post_event(self, event: dict, *, event_id: str | None = None, headers: dict | None = None) -> SlashResponse:
        """Deliver an Events API ``event_callback`` (JSON, signed) wrapping ``event``."""
        self.counter[0] += 1
        body = {"token": "legacy-verification-token", "team_id": "T0TEAM", "api_app_id": "A0APP",
                "type": "event_callback", "event_id": event_id or f"Ev{self.run_id}{self.counter[0]:08d}",
                "event_time": int(time.time()), "event": event,
                "authorizations": [{"team_id": "T0TEAM", "user_id": "U0BOT", "is_bot": True}]}
        return await self.post_signed(json.dumps(body), headers={"Content-Type": "application/json", **(headers or {})})

    async def mention(self, text: str, *, user_id: str = USER, channel_id: str = "C0CHANNEL",
                      thread_ts: str | None = None, **kwargs) -> SlashResponse:
        """An ``app_mention`` event: ``<@U0BOT> text`` by ``user_id``, in ``thread_ts`` when given."""
        ts = f"1700000500.{self.counter[0] + 1:06d}"
        event = {"type": "app_mention", "user": user_id, "text": f"<@{_BOT['user_id']}> {text}", "ts": ts,
                 "channel": channel_id, "event_ts": ts, "team": "T0TEAM"}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return await self.post_event(event, **kwargs)

    async def shortcut(self, callback_id: str, message: dict, *, user_id: str = USER,
                       channel_id: str = "C0CHANNEL") -> SlashResponse:
        """A ``message_action`` payload (a message shortcut on ``message``), signed."""
        self.counter[0] += 1
        payload = {
            "type": "message_action", "callback_id": callback_id, "user": {"id": user_id, "team_id": "T0TEAM"},
            "team": {"id": "T0TEAM"}, "channel": {"id": channel_id, "name": "general"}, "api_app_id": "A0APP",
            "token": "legacy-verification-token", "trigger_id": f"trigger-{self.run_id}-{self.counter[0]}",
            "message_ts": message.get("ts"), "message": {"type": "message", **message},
            "response_url": self.fake.response_url(f"s{self.counter[0]}"),
        }
        return await self.post_signed(urlencode({"payload": json.dumps(payload)}))

    async def click(self, action_id: str, value: str, *, user_id: str = USER, message_ts: str = "1700000000.000001",
                    channel_id: str = "C0CHANNEL") -> SlashResponse:
        """A ``block_actions`` payload for a button click (form field ``payload``, signed)."""
        self.counter[0] += 1
        payload = {
            "type": "block_actions", "user": {"id": user_id, "team_id": "T0TEAM"}, "team": {"id": "T0TEAM"},
            "api_app_id": "A0APP", "token": "legacy-verification-token",
            "trigger_id": f"trigger-{self.run_id}-{self.counter[0]}",
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel_id},
            "channel": {"id": channel_id}, "message": {"ts": message_ts, "type": "message"},
            "response_url": self.fake.response_url(f"a{self.counter[0]}"),
            "actions": [{"type": "button", "action_id": action_id, "block_id": "sz_feedback", "value": value,
                         "action_ts": str(time.time())}],
        }
        return await self.post_signed(urlencode({"payload": json.dumps(payload)}))
