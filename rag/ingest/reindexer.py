"""Keeping the index current: one update at a time, recorded, off the event loop.

    reindexer = Reindexer(Engine.open(repo))
    record = reindexer.run(trigger="cli")                                  # blocking
    record = await reindexer.run_async(trigger="admin", user="U123", full=True)
    reindexer.state.to_json()          # running, progress, last success, generation, age
    reindexer.history                  # the last DEFAULT_HISTORY RunRecords, newest last

**One lock.** An in-process :class:`threading.Lock` plus a ``filelock.FileLock``
(``fcntl.flock``) at ``<index>.lock``, both taken without waiting: never two
updates of one index file at once, across threads and processes. A request
that finds one running gets :class:`ReindexBusyError` instead of queueing. The
holder writes ``{pid, trigger, user, started_at}`` to ``<index>.lock.json`` so
another process can say who is running it. The kernel drops a ``flock`` when
its process dies, so a killed update never leaves a stale lock.

**Failure.** ``Engine.update`` writes in one SQLite transaction
(:mod:`rag.store.index`): an exception, a full disk or a killed process leaves the
previous generation in place. The run is recorded with ``ok=False`` and a
one-line, redacted error; the next run simply tries again.

**Off the loop.** :meth:`Reindexer.run_async` runs the update in a worker
thread (``asyncio.to_thread``) with its own SQLite connection
(:class:`rag.store.index.Index` keeps one per thread). Measured here during full
reindexes of eslint 9.39.5 (425 files, 2 busy shared cores): an aiohttp
``/healthz`` on the same loop, polled every 10 ms from another process,
answered with p95 6-15 ms (p50 1-3 ms), tree-sitter parsing included. With
dozens of questions answered at the same time the thread's share of the GIL
delayed Slack's acks by seconds, so the bot hands in an ``update`` that runs
``Engine.update`` in a child process (the lock and the record stay here).

**Worker processes.** A large update prepares its files in a process pool
(:mod:`rag.ingest.pool`, ``INDEX_WORKERS``); the update's thread only waits for
results and writes them, in one transaction as before. The deadline and shutdown
still apply (``should_stop`` is polled while waiting; stuck workers are
terminated), and a worker that dies fails the run with
:class:`~rag.errors.IndexWorkerError`, nothing written.
"""
from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import re
import subprocess
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import filelock

from rag.engine import Engine
from rag.errors import IndexUnavailableError, RagError, UpdateCancelledError, UserError
from rag.ingest.stats import IndexStats
from rag.secrets import redact_secrets

__all__ = [
    "Reindexer", "RunRecord", "GitPullResult", "ReindexState", "ReindexBusyError", "IndexBuildingError",
    "TRIGGERS", "DEFAULT_HISTORY", "DEFAULT_GIT_TIMEOUT_S", "current_commit", "pull_ff_only", "error_line",
]

log = logging.getLogger(__name__)

#: Who may start an update.
TRIGGERS: tuple[str, ...] = ("schedule", "admin", "startup", "cli")
#: Finished runs kept in :attr:`Reindexer.history`.
DEFAULT_HISTORY = 20
#: Deadline of ``git pull --ff-only`` (seconds).
DEFAULT_GIT_TIMEOUT_S = 60.0
DEFAULT_RUN_TIMEOUT_S = 1800.0
"""Longest one update may take (``REINDEX_TIMEOUT_S``): past it the update stops at its next
file, writes nothing and the run is recorded as failed, so a stuck run never blocks every
later scheduled one as "already running"."""
#: Deadline of ``git rev-parse HEAD`` (seconds).
DEFAULT_REV_PARSE_TIMEOUT_S = 5.0
#: Longest error text kept in a record (characters).
MAX_ERROR_CHARS = 300

_URL_CREDENTIALS = re.compile(r"(\w+://)[^/\s@]+@")
_SHA = re.compile(r"[0-9a-f]{40,64}")


class ReindexBusyError(RagError):
    """An update of this index is already running (in this process or another one).

    Attributes:
        trigger, user, started_at (epoch s), pid: the running update, ``None`` when unknown.
    """

    def __init__(self, *, trigger: str | None = None, user: str | None = None,
                 started_at: float | None = None, pid: int | None = None) -> None:
        self.trigger, self.user, self.started_at, self.pid = trigger, user, started_at, pid
        parts = []
        if trigger:
            parts.append(f"trigger: {trigger}")
        if started_at:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started_at))
            parts.append(f"since {stamp}, {max(0.0, time.time() - started_at):.0f} s ago")
        detail = f" ({'; '.join(parts)})" if parts else ""
        super().__init__(f"An index update is already running{detail}; try again when it has finished.")


