"""Run the bot: HTTP mode (``/slack/events`` + ``/api/*`` on ``HOST:PORT``) or Socket Mode.

``slackzilla serve`` calls :func:`serve`. The aiohttp application always
serves the HTTP API on ``HOST:PORT`` (operators need ``/healthz`` and
``/metrics`` in both modes); with ``SLACK_APP_TOKEN`` set, Slack's requests
arrive over a Socket Mode WebSocket (slack_bolt's aiohttp ``AsyncSocketModeHandler``)
instead of ``POST /slack/events``. Bolt's own ``app.start()`` is not used: it
binds 0.0.0.0 and blocks; an ``AppRunner`` binds ``HOST`` and lets tests use port 0.

The bot answers from the existing index at once; an incremental update runs in
the background at start-up (trigger ``startup``) and then every
``REINDEX_INTERVAL_S`` (bot.scheduler; 0 turns the schedule off).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from bot.compose import Bot, compose
from bot.context import BotContext
from bot.observability.runtime import Runtime
from bot.scheduler import start_background_startup_update, stop_scheduler
from bot.settings import Settings
from bot.slack.app import SLACK_EVENTS_PATH
from rag.providers.embeddings import build_embeddings
from rag.engine import Engine
from rag.ingest.pool import PoolPolicy
from rag.errors import ProviderError
from rag.providers.rerank import build_reranker

__all__ = ["RunningServer", "serve", "start"]

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 5.0
PRUNE_EVERY_S = 3600.0
"""How often one replica deletes expired state (claims, rate hits, turns, leases …)."""
ASK_DRAIN_S = 8.0
"""How long running answers may take to finish at shutdown (systemd allows 20 s, Docker 10 s)."""


@dataclass
class RunningServer:
    """A started bot. ``port`` is the bound port (useful with ``PORT=0``)."""

    bot: Bot
    runner: web.AppRunner
    port: int
    socket_handler: AsyncSocketModeHandler | None = None
    startup_task: asyncio.Task | None = None
    prune_task: asyncio.Task | None = None

    @property
    def app(self) -> AsyncApp:
        """The Bolt app."""
        return self.bot.app

    @property
    def context(self) -> BotContext:
        """The bot's :class:`BotContext`."""
        return self.bot.core.context

    async def stop(self) -> None:
        """Stop the schedule and any embedding run, let running answers finish (briefly), disconnect
        Socket Mode, stop the HTTP server, close the state store and the index."""
        stop_scheduler(self.bot.core.scheduler)
        self.bot.core.reindexer.request_stop()
        cancelled = await self.bot.ask_flow.drain(timeout_s=ASK_DRAIN_S)
        if cancelled:
            log.warning("shutdown: %d answer(s) interrupted; their askers were told", cancelled)
        with contextlib.suppress(Exception):
            await self.bot.core.asker.aclose()
        for task in (self.startup_task, self.prune_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.socket_handler is not None:
            with contextlib.suppress(Exception):
                await self.socket_handler.close_async()
        await self.runner.cleanup()
        await asyncio.to_thread(self.bot.close)  # the state store (queued writes are tried once more)
        self.bot.core.runtime.remove_log_handler()
        self.bot.core.engine.close()


async def start(settings: Settings, *, engine: Engine | None = None, runtime: Runtime | None = None,
                reindex_at_startup: bool = True) -> RunningServer:
    """Open the engine, compose the bot (:func:`bot.compose.compose`), start serving and the
    reindex schedule; returns at once.

    Raises:
        rag.errors.RepoNotFoundError, rag.errors.IndexUnavailableError: the repository
            or index cannot be opened.
        OSError: ``HOST:PORT`` cannot be bound.
    """
    runtime = runtime or Runtime()
    runtime.install_log_handler()
    if engine is None:
        engine = await asyncio.to_thread(Engine.open, settings.repo_path, index_path=settings.rag_index_path,
                                         embeddings=embeddings_provider(settings), reranker=reranker(settings),
                                         pool_policy=PoolPolicy(workers=settings.engine.indexing.workers))
    bot = compose(settings, engine=engine, runtime=runtime, schedule=True)
    web_app = bot.app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)
    runner = web.AppRunner(web_app, shutdown_timeout=SHUTDOWN_TIMEOUT_S, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    port = site._server.sockets[0].getsockname()[1] if site._server else settings.port  # type: ignore[union-attr]
    socket_handler = None
    if settings.socket_mode:
        socket_handler = AsyncSocketModeHandler(bot.app, settings.slack_app_token)
        await socket_handler.connect_async()
    startup_task = start_background_startup_update(bot.core.reindexer) if reindex_at_startup else None
    prune_task = asyncio.get_running_loop().create_task(prune_state(bot), name="prune-state") \
        if bot.core.state.enabled else None
    server = RunningServer(bot=bot, runner=runner, port=port, socket_handler=socket_handler,
                           startup_task=startup_task, prune_task=prune_task)
    if bot.core.scheduler is not None:
        bot.core.scheduler.start()
    mode = "Socket Mode" if settings.socket_mode else f"HTTP at {SLACK_EVENTS_PATH}"
    log.info("slackzilla serving on %s:%d (%s), %d commands", settings.host, port, mode, len(bot.core.registry))
    return server


async def prune_state(bot: Bot, *, every_s: float = PRUNE_EVERY_S) -> None:
    """Every ``every_s``, the replica holding the ``prune`` lease deletes expired state (in a worker thread)."""
    state = bot.core.state
    while True:
        await asyncio.sleep(every_s)
        ok, mine = await state.acall("lease", lambda s: s.try_lease("prune", state.replica_id, every_s * 0.9))
        if ok and mine:
            done, deleted = await state.acall("prune", lambda s: s.prune())
            if done:
                log.info("state pruned: %s", ", ".join(f"{k} {v}" for k, v in deleted.items() if v) or "nothing")


def embeddings_provider(settings: Settings):
    """The configured embeddings provider, or ``None`` (BM25 + structure only).

    A misconfigured provider is logged and turned off: the bot still answers.
    """
    try:
        return build_embeddings(settings.engine.embeddings)
    except ProviderError as exc:
        log.warning("embeddings disabled: %s", exc)
        return None


def reranker(settings: Settings):
    """The configured reranker (``RERANK_*``), or ``None`` (off by default; a bad URL is logged, not fatal)."""
    try:
        return build_reranker(settings.engine.rerank)
    except ProviderError as exc:
        log.warning("reranking disabled: %s", exc)
        return None


async def serve(settings: Settings) -> None:
    """Serve until SIGINT/SIGTERM (or cancellation), then shut down cleanly.

    Raises:
        the errors of :func:`start`.
    """
    server = await start(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("slackzilla shutting down")
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await server.stop()
