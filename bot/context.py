"""What the bot knows and can do, read by Slack, the HTTP API and the live tools alike.

One :class:`BotContext` per process (built by :mod:`bot.compose`), so ``/sz-status``,
``GET /api/status`` and the ``getStatus`` tool can never disagree (adapters convert
and call; they hold no logic):

    ctx = BotContext(settings, engine=engine, registry=registry, runtime=runtime,
                     reindexer=reindexer, model=model, scheduler=scheduler)
    ctx.status()                                                            # dict
    await ctx.run_command("hash", "sha256 abc", identity=Identity("U1"))    # CommandResult

Questions are not commands: they go to :class:`bot.asker.Asker`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from bot.identity import Identity
from bot.observability.release import release_info
from bot.observability.runtime import Runtime
from bot.observability.feedback import FeedbackLog
from bot.scheduler import ScheduleLease, next_run_at
from bot.state.resilient import ResilientState
from bot.settings import Settings
from commands.registry import CommandRequest, CommandResult, CommandServices, Registry
from rag.ingest.reindexer import Reindexer, current_commit
from rag.ingest.stats import DEGRADED_REASONS
from rag.providers.llm import ModelConfig

__all__ = ["BotContext", "DEFAULT_STATUS_RUNS"]

log = logging.getLogger(__name__)

Notify = Callable[[str], Awaitable[None]]
#: Reindex runs shown in the status (the reindexer keeps more).
DEFAULT_STATUS_RUNS = 5


class BotContext:
    """The bot's state and commands, built once and passed to handlers, routes and live tools.

    Args:
        settings: validated settings (``socket_mode``, ``is_admin``, ``repo_web_url`` are read).
        engine: an opened :class:`rag.engine.Engine`.
        registry: the command registry (build it with
            ``build_registry(on_error=runtime.capture_command_error)``).
        runtime: the process's :class:`bot.observability.runtime.Runtime`.
        reindexer: the process's :class:`rag.ingest.reindexer.Reindexer` around ``engine``.
        model: the model configuration (status shows its model name when enabled).
        scheduler: the periodic reindex scheduler (``None``: no schedule); its next run is in the status.
        state: the state store handle (:class:`bot.state.resilient.ResilientState`; ``None``: memory only).
        feedback: the 👍/👎 votes (default: a :class:`FeedbackLog` on ``state``).
        lease: the scheduled reindex's lease shared by replicas (its holder is in the status).
        repos: every served repository (:class:`bot.repos.RepositorySet`; ``None``: ``engine`` alone).
            ``engine``, ``reindexer`` and ``lease`` are the default repository's.
        scoping: channel bindings (:class:`bot.scoping.Scoping`), for ``/sz-repo``.
        documents: the documents of every repository (:class:`bot.documents.DocumentService`).
    """

    def __init__(self, settings: Settings, *, engine, registry: Registry, runtime: Runtime, reindexer: Reindexer,
                 model: ModelConfig, scheduler=None, state: ResilientState | None = None,
                 feedback: FeedbackLog | None = None, lease: ScheduleLease | None = None,
                 repos=None, scoping=None, documents=None) -> None:
        self.settings = settings
        self.documents = documents
        self.repos = repos
        self.scoping = scoping
        self.state = state if state is not None else ResilientState.memory_only(settings.replica_id)
        self.feedback = feedback if feedback is not None else FeedbackLog(state=self.state, metrics=runtime.metrics)
        self.lease = lease
        self.engine = engine
        self.registry = registry
        self.runtime = runtime
        self.reindexer = reindexer
        self.model = model
        self.scheduler = scheduler
        self._startup_commits = {}
        for repo in (repos.serving() if repos is not None else ()):
            if repo.engine is not engine:
                self._startup_commits[repo.name] = current_commit(repo.engine.repo_root)
        self._startup_commit = current_commit(engine.repo_root)

    @property
    def commit(self) -> str | None:
        """The default repository's checked-out commit, as of the last reindex (or start-up)."""
        history = self.reindexer.history
        return history[-1].commit if history and history[-1].commit else self._startup_commit

    def commit_of(self, name: str | None) -> str | None:
        """The checked-out commit of the repository ``name`` (``None``: the default), as of its last reindex."""
        repo = self.repos.find(name) if self.repos is not None and name else None
        if repo is None or repo.engine is self.engine:
            return self.commit
        history = repo.reindexer.history if repo.reindexer is not None else []
        return history[-1].commit if history and history[-1].commit else self._startup_commits.get(repo.name)

    def web_url_of(self, name: str | None) -> str | None:
        """The web URL of the repository ``name`` for source links (``None``: the default's)."""
        repo = self.repos.find(name) if self.repos is not None and name else None
        if repo is None:
            repo = self.repos.default if self.repos is not None else None
        if repo is None:
            return self.settings.repo_web_url
        return repo.config.web_url

    # -- read-only views (Slack, /api/*, live tools) --------------------------------------------
    def status(self) -> dict:
        """``{"version", "uptime_s", "started_at", "next_reindex_at", "repo", "commit", "mode", "model",
        "index": {generation, ready, updated_at, age_s, files, chunks, not_indexed}, "reindex": {running, trigger,
        user, started_at, done, total, last_success_at, last_error, runs, busy_refusals, history}}``;
        ``not_indexed`` names the odd files the last successful run skipped, by reason (``None``: none;
        files it indexed coarser than usual, :data:`rag.ingest.stats.DEGRADED_REASONS`, are not among them)."""
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
        data["index"].update({"files": files, "chunks": chunks, "not_indexed": self._not_indexed()})
        state["history"] = self.run_history(DEFAULT_STATUS_RUNS)
        if self.lease is not None:
            holder = self.lease.holder()
            state["scheduled_by"] = holder[0] if holder else None
            state["schedule_lease_until_at"] = holder[1] if holder else None
            state["schedule_skipped"] = self.lease.skipped
        data["state"] = self.state_status()
        data["repositories"] = self.repositories_status()
        github = [row["github"] for row in data["repositories"] if row.get("github")]
        if github:  # issues and pull requests: the last refresh per repository (rag.sources.github)
            data["github"] = "; ".join(github)
        return data

    def repositories_status(self) -> list[dict]:
        """Per repository: ``{"name", "default", "ok", "error", "path", "web_url", "files", "chunks",
        "documents", "generation", "ready", "updated_at", "running", "last_run_at", "last_run_ok",
        "github", "next_reindex_at", "interval_s"}`` (``github``: the last issues/PR refresh in one line, or ``None``) (a broken one has ``ok`` false and its ``error``)."""
        from bot.scheduler import job_id_for

        if self.repos is None:
            return []
        rows = []
        for repo in self.repos:
            row = {"name": repo.name, "default": repo is self.repos.default, "ok": repo.ok, "error": repo.error,
                   "path": str(repo.config.path), "web_url": repo.config.web_url,
                   "interval_s": repo.config.reindex_interval_s}
            if repo.ok:
                state = repo.reindexer.state.to_json()
                try:
                    files, chunks = repo.engine.index.counts()
                except Exception as err:  # noqa: BLE001 - status must answer even with a broken index
                    log.warning("status: index of %s unreadable (%s)", repo.name, type(err).__name__)
                    files, chunks = None, None
                last = repo.reindexer.history[-1] if repo.reindexer.history else None
                row.update({"files": files, "chunks": chunks, "documents": _document_count(repo.engine),
                            "generation": state.get("generation"), "ready": state.get("ready"),
                            "updated_at": state.get("updated_at"), "running": state.get("running"),
                            "last_run_at": last.started_at if last is not None else None,
                            "last_run_ok": last.ok if last is not None else None,
                            "github": _github_line(repo.reindexer.history),
                            "next_reindex_at": next_run_at(self.scheduler, job_id_for(
                                repo.name, default=repo is self.repos.default))})
            rows.append(row)
        return rows

    def run_history(self, limit: int = DEFAULT_STATUS_RUNS) -> list[dict]:
        """The last ``limit`` reindex runs of this repository, oldest first: from the state store
        (every replica's, across restarts) when it answers, else this process's."""
        repo = self.engine.repo_root.name
        local = [run.to_json() for run in self.reindexer.history[-limit:]]
        if self.state.enabled:
            ok, runs = self.state.call("runs", lambda s: s.runs(repo, limit=limit))
            if ok:  # this process's runs not written yet (the write is on its way, or queued) join them
                known = {run.get("id") for run in runs}
                merged = runs + [run for run in local if run["id"] not in known]
                merged.sort(key=lambda run: run.get("started_at") or 0)
                return merged[-limit:]
        return local

    def state_status(self) -> dict:
        """``{"backend", "where", "replica", "available", "pending_writes"}`` (no secrets)."""
        info = self.state.describe()
        if not self.state.enabled:
            return {"backend": "memory", "where": None, "replica": info["replica"], "available": None,
                    "pending_writes": 0}
        if self.state.store is not None:
            self.state.call("check", lambda s: s.check())
            info = self.state.describe()
        return {key: info[key] for key in ("backend", "where", "replica", "available", "pending_writes")}

    def _not_indexed(self, shown: int = 5) -> str | None:
        """``"data.json (data_file), caf\\xe9.js (undecodable_name) and 3 more"`` from the last good run."""
        last = next((run for run in reversed(self.reindexer.history) if run.ok), None)
        problems = [p for p in (last.stats.problems if last is not None else []) if p["reason"] not in DEGRADED_REASONS]
        if not problems:
            return None
        text = ", ".join(f"{p['path']} ({p['reason']})" for p in problems[:shown])
        return text + (f" and {len(problems) - shown} more" if len(problems) > shown else "")

    def commands(self) -> list[dict]:
        """Every command: ``{id, name, description, category, usage, admin_only, ai_safe}``."""
        return [
            {"id": s.id, "name": s.slash, "description": s.description, "category": s.category,
             "usage": s.usage, "admin_only": s.admin_only, "ai_safe": s.ai_safe}
            for s in self.registry.all()
        ]

    def release(self) -> dict:
        """Slackzilla's version and latest CHANGELOG section (see :func:`bot.observability.release.release_info`).

        Not the indexed repository's changelog: this describes the running bot.
        """
        return release_info()

    def logs(self, *, limit: int = 50, level: str | None = None, include_stack: bool = False) -> list[dict]:
        """Newest log records first. Raises ``ValueError`` for an unknown level."""
        entries = self.runtime.logs.entries(limit=limit, level=level)
        return [e.to_json(include_stack=include_stack) for e in entries]

    def errors(self, *, limit: int = 50, include_stack: bool = False) -> list[dict]:
        """Newest captured errors first: ``{"type", "message", "time", "command"[, "stack"]}``."""
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
        if self.repos is not None:
            self.runtime.metrics.set_repositories(self.repositories_status())
        counts = self.feedback.counts()  # the store's votes: every replica's, across restarts
        if counts is not None:
            self.runtime.metrics.set_feedback_current(counts)
        if self.state.enabled:
            self.runtime.metrics.set_state_available(self.state.available)

    def routes(self, *, engine=None) -> list[dict]:
        """HTTP routes found in the indexed code (the code graph of ``engine``, default the default
        repository's; a :class:`rag.federation.FederatedEngine` gives every repository's), as
        ``{"path" (file), "line", "method", "route", "router", ...}`` records."""
        engine = engine if engine is not None else self.engine
        if hasattr(engine, "routes"):
            return engine.routes()
        return [route.to_json() for route in engine.code_graph().routes()]

    # -- commands -------------------------------------------------------------------------------
    async def run_command(self, command_id: str, text: str, *, identity: Identity, source: str = "slack",
                          notify: Notify | None = None) -> CommandResult:
        """Run one command through the registry (admin checks included) and record its metrics.

        Args:
            command_id: ``"hash"``, ``"sz-hash"`` or ``"/sz-hash"``.
            text: what followed the command name.
            identity: the caller (admin rights, channel).
            source: ``"slack"``, ``"tool"``, ``"api"`` or ``"cli"``.
            notify: posts a progress line to the caller (``/sz-reindex`` announces itself with it).

        Returns:
            the :class:`commands.registry.CommandResult` (never raises: see :meth:`Registry.run`).
        """
        request = CommandRequest(
            command_id=command_id, text=text, user_id=identity.user_id, channel_id=identity.channel_id,
            is_admin=identity.is_admin, source=source,
            services=CommandServices(reindexer=self.reindexer, reindexers=self._reindexers(), notify=notify,
                                     status=self._status, registry=self.registry, repos=self.scoping),
        )
        started = time.perf_counter()
        result = await self.registry.run(request)
        spec = self.registry.get(command_id)
        self.runtime.metrics.record_command(spec.id if spec else "unknown", time.perf_counter() - started,
                                            ok=result.ok)
        return result

    def _reindexers(self) -> dict | None:
        """Each serving repository's reindexer by name (``/sz-reindex NAME``); ``None`` with one repository."""
        if self.repos is None or len(self.repos.serving()) <= 1:
            return None
        return {repo.name: repo.reindexer for repo in self.repos.serving() if repo.reindexer is not None}

    async def _status(self) -> dict:
        """The status for ``/sz-status`` (read in a worker thread)."""
        return await asyncio.to_thread(self.status)  # the state store is read in a worker thread


def _document_count(engine) -> int | None:
    """Documents stored in ``engine``'s index (:mod:`rag.documents`), ``None`` when unreadable."""
    try:
        from rag.documents import DocumentStore

        return DocumentStore(engine.index).count()
    except Exception:  # noqa: BLE001 - a status field, never fatal
        return None


def _github_line(history) -> str | None:
    """The last run's issues/pull requests refresh as one line (:func:`rag.sources.github.github_status`)."""
    from rag.sources.github import github_status

    last = next((run for run in reversed(history) if run.sources and "github" in run.sources), None)
    return github_status(last.sources["github"]) if last is not None else None
