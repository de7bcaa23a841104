"""The composition root: every object of a bot process is built here, in order, and handed in.

    bot = compose(settings, engine=engine, client=client)     # a Bot: nothing set later
    bot.app, bot.ask_flow, bot.core.context, bot.core.asker   # the Bolt app (/slack/events + /api/*) …

Order (each object receives what it needs; no attribute is filled in afterwards);
:func:`compose_core` builds the Slack-free part (the CLI uses it), :func:`compose` adds Slack::

    runtime, registry (on_error → runtime)          observability, commands
    state (settings, index path, metrics)           the state store, opened once (SQLite / PostgreSQL)
    feedback (state, metrics)                       👍/👎 votes in the store
    reindexer (engine, runtime clock, run sink)     the one index updater; runs are written to the store
                                                    (``serve``: each update in a child process)
    lease (state, repository, interval)             one replica per scheduled reindex
    scheduler (reindexer, lease)                    unstarted; ``schedule=False`` → none
    model (settings)                                AI_* configuration
    context (settings, engine, registry, runtime, reindexer, model, scheduler, state, feedback, lease)
    tools (context)                                 the model's live tools
    asker (engine, model, tools, metrics, ready check, command parsers)
    ask flow (context, asker, state)                Slack's /sz-ask experience (thread memory, answers in flight)
    app (context, asker, ask flow, client)          Bolt + HTTP API

:func:`create_app` is the app factory tests and :func:`bot.server.start` use.

The state store: :func:`compose` opens the one ``DATABASE_URL`` / ``STATE_PATH`` names (default
``state.sqlite`` beside the index) and :meth:`Bot.close` closes it; a store handed in
(``state=``, e.g. one shared by two apps in a test) is the caller's to close. An
unreachable store is not fatal: the bot starts without memory and opens it later
(:class:`bot.state.resilient.ResilientState`). :func:`compose_core` (the CLI) opens none
unless asked (``open_state=True``).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from bot.asker import Asker
from bot.context import BotContext
from bot.isolated_update import ProcessUpdate
from bot.live_tools import build_tools
from bot.observability.runtime import Runtime
from bot.observability.feedback import FeedbackLog
from bot.scheduler import ScheduleLease, build_scheduler
from bot.settings import Settings
from bot.state.resilient import ResilientState
from bot.state.store import StateStore
from commands.registry import Registry, build_registry
from rag.ingest.reindexer import Reindexer, RunRecord
from rag.providers.llm import ModelConfig
from rag.tools.adapter import ToolAdapter

if TYPE_CHECKING:  # pragma: no cover
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.slack.ask_flow import AskFlow, AskOptions

__all__ = ["Bot", "BotCore", "compose", "compose_core", "create_app", "open_state"]

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class BotCore:
    """Every Slack-free object of a bot process, as built by :func:`compose_core` (the CLI uses it too).

    Attributes:
        settings, engine, runtime, registry: the parts it was built from.
        reindexer: the one index updater (scheduler, ``/sz-reindex``, status).
        scheduler: the unstarted periodic reindex scheduler, ``None`` when off.
        model: the ``AI_*`` model configuration.
        context: the :class:`BotContext` (status, commands, logs, metrics …).
        tools: the model's live tools (:mod:`bot.live_tools`).
        asker: the one answer entry point (Slack, ``POST /api/ask``, ``slackzilla ask``).
        state: the state store handle (memory only for the CLI).
        feedback: the 👍/👎 votes.
    """

    settings: Settings
    engine: object
    runtime: Runtime
    registry: Registry
    reindexer: Reindexer
    scheduler: object | None
    model: ModelConfig
    context: BotContext
    tools: ToolAdapter
    asker: Asker
    state: ResilientState
    feedback: FeedbackLog

    def close(self) -> None:
        """Close the state store if the composition root opened it (queued writes tried once more)."""
        self.state.close()


@dataclass(frozen=True)
class Bot:
    """A whole bot process: the :class:`BotCore` plus Slack's ask flow and the Bolt app.

    Attributes:
        core: the Slack-free objects.
        ask_flow: Slack's ``/sz-ask`` flow (:class:`bot.slack.ask_flow.AskFlow`).
        app: the Bolt app; ``app.web_app(...)`` serves ``/slack/events`` and ``/api/*``.
    """

    core: BotCore
    ask_flow: "AskFlow"
    app: "AsyncApp"

    def close(self) -> None:
        """Close what the composition root opened (the state store); the server calls it last."""
        self.core.close()


def open_state(settings: Settings, *, index_path, metrics=None) -> ResilientState:
    """Open the state store the settings name (``state.sqlite`` beside ``index_path`` by default);
    an unreachable one is opened later (the bot runs without memory meanwhile)."""
    config = settings.state_config(index_path)
    return ResilientState.open(config, on_failure=metrics.record_state_failure if metrics is not None else None)


def _state_handle(state, settings: Settings, *, index_path, metrics, open_it: bool) -> ResilientState:
    if isinstance(state, ResilientState):
        return state
    if state is not None:  # an opened StateStore handed in: shared, the caller closes it
        return ResilientState(state, replica_id=settings.replica_id, owned=False,
                              on_failure=metrics.record_state_failure)
    if open_it:
        return open_state(settings, index_path=index_path, metrics=metrics)
    return ResilientState.memory_only(settings.replica_id)


def _run_sink(state: ResilientState, repo: str) -> Callable[[RunRecord], None]:
    """The reindexer's ``on_record``: each finished run goes to the store, off the event loop."""

    def on_record(record: RunRecord) -> None:
        document = record.to_json()

        def write(store) -> None:
            store.record_run(repo, record.id, document)

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a worker thread (the CLI's `index`, a blocking run)
            state.write("runs", write)
            return
        loop.run_in_executor(None, state.write, "runs", write)

    return on_record


def compose_core(settings: Settings, *, engine, registry: Registry | None = None, runtime: Runtime | None = None,
                 schedule: bool = False, state: "StateStore | ResilientState | None" = None,
                 open_state: bool = False, isolated_updates: bool = False) -> BotCore:
    """Build every Slack-free object around an opened engine (imports neither Bolt nor the openai SDK).

    Args:
        settings: validated settings.
        engine: an opened :class:`rag.engine.Engine`.
        registry: the command registry (default: ``build_registry(on_error=runtime.capture_command_error)``,
            so command crashes land in the captured errors).
        runtime: the process's runtime state (default: a new :class:`Runtime`).
        schedule: build the periodic reindex scheduler (``REINDEX_INTERVAL_S``; started by the server).
        state: an opened :class:`StateStore` (shared; the caller closes it) or a :class:`ResilientState`.
        open_state: without ``state``, open the one the settings name (else memory only).
        isolated_updates: run each index update in a child process (:class:`bot.isolated_update.ProcessUpdate`,
            so a reindex cannot starve the event loop of the GIL; ``slackzilla serve``), else in the
            reindexer's worker thread.

    Raises:
        ValueError: a negative ``REINDEX_INTERVAL_S`` (with ``schedule``).
    """
    runtime = runtime or Runtime()
    registry = registry if registry is not None else build_registry(on_error=runtime.capture_command_error)
    handle = _state_handle(state, settings, index_path=engine.index.path, metrics=runtime.metrics,
                           open_it=open_state)
    feedback = FeedbackLog(state=handle, metrics=runtime.metrics, clock=runtime.clock)
    repo = engine.repo_root.name
    reindexer = Reindexer(engine, clock=runtime.clock, timeout_s=settings.reindex_timeout_s,
                          on_record=_run_sink(handle, repo) if handle.enabled else None,
                          update=ProcessUpdate(engine) if isolated_updates else None)
    # built without a schedule too: the status then still names the replica that runs it
    lease = ScheduleLease(handle, repo=repo, interval_s=settings.reindex_interval_s) \
        if handle.enabled and settings.reindex_interval_s > 0 else None
    scheduler = build_scheduler(reindexer, interval_s=settings.reindex_interval_s,
                                git_pull=settings.repo_git_pull, lease=lease) if schedule else None
    model = settings.engine.model
    context = BotContext(settings, engine=engine, registry=registry, runtime=runtime, reindexer=reindexer,
                         model=model, scheduler=scheduler, state=handle, feedback=feedback, lease=lease)
    tools = build_tools(context)
    asker = Asker(engine=engine, model=model, tools=tools, metrics=runtime.metrics,
                  require_ready=reindexer.require_ready, command_parsers=registry.question_parsers())
    return BotCore(settings=settings, engine=engine, runtime=runtime, registry=registry, reindexer=reindexer,
                   scheduler=scheduler, model=model, context=context, tools=tools, asker=asker, state=handle,
                   feedback=feedback)


def compose(settings: Settings, *, engine, registry: Registry | None = None, runtime: Runtime | None = None,
            client: "AsyncWebClient | None" = None, ask_options: "AskOptions | None" = None,
            schedule: bool = False, state: "StateStore | ResilientState | None" = None,
            isolated_updates: bool = False) -> Bot:
    """Build every object of a bot process: :func:`compose_core`, then the ask flow and the Bolt app.

    Args:
        settings, engine, registry, runtime, schedule, isolated_updates: as :func:`compose_core`
            (``SLACK_BOT_TOKEN`` is needed unless ``client`` has a token).
        client: the Web API client; default ``AsyncWebClient(token, base_url=SLACK_API_URL)``.
        ask_options: intervals and limits of the ``/sz-ask`` flow (default ``AskOptions()``).
        state: an opened store to use (the caller closes it); default: the one the settings name,
            opened here and closed by :meth:`Bot.close`.

    Returns:
        the :class:`Bot`; it is also ``bot.app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[bot.api.routes.BOT_KEY]``.
    """
    # Slack is imported here, not at the top: the CLI composes the core without loading Bolt.
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.api.routes import BOT_KEY
    from bot.slack.app import SLACK_EVENTS_PATH, build_app
    from bot.slack.ask_flow import AskFlow

    core = compose_core(settings, engine=engine, registry=registry, runtime=runtime, schedule=schedule,
                        state=state, open_state=True, isolated_updates=isolated_updates)
    ask_spec = core.registry.ask_spec()
    ask_flow = AskFlow(core.context, core.asker, options=ask_options,
                       command_id=ask_spec.id if ask_spec else "ask", state=core.state)
    if client is None:
        client = AsyncWebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url)
    app = build_app(core.context, asker=core.asker, ask_flow=ask_flow, client=client)
    bot = Bot(core=core, ask_flow=ask_flow, app=app)
    app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[BOT_KEY] = bot
    return bot


def create_app(settings: Settings, *, engine, registry: Registry, runtime: Runtime,
               client: "AsyncWebClient | None" = None, ask_options: "AskOptions | None" = None,
               state: "StateStore | ResilientState | None" = None) -> "AsyncApp":
    """The Bolt app of :func:`compose` (no reindex schedule: :func:`bot.server.start` adds it).

    Args: as :func:`compose`. The composed :class:`Bot` (context, ask flow …) is
    ``app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[bot.api.routes.BOT_KEY]``.
    """
    return compose(settings, engine=engine, registry=registry, runtime=runtime, client=client,
                   ask_options=ask_options, state=state).app
