"""The composition root: every object of a bot process is built here, in order, and handed in.

    bot = compose(settings, engine=engine, client=client)     # a Bot: nothing set later
    bot.app, bot.ask_flow, bot.core.context, bot.core.asker   # the Bolt app (/slack/events + /api/*) …

Order (each object receives what it needs; no attribute is filled in afterwards);
:func:`compose_core` builds the Slack-free part (the CLI uses it), :func:`compose` adds Slack::

    runtime, registry (on_error → runtime)          observability, commands
    state (settings, index path, metrics)           the state store, opened once (SQLite / PostgreSQL)
    feedback (state, metrics)                       👍/👎 votes in the store
    repositories (opened engines)                   per repository (bot.repos):
      reindexer (engine, runtime clock, run sink)     its index updater; runs are written to the store
                                                      (``serve``: each update in a child process)
      lease (state, repository, interval)             one replica per scheduled reindex of it
    scheduler (reindexers, leases)                  unstarted, one job per repository; ``schedule=False`` → none
    scoping (repositories, state)                   channel bindings, ``in:NAME`` (bot.scoping)
    model (settings)                                AI_* configuration
    context (settings, engine, registry, runtime, reindexer, model, scheduler, state, feedback, lease)
    tools (context, engine)                         the model's tools, per repository (and for ``all``)
    asker (engine, model, tools, metrics, ready check, command parsers, targets)
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
from bot.documents import DocumentService
from bot.config_file import RepoConfig
from bot.live_tools import build_tools
from bot.observability.runtime import Runtime
from bot.observability.feedback import FeedbackLog
from bot.repos import OpenedRepository, Repository, RepositorySet, extra_sources
from bot.scheduler import ScheduleLease, build_scheduler, job_id_for
from bot.scoping import Scoping
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

__all__ = ["Bot", "BotCore", "compose", "compose_core", "create_app", "open_state", "repo_config_for"]

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
        repos: every served repository (:class:`bot.repos.RepositorySet`); ``engine`` and
            ``reindexer`` are its default repository's.
        scoping: channel bindings and ``in:NAME`` (:class:`bot.scoping.Scoping`).
        updaters: the repositories' index update processes (:class:`bot.isolated_update.ProcessUpdate`,
            ``isolated_updates``), ended by :meth:`close`.
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
    repos: RepositorySet | None = None
    scoping: Scoping | None = None
    updaters: tuple[ProcessUpdate, ...] = ()

    def close(self) -> None:
        """End the kept index update processes (``updaters``) and close the state store if the
        composition root opened it (queued writes tried once more)."""
        for updater in self.updaters:
            updater.close()
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


def repo_config_for(engine, settings: Settings) -> RepoConfig:
    """The configured repository ``engine`` was opened for (same root), else one made from the settings."""
    root = engine.repo_root
    for config in settings.repository_configs:
        if config.path == root:
            return config
    base = settings.repository_configs[0]
    return RepoConfig(name=getattr(engine, "name", root.name), path=root, web_url=base.web_url,
                      index_path=engine.index.path, git_pull=base.git_pull,
                      reindex_interval_s=base.reindex_interval_s, default=True, github=base.github,
                      github_source=base.github_source)


def compose_core(settings: Settings, *, engine, registry: Registry | None = None, runtime: Runtime | None = None,
                 schedule: bool = False, state: "StateStore | ResilientState | None" = None,
                 open_state: bool = False, repositories: "list[OpenedRepository] | None" = None,
                 isolated_updates: bool = False) -> BotCore:
    """Build every Slack-free object around opened engines (imports neither Bolt nor the openai SDK).

    Args:
        settings: validated settings.
        engine: an opened :class:`rag.engine.Engine`: the one repository when ``repositories`` is not
            given (its configuration is the one with the same root, if any).
        registry: the command registry (default: ``build_registry(on_error=runtime.capture_command_error)``,
            so command crashes land in the captured errors).
        runtime: the process's runtime state (default: a new :class:`Runtime`).
        schedule: build the periodic reindex scheduler (one job per repository with an interval;
            started by the server).
        state: an opened :class:`StateStore` (shared; the caller closes it) or a :class:`ResilientState`.
        open_state: without ``state``, open the one the settings name (else memory only).
        repositories: every configured repository as opened by :func:`bot.repos.open_repositories`
            (broken ones included; the caller closes the engines). ``engine`` is then ignored.
        isolated_updates: run each index update in a child process (:class:`bot.isolated_update.ProcessUpdate`,
            so a reindex cannot starve the event loop of the GIL; ``slackzilla serve``), else in the
            reindexer's worker thread.

    Raises:
        ValueError: a negative ``REINDEX_INTERVAL_S`` (with ``schedule``).
        bot.repos.NoRepositoryError: no repository could be opened.
    """
    runtime = runtime or Runtime()
    registry = registry if registry is not None else build_registry(on_error=runtime.capture_command_error)
    opened = repositories if repositories is not None else [OpenedRepository(repo_config_for(engine, settings), engine)]
    first = next((o.engine for o in opened if o.engine is not None and o.config.default), None) \
        or next((o.engine for o in opened if o.engine is not None), engine)
    handle = _state_handle(state, settings, index_path=first.index.path if first is not None else None,
                           metrics=runtime.metrics, open_it=open_state)
    feedback = FeedbackLog(state=handle, metrics=runtime.metrics, clock=runtime.clock)
    members = []
    updaters: list[ProcessUpdate] = []
    for item in opened:
        repo = Repository(item.config, engine=item.engine, error=item.error)
        if item.engine is not None:
            updater = ProcessUpdate(item.engine) if isolated_updates else None
            if updater is not None:
                updaters.append(updater)
            repo.reindexer = Reindexer(item.engine, clock=runtime.clock, timeout_s=settings.reindex_timeout_s,
                                       on_record=_run_sink(handle, item.config.name) if handle.enabled else None,
                                       sources=extra_sources(item.config), update=updater)
            # built without a schedule too: the status then still names the replica that runs it
            interval = item.config.reindex_interval_s
            repo.lease = ScheduleLease(handle, repo=item.config.name, interval_s=interval) \
                if handle.enabled and interval > 0 else None
        members.append(repo)
    repos = RepositorySet(members)
    default = repos.default
    scheduler = None
    if schedule:
        for repo in repos.serving():
            scheduler = build_scheduler(repo.reindexer, interval_s=repo.config.reindex_interval_s,
                                        git_pull=repo.config.git_pull, lease=repo.lease, scheduler=scheduler,
                                        job_id=job_id_for(repo.name, default=repo is default))
    model = settings.engine.model
    scoping = Scoping(repos, handle)
    documents = DocumentService({r.name: r.engine for r in repos.serving()}, max_chars=settings.documents.max_chars)
    if len(repos.serving()) > 1:
        try:
            documents.sync_shared()
        except Exception as err:  # noqa: BLE001 - a copy is tried again at the next start
            log.warning("could not copy global documents into every repository (%s)", type(err).__name__)
    context = BotContext(settings, engine=default.engine, registry=registry, runtime=runtime,
                         reindexer=default.reindexer, model=model, scheduler=scheduler, state=handle,
                         feedback=feedback, lease=default.lease, repos=repos, scoping=scoping,
                         documents=documents)
    for repo in repos.serving():
        repo.tools = build_tools(context, engine=repo.engine)
    repos.federated_tools = lambda federated: build_tools(context, engine=federated, repository_tools=False)
    tools = default.tools
    asker = Asker(engine=default.engine, model=model, tools=tools, metrics=runtime.metrics,
                  require_ready=default.reindexer.require_ready, command_parsers=registry.question_parsers(),
                  targets=repos.target)
    return BotCore(settings=settings, engine=default.engine, runtime=runtime, registry=registry,
                   reindexer=default.reindexer, scheduler=scheduler, model=model, context=context, tools=tools,
                   asker=asker, state=handle, feedback=feedback, repos=repos, scoping=scoping,
                   updaters=tuple(updaters))


def compose(settings: Settings, *, engine, registry: Registry | None = None, runtime: Runtime | None = None,
            client: "AsyncWebClient | None" = None, ask_options: "AskOptions | None" = None,
            schedule: bool = False, state: "StateStore | ResilientState | None" = None,
            repositories: "list[OpenedRepository] | None" = None,
            isolated_updates: bool = False) -> Bot:
    """Build every object of a bot process: :func:`compose_core`, then the ask flow and the Bolt app.

    Args:
        settings, engine, registry, runtime, schedule, repositories,
            isolated_updates: as :func:`compose_core`
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
                        state=state, open_state=True, repositories=repositories,
                        isolated_updates=isolated_updates)
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
               state: "StateStore | ResilientState | None" = None,
               repositories: "list[OpenedRepository] | None" = None) -> "AsyncApp":
    """The Bolt app of :func:`compose` (no reindex schedule: :func:`bot.server.start` adds it).

    Args: as :func:`compose`. The composed :class:`Bot` (context, ask flow …) is
    ``app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[bot.api.routes.BOT_KEY]``.
    """
    return compose(settings, engine=engine, registry=registry, runtime=runtime, client=client,
                   ask_options=ask_options, state=state, repositories=repositories).app
