"""The composition root: every object of a bot process is built here, in order, and handed in.

    bot = compose(settings, engine=engine, client=client)     # a Bot: nothing set later
    bot.app, bot.ask_flow, bot.core.context, bot.core.asker   # the Bolt app (/slack/events + /api/*) …

Order (each object receives what it needs; no attribute is filled in afterwards);
:func:`compose_core` builds the Slack-free part (the CLI uses it), :func:`compose` adds Slack::

    runtime, registry (on_error → runtime)          observability, commands
    reindexer (engine, runtime clock)               the one index updater (scheduler, /sz-reindex)
    scheduler (reindexer)                           unstarted; ``schedule=False`` → none
    model (settings)                                AI_* configuration
    context (settings, engine, registry, runtime, reindexer, model, scheduler)
    tools (context)                                 the model's live tools
    asker (engine, model, tools, metrics, ready check, command parsers)
    ask flow (context, asker)                       Slack's /sz-ask experience
    app (context, asker, ask flow, client)          Bolt + HTTP API

:func:`create_app` is the app factory tests and :func:`bot.server.start` use.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.asker import Asker
from bot.context import BotContext
from bot.live_tools import build_tools
from bot.observability.runtime import Runtime
from bot.scheduler import build_scheduler
from bot.settings import Settings
from commands.registry import Registry, build_registry
from rag.ingest.reindexer import Reindexer
from rag.providers.llm import ModelConfig
from rag.tools.adapter import ToolAdapter

if TYPE_CHECKING:  # pragma: no cover
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.slack.ask_flow import AskFlow, AskOptions

__all__ = ["Bot", "BotCore", "compose", "compose_core", "create_app"]

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


def compose_core(settings: Settings, *, engine, registry: Registry | None = None, runtime: Runtime | None = None,
                 schedule: bool = False) -> BotCore:
    """Build every Slack-free object around an opened engine (imports neither Bolt nor the openai SDK).

    Args:
        settings: validated settings.
        engine: an opened :class:`rag.engine.Engine`.
        registry: the command registry (default: ``build_registry(on_error=runtime.capture_command_error)``,
            so command crashes land in the captured errors).
        runtime: the process's runtime state (default: a new :class:`Runtime`).
        schedule: build the periodic reindex scheduler (``REINDEX_INTERVAL_S``; started by the server).

    Raises:
        ValueError: a negative ``REINDEX_INTERVAL_S`` (with ``schedule``).
    """
    runtime = runtime or Runtime()
    registry = registry if registry is not None else build_registry(on_error=runtime.capture_command_error)
    reindexer = Reindexer(engine, clock=runtime.clock)
    scheduler = build_scheduler(reindexer, interval_s=settings.reindex_interval_s,
                                git_pull=settings.repo_git_pull) if schedule else None
    model = settings.engine.model
    context = BotContext(settings, engine=engine, registry=registry, runtime=runtime, reindexer=reindexer,
                         model=model, scheduler=scheduler)
    tools = build_tools(context)
    asker = Asker(engine=engine, model=model, tools=tools, metrics=runtime.metrics,
                  require_ready=reindexer.require_ready, command_parsers=registry.question_parsers())
    return BotCore(settings=settings, engine=engine, runtime=runtime, registry=registry, reindexer=reindexer,
                   scheduler=scheduler, model=model, context=context, tools=tools, asker=asker)


def compose(settings: Settings, *, engine, registry: Registry | None = None, runtime: Runtime | None = None,
            client: "AsyncWebClient | None" = None, ask_options: "AskOptions | None" = None,
            schedule: bool = False) -> Bot:
    """Build every object of a bot process: :func:`compose_core`, then the ask flow and the Bolt app.

    Args:
        settings, engine, registry, runtime, schedule: as :func:`compose_core`
            (``SLACK_BOT_TOKEN`` is needed unless ``client`` has a token).
        client: the Web API client; default ``AsyncWebClient(token, base_url=SLACK_API_URL)``.
        ask_options: intervals and limits of the ``/sz-ask`` flow (default ``AskOptions()``).

    Returns:
        the :class:`Bot`; it is also ``bot.app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[bot.api.routes.BOT_KEY]``.
    """
    # Slack is imported here, not at the top: the CLI composes the core without loading Bolt.
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.api.routes import BOT_KEY
    from bot.slack.app import SLACK_EVENTS_PATH, build_app
    from bot.slack.ask_flow import AskFlow

    core = compose_core(settings, engine=engine, registry=registry, runtime=runtime, schedule=schedule)
    ask_spec = core.registry.ask_spec()
    ask_flow = AskFlow(core.context, core.asker, options=ask_options,
                       command_id=ask_spec.id if ask_spec else "ask")
    if client is None:
        client = AsyncWebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url)
    app = build_app(core.context, asker=core.asker, ask_flow=ask_flow, client=client)
    bot = Bot(core=core, ask_flow=ask_flow, app=app)
    app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[BOT_KEY] = bot
    return bot


def create_app(settings: Settings, *, engine, registry: Registry, runtime: Runtime,
               client: "AsyncWebClient | None" = None, ask_options: "AskOptions | None" = None) -> "AsyncApp":
    """The Bolt app of :func:`compose` (no reindex schedule: :func:`bot.server.start` adds it).

    Args: as :func:`compose`. The composed :class:`Bot` (context, ask flow …) is
    ``app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)[bot.api.routes.BOT_KEY]``.
    """
    return compose(settings, engine=engine, registry=registry, runtime=runtime, client=client,
                   ask_options=ask_options).app
