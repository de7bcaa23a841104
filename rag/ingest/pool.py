"""Preparing many files at once: a process pool sized to the machine, one writer.

    with contextlib.closing(prepare_files(report.files, known=known, literals=literals, parser=parser,
                                          policy=PoolPolicy(), should_stop=should_stop)) as results:
        for wf, result in zip(report.files, results): ...     # walk order, as they come back

The per-file step (:func:`rag.ingest.prepare.prepare_file`: read, hash, decode, redact, chunk,
parse) and the tokenising of its chunks (:func:`rag.store.index.chunk_terms`) are pure-Python
CPU work that holds the GIL, so threads would not overlap them; worker processes do. Each
worker gets batches of files, runs ``prepare_file`` unchanged on each, tokenises what it
prepared and sends the results back (everything pickles: :class:`~rag.types.WalkedFile`,
:class:`~rag.store.index.FileRow`, the :class:`~rag.ingest.prepare.PrepareResult` classes).

**One writer.** Results come back to the calling process as they are ready, in walk order
whatever order the workers finish in, and the engine writes each one at once into one SQLite
transaction (:meth:`rag.store.index.Index.writer`), so writing overlaps preparing: the index is
byte-for-byte what the in-process path writes (chunk ids included), and crash-safety is
unchanged — the transaction commits only after every file has come back.

**When.** ``policy.workers`` (``INDEX_WORKERS``; ``None`` = the CPUs this process may run on,
at most :data:`MAX_AUTO_WORKERS`) processes, but only when at least ``policy.min_files`` files
need reading (new or changed size/mtime, every file for a full rebuild): an update of a few files
stays in this process and pays no pool start-up. ``workers=1`` is always in-process.

**Start method.** ``fork`` when this process runs one thread (the CLI): a forked worker has every
module imported already and starts in milliseconds. Otherwise (the bot: event loop, scheduler and
worker threads) ``forkserver``, since forking a process whose other threads may hold a lock can
deadlock the child (Python 3.12 warns about it); the fork server is started once per process with
this module preloaded, so later pools fork from it cheaply. Each worker builds one
:class:`~rag.ingest.prepare.StructureParser`; the grammars and queries the files need are compiled
once in this process before the pool starts (:func:`rag.parse.parser.warm_grammars`), so forked
workers inherit them and this process has them for its own later small updates.

**Failures.** An exception raised by ``prepare_file`` in a worker is re-raised here, as in-process.
A worker that dies (killed, out of memory, a native crash) breaks the pool: an
:class:`~rag.errors.IndexWorkerError` names the files it was given. ``should_stop`` is polled at
least every :data:`POLL_S` seconds even while no result arrives, so the reindexer's deadline
(``REINDEX_TIMEOUT_S``) and shutdown still stop an update whose worker is stuck on a file:
:class:`~rag.errors.UpdateCancelledError`, and the workers are terminated, not waited for.
When the process running the pool is itself killed, each worker exits within :data:`PARENT_POLL_S`.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from rag.errors import IndexWorkerError, UpdateCancelledError
from rag.ingest.copies import file_fingerprint
from rag.ingest.chunk import DEFAULT_CHUNK_POLICY, ChunkPolicy
from rag.ingest.prepare import Prepared, PrepareResult, StructureParser, prepare_file
from rag.parse.parser import warm_grammars
from rag.secrets import LiteralRedactor
from rag.store.index import FileRow, chunk_terms, structure_text
from rag.types import WalkedFile

__all__ = ["PoolPolicy", "DEFAULT_POOL_POLICY", "MAX_AUTO_WORKERS", "MIN_POOL_FILES", "POLL_S",
           "exit_with_owner", "usable_cpus", "prepare_files"]

log = logging.getLogger(__name__)

MAX_AUTO_WORKERS = 8
"""Most workers chosen automatically (``INDEX_WORKERS`` unset): past a few cores the single
writer and the walk dominate, and each worker holds its own parser and memo (~40 MB)."""
MIN_POOL_FILES = 32
"""Fewer files to read than this → in this process. A pool costs ~15-30 ms to fork and join two
workers; preparing a file costs ~2-4 ms of CPU here (eslint 9.39.5: 425 files, ~1.2 s), so below
a few dozen files the pool cannot win. A one-file update never starts one."""
BATCHES_PER_WORKER = 6
"""Batches per worker: enough that a worker given large files does not finish long after the
others, few enough that the per-task overhead (a pickle round trip) stays small."""
POLL_S = 0.1
"""Longest wait for a worker's result before ``should_stop`` is asked again (seconds)."""
JOIN_S = 5.0
"""Longest wait for terminated workers to exit (seconds)."""
PARENT_POLL_S = 0.5
"""How often a worker checks that the process that started it is still alive (seconds)."""

