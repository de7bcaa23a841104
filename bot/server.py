"""Run the bot: HTTP mode (``/slack/events`` + ``/api/*`` on ``HOST:PORT``) or Socket Mode.

``slackzilla serve`` calls :func:`serve`. The aiohttp application always
serves the HTTP API on ``HOST:PORT`` (operators need ``/healthz`` and
``/metrics`` in both modes); with ``SLACK_APP_TOKEN`` set, Slack's requests
arrive over a Socket Mode WebSocket (slack_bolt's aiohttp ``AsyncSocketModeHandler``)
instead of ``POST /slack/events``. Bolt's own ``app.start()`` is not used: it
binds 0.0.0.0 and blocks; an ``AppRunner`` binds ``HOST`` and lets tests use port 0.

The bot answers from the existing index at once; an incremental update runs in
the background at start-up (trigger ``startup``) and then every
``REINDEX_INTERVAL_S`` (bot.scheduler; 0 turns the schedule off). Every update runs in
a child process (:mod:`bot.isolated_update`), so it never holds this process's GIL.

Slack (bot.slack.health): before anything is opened, ``auth.test`` checks the bot token (and
``apps.connections.open`` the app token in Socket Mode); a token Slack rejects stops the start
with one clear :class:`~bot.slack.health.SlackAuthError`, while Slack being unreachable is
logged and serving starts anyway. Socket Mode then connects in the background (slack_sdk's
client keeps reconnecting by itself). While serving, the connection is watched; ``/healthz``
reports it, and :func:`serve` raises :class:`~bot.slack.health.SlackUnreachableError` (so
``slackzilla serve`` exits non-zero and its supervisor restarts it) once Slack has not been
reachable for ``SLACK_UNREACHABLE_EXIT_S``.
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

from slack_sdk.web.async_client import AsyncWebClient

from bot.api.exposure import is_exposed
from bot.api.routes import HEALTH_KEY, drain_asks
from bot.compose import Bot, compose
from bot.context import BotContext
from bot.observability.runtime import Runtime
from bot.repos import NoRepositoryError, open_repositories
from bot.scheduler import start_background_startup_update, stop_scheduler
from bot.settings import Settings
from bot.slack.app import SLACK_EVENTS_PATH
from bot.slack.health import SlackHealth, check_credentials, watch_slack
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
    connect_task: asyncio.Task | None = None
    watch_task: asyncio.Task | None = None
    """Watches Slack (:func:`bot.slack.health.watch_slack`); it ends with the error that stops the bot."""
    startup_tasks: tuple = ()
    """The start-up updates of the repositories other than the default (``startup_task``)."""

    @property
    def app(self) -> AsyncApp:
        """The Bolt app."""
        return self.bot.app

    @property
    def context(self) -> BotContext:
        """The bot's :class:`BotContext`."""
        return self.bot.core.context

    @property
    def health(self) -> SlackHealth:
        """The Slack connection's health, as ``/healthz`` reports it."""
        return self.bot.app.web_app(path=SLACK_EVENTS_PATH, port=self.bot.core.settings.port)[HEALTH_KEY]

    async def wait_fatal(self) -> BaseException:
        """Wait until watching Slack fails for good and return the error
        (:class:`~bot.slack.health.SlackUnreachableError` or :class:`~bot.slack.health.SlackAuthError`);
        never returns while nothing watches. Cancelled when the watch is (at :meth:`stop`)."""
        if self.watch_task is None:
            await asyncio.Event().wait()
        try:
            await asyncio.shield(self.watch_task)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - returned to the caller, who raises it
            return err
        raise RuntimeError("the Slack watch ended without an error")  # watch_slack only ends by raising

    async def stop(self) -> None:
        """Stop the schedule and any embedding run, let running answers (Slack's and ``POST /api/ask``'s)
        finish (briefly), disconnect
        Socket Mode, stop the HTTP server, end the index update processes, close the state store and the index."""
        stop_scheduler(self.bot.core.scheduler)
        for repo in self._repositories():
            repo.reindexer.request_stop()
        web_app = self.bot.app.web_app(path=SLACK_EVENTS_PATH, port=self.bot.core.settings.port)
        cancelled, stopped = await asyncio.gather(self.bot.ask_flow.drain(timeout_s=ASK_DRAIN_S),
                                                  drain_asks(web_app, timeout_s=ASK_DRAIN_S))
        if cancelled or stopped:
            log.warning("shutdown: %d answer(s) interrupted; their askers were told", cancelled + stopped)
        with contextlib.suppress(Exception):
            await self.bot.core.asker.aclose()
        for task in (self.startup_task, self.prune_task, self.watch_task, self.connect_task,
                     *self.startup_tasks):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.socket_handler is not None:
            with contextlib.suppress(Exception):
                await self.socket_handler.close_async()
        await self.runner.cleanup()
        await asyncio.to_thread(self.bot.close)  # the update processes, the state store (queued writes tried once more)
        self.bot.core.runtime.remove_log_handler()
        for repo in self._repositories():
            repo.engine.close()

    def _repositories(self) -> list:
        """The serving repositories (:class:`bot.repos.Repository`), the default one first."""
        repos = self.bot.core.repos
        if repos is None:  # pragma: no cover - compose always builds the set
            return []
        return sorted(repos.serving(), key=lambda r: r is not repos.default)