class IndexBuildingError(UserError):
    """The index has no generation yet; ``str(err)`` says how far the first build is."""


class IndexEmptyError(UserError):
    """The index is built but holds no file; ``str(err)`` says why (the last run's skip reasons)."""


def empty_index_message(repo_name: str, last: "RunRecord | None") -> str:
    """Why nothing can be answered: ``Nothing is indexed in shop: the last update read no file
    it could index (skipped: 12 ignored, 3 binary). …``; without a run record, says so."""
    if last is not None and last.ok:
        skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(last.stats.skipped.items(),
                                                                            key=lambda kv: (-kv[1], kv[0])))
        why = f"the last update found no file it could index (skipped: {skipped or 'nothing: the folder is empty'})"
    else:
        why = "the index holds no file (`slackzilla index` lists what was skipped and why)"
    return (f"Nothing is indexed in {repo_name}: {why}. Check that REPO_PATH (or --repo) points at the "
            "repository, and its .gitignore/.szignore rules; then reindex.")


@dataclass(slots=True)
class GitPullResult:
    """Outcome of ``git pull --ff-only``: ``message`` is one sanitised line; times in seconds."""

    ok: bool
    returncode: int | None
    message: str
    duration_s: float
    before: str | None = None
    after: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(slots=True)
class RunRecord:
    """One update: who started it, when, what changed and how it ended.

    Attributes:
        id: random 12-hex id.
        trigger: one of :data:`TRIGGERS`; user: the admin's id for ``admin`` runs.
        full: a full rebuild.
        started_at: epoch seconds; duration_s: wall time (``None`` while running).
        stats: the update's :class:`~rag.ingest.stats.IndexStats` (all zero while running and
            when the update failed): files and chunks indexed, files added/changed/removed,
            skipped reasons, secrets redacted in re-read files.
        generation: the index generation after the run (the update's on success; read from
            the index after a failure; ``None`` while running or when unreadable).
        ok: ``None`` while running, then ``True``/``False``; error: one redacted line.
        git: the :class:`GitPullResult` JSON when a pull was asked for.
        commit: the checked-out commit after the run (``None`` outside git).
        embeddings: ``{"model", "planned", "embedded", "seconds", "error"}`` when the engine
            has an embeddings provider (vectors are added after the lexical commit).
        sources: per extra source (``{"github": {...}}``, :mod:`rag.sources.github`), its report; a
            source that failed has ``"ok": false`` and its ``"error"``, and the run is still ``ok``.
    """

    id: str
    trigger: str
    started_at: float
    user: str | None = None
    full: bool = False
    duration_s: float | None = None
    stats: IndexStats = field(default_factory=IndexStats)
    generation: int | None = None
    ok: bool | None = None
    error: str | None = None
    git: dict | None = None
    commit: str | None = None
    embeddings: dict | None = None
    sources: dict | None = None

    def to_json(self) -> dict:
        """The flat JSON of ``/sz-status``, ``/api/status`` and the CLI (a deep copy), keys in this order:
        ``id, trigger, started_at, user, full, duration_s, added, changed, removed, skipped,
        redactions, files, chunks, generation, ok, error, git, commit, embeddings, problems, sources``
        (``problems``: the odd files not indexed, and those indexed coarser than usual
        (:data:`rag.ingest.stats.DEGRADED_REASONS`), ``[{"path", "reason"}]``)."""
        s = self.stats
        return {
            "id": self.id, "trigger": self.trigger, "started_at": self.started_at, "user": self.user,
            "full": self.full, "duration_s": self.duration_s,
            "added": s.added, "changed": s.changed, "removed": s.removed, "skipped": dict(s.skipped),
            "redactions": s.redactions, "files": s.files, "chunks": s.chunks, "generation": self.generation,
            "ok": self.ok, "error": self.error, "git": copy.deepcopy(self.git), "commit": self.commit,
            "embeddings": copy.deepcopy(self.embeddings),
            "problems": copy.deepcopy(s.problems),
            "sources": copy.deepcopy(self.sources),
        }