ProgressFn = Callable[[int, int], None]


def usable_cpus() -> int:
    """CPUs this process may run on: ``os.process_cpu_count()`` (Python ≥ 3.13), else the size of
    ``os.sched_getaffinity(0)`` (Linux; honours ``taskset`` and cgroup cpusets), else
    ``os.cpu_count()``; at least 1."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return max(1, count() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class PoolPolicy:
    """How an update prepares its files (see the module docstring).

    Example::

        Engine.open(repo, pool_policy=PoolPolicy(workers=1))     # always in-process

    Attributes:
        workers: worker processes (``INDEX_WORKERS``); ``None``: :func:`usable_cpus`, at most
            :data:`MAX_AUTO_WORKERS`; 1: in-process.
        min_files: fewer files to read than this → in-process (default :data:`MIN_POOL_FILES`).
        start_method: a :mod:`multiprocessing` start method, or ``None``: ``fork`` when this
            process runs one thread, else ``forkserver``.
    """

    workers: int | None = None
    min_files: int = MIN_POOL_FILES
    start_method: str | None = None

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be at least 1 (or None for one per CPU)")
        if self.start_method is not None and self.start_method not in multiprocessing.get_all_start_methods():
            raise ValueError(f"unknown start method {self.start_method!r}")

    def workers_for(self, to_read: int) -> int:
        """Workers for an update that reads ``to_read`` files: 1 (in-process) below ``min_files``."""
        if to_read < max(2, self.min_files):
            return 1
        workers = self.workers if self.workers is not None else min(usable_cpus(), MAX_AUTO_WORKERS)
        return max(1, min(workers, to_read))

    def chosen_start_method(self) -> str:
        """``start_method``, or the one chosen now: ``fork`` when this process runs one thread, else
        ``forkserver`` (``spawn`` where neither exists)."""
        if self.start_method is not None:
            return self.start_method
        methods = multiprocessing.get_all_start_methods()
        if threading.active_count() == 1 and "fork" in methods:
            return "fork"
        return "forkserver" if "forkserver" in methods else "spawn"

    def context(self) -> multiprocessing.context.BaseContext:
        """The multiprocessing context of the pool (see ``start_method``)."""
        method = self.chosen_start_method()
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload([__name__])  # the server imports the ingest modules once
        return ctx


DEFAULT_POOL_POLICY = PoolPolicy()


def prepare_files(
    files: Sequence[WalkedFile],
    *,
    known: dict[str, FileRow],
    literals: LiteralRedactor,
    parser: StructureParser,
    chunk_policy: ChunkPolicy = DEFAULT_CHUNK_POLICY,
    policy: PoolPolicy = DEFAULT_POOL_POLICY,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[PrepareResult]:
    """:func:`~rag.ingest.prepare.prepare_file` for every file, in this process or in a pool.

    Args:
        files: walked files, in walk order.
        known: what the index holds per path (``{}`` for a full rebuild).
        literals: redactor of the secret-file values.
        parser: the in-process structure parser (workers build their own).
        chunk_policy: chunking knobs.
        policy: pool size and start method.
        progress: called as ``progress(done, total)`` every 25 files or so and at the end.
        should_stop: polled before each file (in-process) or at least every :data:`POLL_S`
            seconds (pool); true → stop.

    Returns:
        An iterator of one result per file, in the order of ``files``, each as soon as it is
        ready. Results of a pool carry their chunks' :class:`~rag.store.index.ChunkTerms`
        (``update.terms``), fingerprint and structure JSON (``update.structure_json``, with
        ``update.structure`` ``None``); in-process ones leave that to the writer. Either way the index
        written is the same. Close it (``contextlib.closing``) if it may be left unfinished:
        closing terminates the pool's workers.

    Raises:
        UpdateCancelledError: ``should_stop`` returned true (workers are terminated).
        IndexWorkerError: a worker process died.
        Exception: whatever ``prepare_file`` raised for a file (a parser failure).
    """
    to_read = sum(1 for wf in files if _may_have_changed(wf, known.get(wf.path)))
    workers = policy.workers_for(to_read)
    if workers <= 1:
        return _prepare_here(files, known=known, literals=literals, parser=parser, chunk_policy=chunk_policy,
                             progress=progress, should_stop=should_stop)
    return _prepare_in_pool(files, known=known, literals=literals, chunk_policy=chunk_policy, workers=workers,
                            ctx=policy.context(), progress=progress, should_stop=should_stop)


def _may_have_changed(wf: WalkedFile, row: FileRow | None) -> bool:
    """Whether ``wf`` may need parsing (new, or another size or mtime): what sizes the pool. A file with its
    size and mtime whose stored stat cannot vouch for it (:func:`rag.ingest.prepare.stat_unchanged`) is read
    and hashed, which is not worth a worker."""
    return row is None or row.size != wf.size or row.mtime_ns != wf.mtime_ns


def _cancelled(done: int, total: int) -> UpdateCancelledError:
    return UpdateCancelledError(f"the update was stopped after {done} of {total} files; "
                                "the previous index is unchanged")


def _prepare_here(files, *, known, literals, parser, chunk_policy, progress,
                  should_stop) -> Iterator[PrepareResult]:
    total = len(files)
    for done, wf in enumerate(files, 1):
        if should_stop is not None and should_stop():
            raise _cancelled(done - 1, total)
        if progress and (done % 25 == 0 or done == total):
            progress(done, total)
        yield prepare_file(wf, indexed=known.get(wf.path), literals=literals, parser=parser,
                           chunk_policy=chunk_policy)


def _batches(files: Sequence[WalkedFile], known: dict[str, FileRow],
             workers: int) -> list[list[tuple[WalkedFile, FileRow | None]]]:
    """Consecutive runs of files of about equal bytes, :data:`BATCHES_PER_WORKER` per worker."""
    target = max(1, sum(wf.size for wf in files) // (workers * BATCHES_PER_WORKER))
    batches: list[list[tuple[WalkedFile, FileRow | None]]] = []
    current: list[tuple[WalkedFile, FileRow | None]] = []
    size = 0
    for wf in files:
        current.append((wf, known.get(wf.path)))
        size += wf.size
        if size >= target:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


def _prepare_in_pool(files, *, known, literals, chunk_policy, workers, ctx, progress,
                     should_stop) -> Iterator[PrepareResult]:
    total = len(files)
    batches = _batches(files, known, workers)
    started = time.perf_counter()
    # Compiled here once: forked workers inherit the queries, and later small updates parse here.
    warm_grammars(wf.path for wf in files if _may_have_changed(wf, known.get(wf.path)))
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_start_worker,
                                   initargs=(literals, chunk_policy, os.getpid()))
    finished = False
    try:
        futures: list[Future | None] = [executor.submit(_prepare_batch, batch) for batch in batches]
        done = reported = 0
        for number, batch in enumerate(batches):
            results = _result(futures[number], batch, done=done, total=total, should_stop=should_stop)
            futures[number] = None  # the writer holds what it needs; free the rest as we go
            for result in results:
                done += 1
                if progress and (done // 25 > reported // 25 or done == total):
                    progress(done, total)
                    reported = done
                yield result
        finished = True
    finally:
        _shutdown(executor, graceful=finished)
    log.debug("prepared %d files in %d batches with %d %s workers in %.3f s", total, len(batches), workers,
              ctx.get_start_method(), time.perf_counter() - started)


def _result(future: Future, batch: list[tuple[WalkedFile, FileRow | None]], *, done: int, total: int,
            should_stop: Callable[[], bool] | None) -> list[PrepareResult]:
    """The batch's results, polling ``should_stop`` while waiting."""
    while True:
        if should_stop is not None and should_stop():
            raise _cancelled(done, total)
        try:
            return future.result(timeout=POLL_S)
        except TimeoutError:
            continue
        except BrokenProcessPool as exc:
            paths = [wf.path for wf, _ in batch]
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            raise IndexWorkerError(
                f"an indexing worker process died (killed, out of memory or crashed) while preparing {shown}; "
                "nothing was written and the previous index is unchanged (INDEX_WORKERS=1 prepares files in "
                "the main process)") from exc


