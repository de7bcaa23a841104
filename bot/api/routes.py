"""The HTTP API, served by the same aiohttp application as ``/slack/events``.

Routes (JSON unless noted; each converts the request, calls the
:class:`bot.context.BotContext` method the Slack handlers and live tools use,
and converts the answer back):

    GET  /healthz             {"ok", "uptime_s", "slack": SlackHealth.to_json()}; 503 while Slack is unreachable
    GET  /api/status          BotContext.status()
    GET  /api/commands        {"commands": [...]}
    GET  /api/release         BotContext.release()
    GET  /api/logs            {"logs": [...]}     ?limit=1..500 &level=info &include_stack=1 (stacks: admin only)
    GET  /api/metrics         BotContext.metrics()
    GET  /metrics             Prometheus text exposition
    GET  /api/routes          {"routes": [...]}   ?path= (substring of the route) &method=
    GET  /api/admin/errors    {"errors": [...]}   bearer ADMIN_API_TOKEN; 404 when the token is unset
    *    /api/documents       documents (bearer ADMIN_API_TOKEN): see bot.api.documents
    POST /api/ask             {"question", "with_ai"?} → bot.asker.Asker.answer → text/event-stream of
                              ``activity``, ``token`` and ``done`` events (``error`` on failure, or
                              ``shutting_down`` when the server stops first: :func:`drain_asks`);
                              any other field is a 400, a body over 64 KiB a 413

Who may call them is :mod:`bot.api.exposure`'s rule: on a server reachable from other
hosts every route but ``/healthz`` needs the bearer ``ADMIN_API_TOKEN``; on a local one
the read-only routes are open to requests addressed to a loopback ``Host``;
``POST /api/ask`` also checks ``Host`` and refuses other sites' web pages.

Bearer tokens are compared with ``hmac.compare_digest`` (constant time). Errors
are ``{"error": code, "message": sentence}`` with a 4xx status.
"""
from __future__ import annotations

import asyncio

import json
import logging

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from bot.api.bodies import BodyTooLargeError, read_json
from bot.api.exposure import Refusal, ask_refusal, bearer_ok, read_refusal
from bot.answer_loop import drain_answers
from bot.api.documents import install_documents_api
from bot.identity import Identity
from bot.slack.health import SlackHealth
from rag.answer.question import require_question
from rag.errors import EmptyQuestionError, UserError

__all__ = ["install_api", "drain_asks", "ASKER_KEY", "ASKS_KEY", "BOT_KEY", "CONTEXT_KEY", "HEALTH_KEY",
           "MAX_LOG_LIMIT", "MAX_QUESTION_BODY_BYTES"]

log = logging.getLogger(__name__)

CONTEXT_KEY: web.AppKey = web.AppKey("slackzilla_context", object)
ASKER_KEY: web.AppKey = web.AppKey("slackzilla_asker", object)
#: The :class:`bot.slack.health.SlackHealth` ``/healthz`` reports (the server watches Slack and fills it in).
HEALTH_KEY: web.AppKey = web.AppKey("slackzilla_slack_health", object)
#: The ``POST /api/ask`` answers running now (their tasks), for :func:`drain_asks` at shutdown.
ASKS_KEY: web.AppKey = web.AppKey("slackzilla_api_asks", set)
#: The composed ``bot.compose.Bot`` (set by the composition root; the routes do not read it).
BOT_KEY: web.AppKey = web.AppKey("slackzilla_bot", object)
MAX_LOG_LIMIT = 500
DEFAULT_LOG_LIMIT = 50
#: Largest accepted ``POST /api/ask`` body in bytes.
MAX_QUESTION_BODY_BYTES = 64 * 1024


def install_api(app: web.Application, ctx, asker, *, health: SlackHealth | None = None) -> web.Application:
    """Add the routes above to ``app`` (the Bolt app's ``web_app()``) and return it.

    Args:
        app: the aiohttp application.
        ctx: the :class:`bot.context.BotContext` the read-only routes convert.
        asker: the :class:`bot.asker.Asker` behind ``POST /api/ask`` (the one answer entry point).
        health: the Slack connection's health for ``/healthz`` (default: a new, unchecked one).
    """
    app[CONTEXT_KEY] = ctx
    app[ASKER_KEY] = asker
    app[HEALTH_KEY] = health if health is not None else SlackHealth(socket_mode=ctx.settings.socket_mode)
    app[ASKS_KEY] = set()
    app.add_routes([
        web.get("/healthz", healthz),
        web.get("/api/status", _read_only(status)),
        web.get("/api/commands", _read_only(commands)),
        web.get("/api/release", _read_only(release)),
        web.get("/api/logs", _read_only(logs)),
        web.get("/api/metrics", _read_only(metrics_json)),
        web.get("/metrics", _read_only(metrics_prometheus)),
        web.get("/api/routes", _read_only(routes)),
        web.get("/api/admin/errors", admin_errors),
        web.post("/api/ask", ask),
    ])
    install_documents_api(app, ctx)
    return app