async def start(settings: Settings, *, engine: Engine | None = None, runtime: Runtime | None = None,
                reindex_at_startup: bool = True, client: AsyncWebClient | None = None) -> RunningServer:
    """Check the Slack tokens, open the engine, compose the bot (:func:`bot.compose.compose`),
    start serving, watching Slack and the reindex schedule; returns at once.

    Args:
        settings: validated settings.
        engine: an opened engine (default: opened from the settings).
        runtime: the process's runtime (default: a new one).
        reindex_at_startup: run an incremental index update in the background.
        client: the Web API client (default ``AsyncWebClient(SLACK_BOT_TOKEN, base_url=SLACK_API_URL)``).

    Without ``engine``, every configured repository is opened (:func:`bot.repos.open_repositories`);
    one that cannot be is reported and skipped.

    Raises:
        bot.slack.health.SlackAuthError: Slack rejected ``SLACK_BOT_TOKEN`` or ``SLACK_APP_TOKEN``
            (nothing was opened or bound).
        bot.repos.NoRepositoryError: no repository can be opened (each one's reason is listed).
        OSError: ``HOST:PORT`` cannot be bound.
    """
    runtime = runtime or Runtime()
    runtime.install_log_handler()
    if client is None:
        client = AsyncWebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url)
    health = SlackHealth(socket_mode=settings.socket_mode, exit_after_s=settings.slack_unreachable_exit_s)
    repositories = None
    try:
        await check_credentials(client, app_token=settings.slack_app_token, health=health)
        if engine is None:  # every configured repository (slackzilla.toml), or the one REPO_PATH names
            repositories = await asyncio.to_thread(open_repositories, settings.repository_configs,
                                                   embeddings=embeddings_provider(settings),
                                                   reranker=reranker(settings))
            if not any(item.engine is not None for item in repositories):
                raise NoRepositoryError("No repository can be served: " + "; ".join(
                    f"{item.config.name}: {item.error}" for item in repositories))
            engine = next(item.engine for item in repositories if item.engine is not None)
    except BaseException:
        runtime.remove_log_handler()
        raise
    bot = compose(settings, engine=engine, runtime=runtime, schedule=True, client=client,
                  repositories=repositories, isolated_updates=True)
    web_app = bot.app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)
    web_app[HEALTH_KEY] = health
    _warn_if_exposed_without_token(settings)
    runner = web.AppRunner(web_app, shutdown_timeout=SHUTDOWN_TIMEOUT_S, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    port = site._server.sockets[0].getsockname()[1] if site._server else settings.port  # type: ignore[union-attr]
    loop = asyncio.get_running_loop()
    socket_handler = connect_task = None
    if settings.socket_mode:
        socket_handler = AsyncSocketModeHandler(bot.app, settings.slack_app_token, logger=_socket_mode_logger())
        # in the background: slack_sdk's connect() keeps retrying while Slack is unreachable
        connect_task = loop.create_task(socket_handler.connect_async(), name="socket-mode-connect")
    watch_task = loop.create_task(watch_slack(health, client=client,
                                              socket_client=socket_handler.client if socket_handler else None,
                                              exit_after_s=settings.slack_unreachable_exit_s),
                                  name="watch-slack")
    startup_task = start_background_startup_update(bot.core.reindexer) if reindex_at_startup else None
    others = tuple(start_background_startup_update(repo.reindexer) for repo in bot.core.repos.serving()
                   if repo is not bot.core.repos.default) if reindex_at_startup else ()
    prune_task = loop.create_task(prune_state(bot), name="prune-state") if bot.core.state.enabled else None
    server = RunningServer(bot=bot, runner=runner, port=port, socket_handler=socket_handler,
                           startup_task=startup_task, prune_task=prune_task, connect_task=connect_task,
                           watch_task=watch_task, startup_tasks=others)
    if bot.core.scheduler is not None:
        bot.core.scheduler.start()
    mode = "Socket Mode" if settings.socket_mode else f"HTTP at {SLACK_EVENTS_PATH}"
    log.info("slackzilla serving on %s:%d (%s), %d commands", settings.host, port, mode, len(bot.core.registry))
    return server


def _warn_if_exposed_without_token(settings: Settings) -> None:
    if is_exposed(settings) and not settings.admin_api_token:
        log.warning("HOST=%s is reachable from other hosts and ADMIN_API_TOKEN is not set: the HTTP API "
                    "(/api/*, /metrics) is refused; /healthz and /slack/events are served", settings.host)


class _OneLineErrors(logging.Filter):
    """Keeps slack_sdk's Socket Mode reconnect errors to one line each: its client logs every
    failed attempt with a traceback (``logger.exception``); the message already names the error."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.levelno >= logging.ERROR:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()} [{type(error).__name__}]" if error is not None else record.msg
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def _socket_mode_logger() -> logging.Logger:
    logger = logging.getLogger("slackzilla.socket_mode")
    if not any(isinstance(f, _OneLineErrors) for f in logger.filters):
        logger.addFilter(_OneLineErrors())
    return logger


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
        the errors of :func:`start`; bot.slack.health.SlackUnreachableError once Slack has not
        been reachable for ``SLACK_UNREACHABLE_EXIT_S``, bot.slack.health.SlackAuthError when
        Slack rejects the token while serving (after shutting down cleanly).
    """
    server = await start(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    stopped = loop.create_task(stop.wait(), name="stop-signal")
    fatal = loop.create_task(server.wait_fatal(), name="slack-fatal")
    error: BaseException | None = None
    try:
        await asyncio.wait({stopped, fatal}, return_when=asyncio.FIRST_COMPLETED)
        if fatal.done() and not fatal.cancelled():
            error = fatal.result()  # raised below, after the shutdown: `slackzilla serve` prints it once
    finally:
        for task in (stopped, fatal):
            task.cancel()
        log.info("slackzilla shutting down")
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await server.stop()
    if error is not None:
        raise error