def _shutdown(executor: ProcessPoolExecutor, *, graceful: bool) -> None:
    """Join the workers after a complete run; otherwise cancel what is queued and terminate them."""
    if graceful:
        executor.shutdown(wait=True)
        return
    processes = list((getattr(executor, "_processes", None) or {}).values())
    results = getattr(executor, "_result_queue", None)
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    _terminate(executor, processes)
    _release_manager(results, manager)


def _release_manager(results, manager: threading.Thread | None) -> None:
    """Let the executor's manager thread end after its workers were terminated.

    A worker terminated while it was sending a result leaves half a message in the result pipe;
    the manager thread then waits in ``recv()`` for the rest forever, because this process holds
    a write end of that pipe too. Interpreter exit joins that thread, so the process would never
    exit (seen as a test run that hung after its summary). Closing this process's write end gives
    the reader EOF: the manager marks the pool broken and ends. ``results`` and ``manager`` are
    the executor's private ``_result_queue`` and ``_executor_manager_thread`` (CPython 3.8-3.14),
    ``None`` where absent.
    """
    writer = getattr(results, "_writer", None)
    if writer is not None:
        try:
            writer.close()
        except OSError:
            log.debug("closing the pool's result pipe failed", exc_info=True)
    if manager is not None:
        manager.join(JOIN_S)
        if manager.is_alive():
            log.warning("an indexing pool's manager thread did not end after its workers were terminated")