@dataclass(slots=True)
class ReindexState:
    """A snapshot for status pages (times in epoch seconds, ages in seconds).

    ``done``/``total`` count files of the running update (``total`` is ``None``
    until the walk has finished). ``ready`` means the index has generation ≥ 1.
    """

    running: bool
    trigger: str | None
    user: str | None
    started_at: float | None
    done: int | None
    total: int | None
    ready: bool
    generation: int | None
    updated_at: float | None
    age_s: float | None
    last_success_at: float | None
    last_error: str | None
    runs: int
    busy_refusals: int

    def to_json(self) -> dict:
        return asdict(self)


def _one_line(text: str) -> str:
    """First non-empty line, URL credentials and secrets redacted, capped at ``MAX_ERROR_CHARS``."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    line = _URL_CREDENTIALS.sub(r"\1***@", line)
    line, _ = redact_secrets(line)
    return line[:MAX_ERROR_CHARS]


def error_line(exc: BaseException) -> str:
    """``"TypeName: first line of the message"``, safe to log and show."""
    text = _one_line(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _git(repo: Path, args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          timeout=timeout_s, check=False, env=env, stdin=subprocess.DEVNULL)


def current_commit(repo: Path | str, *, timeout_s: float = DEFAULT_REV_PARSE_TIMEOUT_S) -> str | None:
    """The checked-out commit of ``repo`` (``git rev-parse HEAD``); ``None`` outside git or on error."""
    try:
        done = _git(Path(repo), ["rev-parse", "--verify", "-q", "HEAD"], timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and _SHA.fullmatch(sha) else None


def pull_ff_only(repo: Path | str, *, timeout_s: float = DEFAULT_GIT_TIMEOUT_S) -> GitPullResult:
    """``git pull --ff-only`` in ``repo``; never raises (failures are in the result).

    No terminal prompt is allowed (``GIT_TERMINAL_PROMPT=0``), so a remote that
    wants credentials fails instead of hanging; ``timeout_s`` bounds the rest.
    """
    repo = Path(repo)
    before, started, code = current_commit(repo), time.perf_counter(), None
    try:
        done = _git(repo, ["pull", "--ff-only", "--quiet"], timeout_s)
        code = done.returncode
        message = _one_line(done.stderr) or f"git pull exited with {code}"
    except subprocess.TimeoutExpired:
        message = f"git pull timed out after {timeout_s:g} s"
    except OSError as exc:
        message = f"git could not run: {exc.strerror or exc}"
    after = current_commit(repo)
    if code == 0:
        message = "fast-forwarded" if before != after else "already up to date"
    log.info("git pull code=%s changed=%s", code, before != after)
    return GitPullResult(code == 0, code, message, round(time.perf_counter() - started, 3), before, after)


class Reindexer:
    """Runs ``engine.update`` one at a time under the shared lock and records each run.

    Args:
        engine: an opened :class:`rag.engine.Engine` (its ``index.path`` locates the lock).
        history: finished runs kept (default :data:`DEFAULT_HISTORY`).
        git_timeout_s: deadline of the optional ``git pull``.
        clock: epoch-seconds clock (records and state).
        embed: compute missing vectors after each update (when the engine has a provider).
        timeout_s: deadline of one update in seconds (default :data:`DEFAULT_RUN_TIMEOUT_S`;
            ``None``: none); past it the update stops and the run fails with "timed out".
        on_record: called with each finished :class:`RunRecord` (after the locks are released),
            e.g. to keep the run history in a durable store; its exceptions are logged, never raised.
        sources: extra sources refreshed after each successful files update and before the embedding
            pass (e.g. :class:`rag.sources.github.GitHubFetcher`): each has ``name`` and
            ``refresh(engine, should_stop=…)`` returning a report with ``to_json()``. A failing source is
            recorded in ``RunRecord.sources`` and never fails the run.
        update: runs one update under the lock, ``update(full=, progress=, should_stop=) -> IndexStats``
            with :meth:`Engine.update`'s contract (default ``engine.update``, in the calling thread);
            the bot passes one that runs it in a child process, off its GIL.

    Thread-safe; :meth:`run` blocks, :meth:`run_async` keeps the event loop free.
    """

    def __init__(self, engine: Engine, *, history: int = DEFAULT_HISTORY,
                 git_timeout_s: float = DEFAULT_GIT_TIMEOUT_S, clock: Callable[[], float] = time.time,
                 embed: bool = True, timeout_s: float | None = DEFAULT_RUN_TIMEOUT_S,
                 on_record: Callable[[RunRecord], None] | None = None, sources: tuple = (),
                 update: Callable[..., IndexStats] | None = None) -> None:
        self.engine = engine
        self.sources = tuple(sources)
        self._update = update if update is not None else engine.update
        self.timeout_s = timeout_s
        self.on_record = on_record
        self.embed = embed
        self._stop = threading.Event()
        self.git_timeout_s = git_timeout_s
        self.clock = clock
        index_path = Path(engine.index.path)
        self.lock_path = index_path.with_name(index_path.name + ".lock")
        self.info_path = index_path.with_name(index_path.name + ".lock.json")
        self._file_lock = filelock.FileLock(self.lock_path, thread_local=False)
        self._run_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._history: deque[RunRecord] = deque(maxlen=history)
        self._current: RunRecord | None = None
        self._progress: tuple[int, int] | None = None
        self._last_success_at: float | None = None
        self._runs = self._busy_refusals = 0

    @classmethod
    def open(cls, repo: Path | str | None = None, *, index_path: Path | str | None = None, **kwargs) -> Reindexer:
        """``Reindexer(Engine.open(repo, index_path=index_path), **kwargs)``."""
        return cls(Engine.open(repo, index_path=index_path), **kwargs)

    # -- views ---------------------------------------------------------------------------------

    @property
    def history(self) -> list[RunRecord]:
        """Finished runs, oldest first (at most ``history`` of them)."""
        with self._state_lock:
            return list(self._history)

    @property
    def running(self) -> bool:
        """An update started by this reindexer is in progress."""
        return self._current is not None

    @property
    def ready(self) -> bool:
        """The index has a generation ≥ 1 (something was committed, maybe by another process)."""
        generation, _ = self._index_info()
        return bool(generation)

    @property
    def state(self) -> ReindexState:
        """A consistent snapshot for ``/api/status`` (reads two values from the index)."""
        generation, updated_at = self._index_info()
        with self._state_lock:
            current, progress = self._current, self._progress
            last = self._history[-1] if self._history else None
            last_error = last.error if last is not None and not last.ok else None
            now = self.clock()
            return ReindexState(
                running=current is not None,
                trigger=current.trigger if current else None,
                user=current.user if current else None,
                started_at=current.started_at if current else None,
                done=progress[0] if current and progress else None,
                total=progress[1] if current and progress else None,
                ready=bool(generation), generation=generation, updated_at=updated_at,
                age_s=None if updated_at is None else round(max(0.0, now - updated_at), 3),
                last_success_at=self._last_success_at, last_error=last_error,
                runs=self._runs, busy_refusals=self._busy_refusals,
            )

    def request_stop(self) -> None:
        """Ask a running update to stop at its next file (nothing written, the previous index stays)
        and a running embedding pass after its current batch (stored vectors stay): shutdown."""
        self._stop.set()

    def require_ready(self) -> None:
        """Raise :class:`IndexBuildingError` (a ``UserError``) unless the index has a generation,
        and :class:`IndexEmptyError` when it has one but holds no file (an empty repository,
        or one where everything was skipped: the message gives the reasons).

        The message says how far the first build is, e.g. ``The index is being
        built: 120/426 files so far. Try again in a moment.``
        """
        state = self.state
        if state.ready:
            if self._indexed_files() == 0:
                last = self.history[-1] if self.history else None
                raise IndexEmptyError(empty_index_message(self.engine.repo_root.name, last))
            return
        if state.running:
            where = f": {state.done}/{state.total} files so far" if state.total else " (listing files)"
            raise IndexBuildingError(f"The index is being built{where}. Try again in a moment.")
        if state.last_error:
            raise IndexBuildingError("The index is not built yet: the last update failed. An admin can start a reindex.")
        raise IndexBuildingError("The index is not built yet; it will be built shortly. Try again in a moment.")

    def _indexed_files(self) -> int | None:
        try:
            return self.engine.index.counts()[0]
        except Exception as exc:  # noqa: BLE001 - an unreadable index is reported by the answer path itself
            log.warning("index unreadable (%s)", type(exc).__name__)
            return None

    def _index_info(self) -> tuple[int | None, float | None]:
        try:
            generation = self.engine.index.generation()
            raw = self.engine.index.meta("updated_at")
            return generation, float(raw) if raw else None
        except Exception as exc:  # noqa: BLE001 - a status view must answer even with a broken index
            log.warning("index unreadable for status (%s)", type(exc).__name__)
            return None, None

    # -- running ---------------------------------------------------------------------------------

    def run(self, *, full: bool = False, trigger: str, user: str | None = None, git_pull: bool = False,
            progress: Callable[[int, int], None] | None = None,
            embed_progress: Callable[[int, int], None] | None = None) -> RunRecord:
        """Run one update now, in this thread; return its finished record.

        Args:
            full: rebuild every file.
            trigger: one of :data:`TRIGGERS`.
            user: who asked (admin runs).
            git_pull: ``git pull --ff-only`` first; a failed pull is recorded and the update still runs.
            progress: also called as ``progress(done, total)`` while files are processed.
            embed_progress: called as ``embed_progress(done, planned)`` while the chunks without a vector
                are embedded, after the update (:meth:`rag.engine.Engine.embed_pending`).

        Returns:
            The :class:`RunRecord` (``ok=False`` with ``error`` when the update failed).

        Raises:
            ReindexBusyError: an update of this index is already running.
            ValueError: unknown ``trigger``.
        """
        record = self._begin(trigger=trigger, user=user, full=full)
        try:
            self._execute(record, full=full, git_pull=git_pull, progress=progress, embed_progress=embed_progress)
        finally:
            self._finish(record)
        return record

    async def run_async(self, *, full: bool = False, trigger: str, user: str | None = None, git_pull: bool = False,
                        on_start: Callable[[RunRecord], Awaitable[None]] | None = None) -> RunRecord:
        """:meth:`run` with the work in a worker thread; the lock is taken before returning to the loop.

        ``on_start(record)`` is awaited once the lock is held (e.g. to announce
        the run); its errors are logged and ignored. If the caller is cancelled,
        the update finishes in its thread and then releases the lock.

        Raises:
            ReindexBusyError: an update of this index is already running (raised at once).
        """
        import asyncio  # here, not at the top: the CLI's synchronous run never needs the event loop machinery

        record = self._begin(trigger=trigger, user=user, full=full)
        work: asyncio.Future | None = None
        finish_now = True
        try:
            if on_start is not None:
                try:
                    await on_start(record)
                except Exception:  # noqa: BLE001 - announcing must not stop the update
                    log.warning("reindex on_start callback failed", exc_info=True)
            work = asyncio.ensure_future(asyncio.to_thread(self._execute, record, full=full, git_pull=git_pull))
            await asyncio.shield(work)
        except asyncio.CancelledError:
            if work is not None and not work.done():  # the thread goes on; unlock when it is done
                work.add_done_callback(lambda _: self._finish(record))
                finish_now = False
            raise
        finally:
            if finish_now:
                self._finish(record)
        return record

    def _begin(self, *, trigger: str, user: str | None, full: bool) -> RunRecord:
        if trigger not in TRIGGERS:
            raise ValueError(f"unknown reindex trigger {trigger!r}; expected one of {', '.join(TRIGGERS)}")
        if not self._run_lock.acquire(blocking=False):
            raise self._refuse(self._current)
        try:
            self._file_lock.acquire(blocking=False)
        except filelock.Timeout:
            self._run_lock.release()
            raise self._refuse(None) from None
        except OSError as exc:
            self._run_lock.release()
            raise IndexUnavailableError(f"cannot create the index lock {self.lock_path}: {exc.strerror or exc}") from exc
        record = RunRecord(id=uuid.uuid4().hex[:12], trigger=trigger, started_at=self.clock(), user=user, full=full)
        with self._state_lock:
            self._current, self._progress = record, None
        try:
            self.info_path.write_text(json.dumps({"pid": os.getpid(), "trigger": trigger, "user": user,
                                                  "started_at": record.started_at}), encoding="utf-8")
        except OSError:
            log.debug("could not write %s", self.info_path)
        log.info("reindex start id=%s trigger=%s full=%s", record.id, trigger, full)
        return record

    def _refuse(self, current: RunRecord | None) -> ReindexBusyError:
        with self._state_lock:
            self._busy_refusals += 1
        if current is not None:
            return ReindexBusyError(trigger=current.trigger, user=current.user, started_at=current.started_at,
                                    pid=os.getpid())
        try:
            info = json.loads(self.info_path.read_text(encoding="utf-8"))
            return ReindexBusyError(trigger=info.get("trigger"), user=info.get("user"),
                                    started_at=info.get("started_at"), pid=info.get("pid"))
        except (OSError, ValueError, AttributeError):
            return ReindexBusyError()

    def _on_progress(self, done: int, total: int) -> None:
        with self._state_lock:
            self._progress = (done, total)

    def _execute(self, record: RunRecord, *, full: bool, git_pull: bool,
                 progress: Callable[[int, int], None] | None = None,
                 embed_progress: Callable[[int, int], None] | None = None) -> None:
        """The update itself (any thread); fills ``record``, never raises ``Exception``."""
        started = time.perf_counter()
        try:
            if git_pull:
                record.git = pull_ff_only(self.engine.repo_root, timeout_s=self.git_timeout_s).to_json()
            def on_progress(done: int, total: int) -> None:
                self._on_progress(done, total)
                if progress is not None:
                    progress(done, total)

            deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s

            def should_stop() -> bool:
                return self._stop.is_set() or (deadline is not None and time.monotonic() > deadline)

            try:
                stats = self._update(full=full, progress=on_progress, should_stop=should_stop)
            except UpdateCancelledError as exc:
                if self._stop.is_set():
                    raise UpdateCancelledError(f"stopped for shutdown: {exc}") from None
                raise UpdateCancelledError(f"timed out after {self.timeout_s:g} s: {exc}") from None
            record.stats, record.generation = stats, stats.generation
            record.ok = True
            if self.sources:  # issues, pull requests …: never fail the code index
                record.sources = {source.name: self._refresh_source(source) for source in self.sources}
            # The lexical index is committed and serving; vectors follow (a failure leaves BM25 working).
            report = (self.engine.embed_pending(should_stop=self._stop.is_set, progress=embed_progress)
                      if self.embed else None)
            if report is not None:
                record.embeddings = {"model": report.model, "planned": report.planned,
                                     "embedded": report.embedded, "seconds": round(report.seconds, 2),
                                     "error": report.error, "rejected": report.rejected}
        except Exception as exc:  # noqa: BLE001 - recorded; the previous generation stays in place
            record.ok = False
            record.error = error_line(exc)
            log.warning("reindex failed id=%s trigger=%s error=%s", record.id, record.trigger, type(exc).__name__)
            record.generation = self._index_info()[0]
        finally:
            record.commit = current_commit(self.engine.repo_root)
            record.duration_s = round(time.perf_counter() - started, 3)

    def _refresh_source(self, source) -> dict:
        """One extra source's refresh report (JSON); an exception is reported as ``{"ok": false, "error"}``."""
        try:
            return source.refresh(self.engine, should_stop=self._stop.is_set).to_json()
        except Exception as exc:  # noqa: BLE001 - the files update is committed; the source is reported
            log.warning("source %s failed: %s", source.name, type(exc).__name__)
            return {"ok": False, "error": error_line(exc)}

    def _finish(self, record: RunRecord) -> None:
        if record.ok is None:  # interrupted before the update could record an outcome
            record.ok, record.error = False, record.error or "interrupted"
        with self._state_lock:
            self._history.append(record)
            self._runs += 1
            if record.ok:
                self._last_success_at = record.started_at + (record.duration_s or 0.0)
            self._current, self._progress = None, None
        with contextlib.suppress(OSError):
            self.info_path.unlink(missing_ok=True)
        self._file_lock.release()
        self._run_lock.release()
        log.info("reindex done id=%s trigger=%s ok=%s seconds=%s added=%d changed=%d removed=%d",
                 record.id, record.trigger, record.ok, record.duration_s, record.stats.added, record.stats.changed,
                 record.stats.removed)
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception as exc:  # noqa: BLE001 - the run is recorded in memory either way
                log.warning("reindex run id=%s not handed on: %s", record.id, type(exc).__name__)
