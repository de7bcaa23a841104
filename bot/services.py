"""Wiring: one :class:`BotContext` per process joins settings, engine, registry and runtime.

Slack handlers, the HTTP API and the model's live tools all call the same
methods here, so ``/sz-status``, ``GET /api/status`` and the ``getStatus`` tool
can never disagree (adapters convert and call; they hold no logic):

    ctx = BotContext(settings, engine=engine, registry=registry, runtime=runtime)
    ctx.status()                                       # dict, also /api/status and getStatus
    await ctx.run_command("hash", "sha256 abc", identity=Identity("U1"))   # CommandResult
    await ctx.answer("how is the index updated?", identity=Identity("U1"))  # AnswerResult

Commands reach bot services through :meth:`BotContext.command_services`, built
per request so that a reindex can announce itself to the person who asked and
an ask can hand its full answer (sources and all) back to the Slack renderer.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from bot.slack import messages
from bot.observability.runtime import Runtime, release_info
from bot.scheduler import next_run_at
from bot.settings import Settings
from commands.registry import CommandRequest, CommandResult, CommandServices, Registry
from rag.answer.orchestrator import answer_question
from rag.providers.llm import ModelConfig
from rag.ingest.reindexer import Reindexer, ReindexBusyError, RunRecord, current_commit
from rag.tools.adapter import ToolAdapter, ToolHandlers

__all__ = ["BotContext", "Identity"]

log = logging.getLogger(__name__)

Notify = Callable[[str], Awaitable[None]]
#: Reindex runs shown in the status (the reindexer keeps more).
DEFAULT_STATUS_RUNS = 5


@dataclass(frozen=True)
class Identity:
    """Who is asking: the Slack user (or the HTTP API caller) and whether they are an admin.

    Passed to the orchestrator as ``identity``; the live tools hand it back to
    :meth:`BotContext.run_command`, so the model acts with the asker's rights.
    """

    user_id: str | None
    is_admin: bool = False
    channel_id: str | None = None
    team_id: str | None = None
    source: str = "slack"

    def to_json(self) -> dict:
        return {"user_id": self.user_id, "is_admin": self.is_admin, "source": self.source}


class BotContext:
    """Everything one bot process needs, built once and passed to handlers and routes.

    Args:
        settings: validated settings.
        engine: an opened :class:`rag.engine.Engine`.
        registry: the command registry (build it with
            ``build_registry(on_error=runtime.capture_command_error)``).
        runtime: the process's :class:`Runtime`.
        model: the model configuration (default: ``settings.engine.model``, the ``AI_*`` variables).
    """

    def __init__(self, settings: Settings, *, engine, registry: Registry, runtime: Runtime,
                 model: ModelConfig | None = None) -> None:
        self.settings = settings
        self.engine = engine
        self.registry = registry
        self.runtime = runtime
        self.model = model or settings.engine.model
        self.reindexer = Reindexer(engine, clock=runtime.clock)
        self.tools = ToolAdapter(self.tool_handlers())
        self._startup_commit = current_commit(engine.repo_root)
        #: The periodic reindex scheduler, set by ``bot.server`` once started (``None``: off).
        self.scheduler = None
        #: The Slack ``/sz-ask`` flow (``bot.slack.ask_flow.AskFlow``), set by ``bot.slack.app.create_app``.
        self.ask_flow = None

    @property
    def commit(self) -> str | None:
        """The repository's checked-out commit, as of the last reindex (or start-up)."""
        history = self.reindexer.history
        return history[-1].commit if history and history[-1].commit else self._startup_commit

    # -- read-only views (Slack, /api/*, live tools) --------------------------------------------
    def status(self) -> dict:
        """``{"version", "uptime_s", "started_at", "next_reindex_at", "repo", "commit", "mode", "model",
        "index": {generation, ready, updated_at, age_s, files, chunks}, "reindex": {running, trigger, user,
        started_at, done, total, last_success_at, last_error, runs, busy_refusals, history}}``."""
        state = self.reindexer.state.to_json()
        try:
            files, chunks = self.engine.index.counts()
        except Exception as err:  # noqa: BLE001 - status must answer even with a broken index
            log.warning("status: index unreadable (%s)", type(err).__name__)
            files, chunks = None, None
        data = self.runtime.status()
        data.update({
            "next_reindex_at": next_run_at(self.scheduler),
            "repo": self.engine.repo_root.name,
            "commit": self.commit,
            "mode": "socket" if self.settings.socket_mode else "http",
            "model": self.model.model if self.model.enabled else None,
            "index": {key: state.pop(key) for key in ("generation", "ready", "updated_at", "age_s")},
            "reindex": state,
        })
        data["index"].update({"files": files, "chunks": chunks})
        state["history"] = [run.to_json() for run in self.reindexer.history[-DEFAULT_STATUS_RUNS:]]
        return data

    def commands(self) -> list[dict]:
        """Every command: ``{id, name, description, category, usage, admin_only, ai_safe}``."""
        return [
            {"id": s.id, "name": s.slash, "description": s.description, "category": s.category,
             "usage": s.usage, "admin_only": s.admin_only, "ai_safe": s.ai_safe}
            for s in self.registry.all()
        ]

    def release(self) -> dict:
        """Slackzilla's version and latest CHANGELOG section (see ``runtime.release_info``).

        Not the indexed repository's changelog: this describes the running bot.
        """
        return release_info()

    def logs(self, *, limit: int = 50, level: str | None = None, include_stack: bool = False) -> list[dict]:
        """Newest log records first. Raises ``ValueError`` for an unknown level."""
        entries = self.runtime.logs.entries(limit=limit, level=level)
        return [e.to_json(include_stack=include_stack) for e in entries]

    def errors(self, *, limit: int = 50, include_stack: bool = False) -> list[dict]:
        return [e.to_json(include_stack=include_stack) for e in self.runtime.errors.entries(limit=limit)]

    def metrics(self) -> dict:
        """The runtime's metrics snapshot, reindex counts included."""
        self._sync_reindex_metrics()
        return self.runtime.metrics.snapshot()

    def prometheus_text(self) -> bytes:
        """The Prometheus exposition of this process's metrics."""
        self._sync_reindex_metrics()
        return self.runtime.metrics.prometheus_text()

    def _sync_reindex_metrics(self) -> None:
        state = self.reindexer.state
        self.runtime.metrics.set_reindex(runs=state.runs, busy_refusals=state.busy_refusals)

    def routes(self) -> list[dict]:
        """HTTP routes found in the indexed code (the engine's code graph), as
        ``{"path" (file), "line", "method", "route", "router", ...}`` records."""
        return [route.to_json() for route in self.engine.code_graph().routes()]

    # -- actions ------------------------------------------------------------------------------
    async def run_command(self, command_id: str, text: str, *, identity: Identity, source: str = "slack",
                          notify: Notify | None = None, answers: list | None = None, on_activity=None,
                          on_token=None, history: list[dict] | None = None) -> CommandResult:
        """Run one command through the registry (admin checks included) and record its metrics.

        ``on_activity``, ``on_token`` and ``history`` reach the orchestrator when the
        command is an ask (see :meth:`answer`).
        """
        request = CommandRequest(
            command_id=command_id, text=text, user_id=identity.user_id, channel_id=identity.channel_id,
            is_admin=identity.is_admin, source=source,
            services=self.command_services(identity, notify=notify, answers=answers, on_activity=on_activity,
                                           on_token=on_token, history=history),
        )
        started = time.perf_counter()
        result = await self.registry.run(request)
        spec = self.registry.get(command_id)
        self.runtime.metrics.record_command(spec.id if spec else "unknown", time.perf_counter() - started,
                                            ok=result.ok)
        return result

    def command_services(self, identity: Identity, *, notify: Notify | None = None,
                         answers: list | None = None, on_activity=None, on_token=None,
                         history: list[dict] | None = None) -> CommandServices:
        """The services one command request gets.

        Args:
            identity: the caller.
            notify: posts a progress line to the caller (the reindex announces itself with it).
            answers: when given, an ask appends its full ``AnswerResult`` here for rendering.
            on_activity, on_token: an ask's progress callbacks (see :meth:`answer`).
            history: an ask's earlier thread turns (follow-up questions).
        """

        async def ask(question: str) -> CommandResult:
            result = await self.answer(question, identity=identity, on_activity=on_activity, on_token=on_token,
                                       history=history)
            if answers is not None:
                answers.append(result)
            return CommandResult(text=result.answer, ok=True, ephemeral=False, data=result.to_json())

        async def reindex(full: bool, user_id: str | None) -> CommandResult:
            return await self.reindex_command(full=full, user_id=user_id, notify=notify)

        async def status() -> dict:
            return self.status()

        return CommandServices(ask=ask, reindex=reindex, status=status, registry=self.registry)

    async def reindex_command(self, *, full: bool, user_id: str | None, notify: Notify | None) -> CommandResult:
        """``/sz-reindex``: announce, update, summarise; a busy or failed run is ``ok=False``.

        The update is :meth:`rag.ingest.reindexer.Reindexer.run_async`, the same call the
        scheduler makes, so both share one lock (in this process and across processes).
        """

        async def announce(record: RunRecord) -> None:
            if notify is not None:
                await notify(messages.reindex_started(user_id=user_id, full=full))

        try:
            record = await self.reindexer.run_async(trigger="admin", full=full, user=user_id, on_start=announce)
        except ReindexBusyError as busy:
            running_s = None if busy.started_at is None else max(0.0, self.runtime.clock() - busy.started_at)
            return CommandResult(text=messages.reindex_busy(started_by=busy.user, running_s=running_s),
                                 ok=False, data={"error": "busy"})
        if not record.ok:
            return CommandResult(text=messages.reindex_failed(record.error or "unknown error"), ok=False,
                                 ephemeral=False, data=record.to_json())
        return CommandResult(text=messages.reindex_summary(stats=record.to_json(), seconds=record.duration_s or 0.0,
                                                           full=full),
                             ephemeral=False, data=record.to_json())

    async def answer(self, question: str, *, identity: Identity, on_activity=None, on_token=None,
                     with_ai: bool = True, history: list[dict] | None = None):
        """Answer ``question`` with the orchestrator and live tools; records ask metrics.

        ``history`` is the thread so far (``[{"role": "user"|"assistant", "content"}]``)
        for a follow-up question.

        Returns:
            a :class:`rag.answer.orchestrator.AnswerResult` (model failures are inside it, in ``error``).

        Raises:
            rag.errors.UserError: empty question (and other bad input), or no index yet
                (``IndexBuildingError`` says how far the first build is).
        """
        self.reindexer.require_ready()
        try:
            result = await answer_question(
                question, engine=self.engine, model=self.model, identity=identity, tools=self.tools,
                on_activity=on_activity, on_token=on_token, with_ai=with_ai, history=history,
            )
        except Exception:
            self.runtime.metrics.record_ask(ok=False)
            raise
        self.runtime.metrics.record_ask(ok=result.error is None, input_tokens=result.usage.prompt_tokens,
                                        output_tokens=result.usage.completion_tokens,
                                        declined=result.grounding is not None and result.grounding.declined)
        return result

    # -- live tools -----------------------------------------------------------------------------
    def tool_handlers(self) -> ToolHandlers:
        """The :class:`rag.tools.adapter.ToolHandlers` reading this context (same data as ``/api/*``)."""

        async def run_command(*, command_id: str, text: str, identity: Any) -> dict:
            who = identity if isinstance(identity, Identity) else Identity(None)
            result = await self.run_command(command_id, text, identity=who, source="tool")
            return result.to_json()

        async def get_logs(*, limit: int, level: str | None = None, include_stack: bool = False) -> list[dict]:
            return self.logs(limit=limit, level=level, include_stack=include_stack)

        async def get_errors(*, limit: int, include_stack: bool = False) -> list[dict]:
            return self.errors(limit=limit, include_stack=include_stack)

        return ToolHandlers(
            get_status=_async(self.status),
            get_commands=_async(self.commands),
            get_release_info=_async(self.release),
            run_command=run_command,
            get_logs=get_logs,
            get_errors=get_errors,
            get_metrics=_async(self.metrics),
            get_routes=_async(self.routes),
        )


def _async(function: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    """Wrap a quick synchronous reader so the tools adapter awaits it on the loop (no thread)."""

    async def call() -> Any:
        return function()

    return call