def _terminate(executor: ProcessPoolExecutor, processes: list) -> None:
    """Version shim: Python 3.14 has ``ProcessPoolExecutor.terminate_workers()``; before it, the
    worker :class:`multiprocessing.Process` objects are only in ``executor._processes``."""
    terminate_workers = getattr(executor, "terminate_workers", None)
    if terminate_workers is not None:
        try:
            terminate_workers()
        except Exception:  # noqa: BLE001 - the pool may be shut down already; terminate below
            log.debug("terminate_workers failed", exc_info=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + JOIN_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1.0)


# --------------------------------------------------------------------------- in the worker

@dataclass(slots=True)
class _WorkerState:
    literals: LiteralRedactor
    chunk_policy: ChunkPolicy
    parser: StructureParser


_WORKER: _WorkerState | None = None
"""This worker process's state, set once by :func:`_start_worker` (the pool's initializer): the
one place a process-pool worker can keep what its tasks share. Unused in the parent process."""


def _start_worker(literals: LiteralRedactor, chunk_policy: ChunkPolicy, owner: int) -> None:
    global _WORKER
    exit_with_owner(owner)
    _WORKER = _WorkerState(literals, chunk_policy, StructureParser())


def exit_with_owner(owner: int) -> None:
    """End this worker process when ``owner``, the process that runs its pool, dies (``kill -9`` of
    ``slackzilla index`` or of the bot's update child, an out-of-memory kill).

    Nothing else would: a worker holds the write end of its own task queue, so it never sees
    end-of-file and would wait for work forever, reparented to init (seen as ``slackzilla index``
    processes left over after a killed build); a ``forkserver`` worker also keeps the fork server
    alive, since each child inherits the server's liveness pipe. A daemon thread checks every
    :data:`PARENT_POLL_S` that this process's parent is unchanged (a forked worker's parent is the
    owner) and that ``owner`` still exists (a fork-server worker's parent is the server), and ends
    the process at once (``os._exit``: nothing to save, the writer of the results is gone; an
    uncommitted SQLite transaction of the worker is rolled back). Also used by the bot's update
    process (:mod:`bot.isolated_update`), a pool worker too.
    """
    parent = os.getppid()

    def owner_alive() -> bool:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            return False
        except OSError:  # PermissionError: a process exists under that id
            return True
        return True

    def watch() -> None:
        while os.getppid() == parent and owner_alive():
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="sz-owner-watch", daemon=True).start()


def _prepare_batch(batch: list[tuple[WalkedFile, FileRow | None]]) -> list[PrepareResult]:
    """Runs in a worker: ``prepare_file`` on each file, then the chunks' terms, the line fingerprint
    (copy detection) and the stored JSON of the structure of what was prepared."""
    state = _WORKER
    assert state is not None, "the pool initializer did not run"
    out: list[PrepareResult] = []
    for wf, indexed in batch:
        result = prepare_file(wf, indexed=indexed, literals=state.literals, parser=state.parser,
                              chunk_policy=state.chunk_policy)
        if isinstance(result, Prepared):
            update = result.update
            update.terms = chunk_terms(update)
            update.fingerprint = file_fingerprint(update)
            update.structure_json, update.structure = structure_text(update.structure), None
        out.append(result)
    return out