async def drain_asks(app: web.Application, *, timeout_s: float) -> int:
    """Let the running ``POST /api/ask`` answers finish for up to ``timeout_s``, then stop the rest: their
    streams end with an ``error`` event ``shutting_down``. Returns how many were stopped (shutdown, before
    the answers' loop is closed)."""
    return await drain_answers(app[ASKS_KEY], timeout_s=timeout_s, grace_s=1.0)


def _refused(refusal: Refusal) -> web.Response:
    headers = {"WWW-Authenticate": 'Bearer realm="slackzilla"'} if refusal.status == 401 else None
    return _error(refusal.status, refusal.code, refusal.message, headers=headers)


def _read_only(handler):
    """``handler`` behind the read-only rule of :func:`bot.api.exposure.read_refusal`."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        settings = _ctx(request).settings
        token = settings.admin_api_token
        refusal = read_refusal(settings, request.headers, bearer_ok=bool(token) and _bearer_ok(request, token))
        if refusal is not None:
            log.info("refused %s %s: %s", request.method, request.path, refusal.code)
            return _refused(refusal)
        return await handler(request)

    guarded.__name__ = guarded.__qualname__ = handler.__name__
    guarded.__doc__ = handler.__doc__
    return guarded


def _ctx(request: web.Request):
    return request.app[CONTEXT_KEY]


def _error(status: int, code: str, message: str, *, headers: dict | None = None) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status, headers=headers)


def _from_loopback(request: web.Request) -> bool:
    """Whether the client connected from this machine (127.0.0.0/8 or ::1)."""
    import ipaddress

    try:
        return ipaddress.ip_address((request.remote or "").split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _bearer_ok(request: web.Request, token: str) -> bool:
    return bearer_ok(request.headers, token)


def _unauthorized() -> web.Response:
    return _error(401, "unauthorized", "A valid bearer token (ADMIN_API_TOKEN) is required.",
                  headers={"WWW-Authenticate": 'Bearer realm="slackzilla"'})


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("1", "true", "yes", "on")


async def healthz(request: web.Request) -> web.Response:
    """``{"ok", "uptime_s", "slack"}``: 200 while Slack is reachable (or not checked yet), else 503."""
    ctx = _ctx(request)
    health: SlackHealth = request.app[HEALTH_KEY]
    ok = health.ok
    return web.json_response({"ok": ok, "uptime_s": round(ctx.runtime.clock() - ctx.runtime.started_at, 3),
                              "slack": health.to_json()}, status=200 if ok else 503)


async def status(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(_ctx(request).status))


async def commands(request: web.Request) -> web.Response:
    return web.json_response({"commands": _ctx(request).commands()})


async def release(request: web.Request) -> web.Response:
    return web.json_response(_ctx(request).release())


async def logs(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    try:
        limit = int(request.query.get("limit", DEFAULT_LOG_LIMIT))
    except ValueError:
        return _error(400, "bad_request", "limit must be a whole number.")
    if not 1 <= limit <= MAX_LOG_LIMIT:
        return _error(400, "bad_request", f"limit must be between 1 and {MAX_LOG_LIMIT}.")
    include_stack = _flag(request, "include_stack")
    if include_stack:
        token = ctx.settings.admin_api_token
        if not token or not _bearer_ok(request, token):
            return _error(403, "forbidden", "Stack traces need the admin bearer token (ADMIN_API_TOKEN).")
    try:
        entries = ctx.logs(limit=limit, level=request.query.get("level") or None, include_stack=include_stack)
    except ValueError as err:
        return _error(400, "bad_request", str(err))
    return web.json_response({"logs": entries})


async def metrics_json(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(_ctx(request).metrics))  # reads the state store


async def metrics_prometheus(request: web.Request) -> web.Response:
    body = await asyncio.to_thread(_ctx(request).prometheus_text)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def routes(request: web.Request) -> web.Response:
    found = _ctx(request).routes()
    path = request.query.get("path", "").lower()
    method = request.query.get("method", "").lower()
    if path or method:
        found = [r for r in found if path in str(r.get("route", r.get("path", ""))).lower()
                 and (not method or str(r.get("method", "")).lower() == method)]
    return web.json_response({"routes": found})


async def admin_errors(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    token = ctx.settings.admin_api_token
    if not token:
        return _error(404, "not_found", "The admin API is off (ADMIN_API_TOKEN is not set).")
    if not _bearer_ok(request, token):
        return _unauthorized()
    try:
        limit = min(max(int(request.query.get("limit", DEFAULT_LOG_LIMIT)), 1), MAX_LOG_LIMIT)
    except ValueError:
        return _error(400, "bad_request", "limit must be a whole number.")
    include_stack = request.query.get("include_stack", "1").lower() not in ("0", "false", "no", "off")
    return web.json_response({"errors": ctx.errors(limit=limit, include_stack=include_stack)})


async def ask(request: web.Request) -> web.StreamResponse:
    """Stream one answer as Server-Sent Events (``event: activity|token|done|error``)."""
    ctx = _ctx(request)
    token = ctx.settings.admin_api_token
    # Without ADMIN_API_TOKEN the endpoint would hand repository code to anyone who can reach
    # the port, or to a web page the operator visits: see bot.api.exposure for the rule.
    refusal = ask_refusal(ctx.settings, request.headers, bearer_ok=bool(token) and _bearer_ok(request, token),
                          from_loopback=_from_loopback(request))
    if refusal is not None:
        log.info("refused POST /api/ask: %s", refusal.code)
        return _refused(refusal)
    try:
        body = await read_json(request, limit=MAX_QUESTION_BODY_BYTES)
    except BodyTooLargeError as err:
        return _error(413, "too_large", str(err))
    except ValueError:  # not UTF-8, not JSON
        return _error(400, "bad_request", 'The body must be JSON like {"question": "..."}.')
    question = body.get("question") if isinstance(body, dict) else None
    unknown = sorted(set(body) - {"question", "with_ai"}) if isinstance(body, dict) else []
    if unknown:  # a client's top_k or repo must not be dropped without a word
        return _error(400, "bad_request", f"Unknown field(s): {', '.join(unknown)[:200]}; "
                                          'the body takes "question" and "with_ai".')
    try:
        if not isinstance(question, str):
            raise EmptyQuestionError()
        require_question(question)  # the one empty check; refused before the stream starts
    except EmptyQuestionError:
        return _error(400, "bad_request", 'Give a non-empty "question" string.')
    with_ai = body.get("with_ai", True)
    if not isinstance(with_ai, bool):
        return _error(400, "bad_request", '"with_ai" must be true or false.')

    response = web.StreamResponse(headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
    })
    await response.prepare(request)

    answering: asyncio.Future | None = None
    gone = ended = False

    async def send(event: str, data) -> None:
        nonlocal gone
        if gone or ended:  # ended: a stopped answer's last text arrives after its stream was closed
            return
        payload = json.dumps(data, ensure_ascii=False, default=str)
        try:
            await response.write(f"event: {event}\ndata: {payload}\n\n".encode())
        except ConnectionResetError:
            # The client went away: nobody reads the rest, so the answer (and the model) stop here.
            gone = True
            if answering is not None:
                answering.cancel()

    async def on_activity(activity) -> None:
        await send("activity", activity.to_json() if hasattr(activity, "to_json") else activity)

    async def on_token(text: str) -> None:
        await send("token", {"text": text})

    identity = Identity(user_id=None, is_admin=bool(token), source="api")
    started = asyncio.get_running_loop().time()
    try:
        answering = asyncio.ensure_future(request.app[ASKER_KEY].answer(
            question, identity=identity, on_activity=on_activity, on_token=on_token, with_ai=with_ai))
        request.app[ASKS_KEY].add(answering)
        answering.add_done_callback(request.app[ASKS_KEY].discard)
        try:
            result = await answering
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise  # this request itself is cancelled
            if not gone:  # drain_asks stopped it: the server is shutting down
                log.info("/api/ask stopped after %.1f s: the server is shutting down",
                         asyncio.get_running_loop().time() - started)
                await send("error", {"error": "shutting_down",
                                     "message": "The server is restarting; ask again in a moment."})
                ended = True
        else:
            await send("done", result.to_json())
    except UserError as err:
        await send("error", {"error": type(err).__name__, "message": str(err)})
    except Exception as err:  # noqa: BLE001 - the stream must end with a reason
        ctx.runtime.errors.capture(err, command="api.ask", keep_message=False)
        log.error("/api/ask failed with %s", type(err).__name__, exc_info=True)
        await send("error", {"error": "internal", "message": "The answer failed; the error has been logged."})
    if gone:
        log.info("/api/ask client went away after %.1f s; the answer was stopped",
                 asyncio.get_running_loop().time() - started)
        return response
    ended = True
    await response.write_eof()
    return response
