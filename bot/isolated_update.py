"""Index updates in a child process, so that the bot's event loop keeps its GIL while a reindex runs.

    reindexer = Reindexer(engine, update=ProcessUpdate(engine))     # bot.compose does this for `serve`
    await reindexer.run_async(trigger="admin", full=True)            # the update runs in a child process

**Why.** :meth:`rag.engine.Engine.update` is Python from end to end: walking, hashing, decoding,
redacting, chunking, tree-sitter queries and building the FTS rows all hold the GIL. In a worker
thread of the bot (the reindexer's ``run_async``) it took most of the GIL for the whole run, and
measured with ``slackzilla bench --load`` (a full reindex of 2,000 files during 60 questions on 2
cores) the slash-command acks waited up to 8-10 s for the event loop (issue 13). In a child
process the update competes with the bot only for a core, which the operating system shares
fairly, not for the GIL.

**How.** :class:`ProcessUpdate` is the reindexer's ``update`` hook
(:class:`rag.ingest.reindexer.Reindexer`): its first call starts a one-worker
:class:`concurrent.futures.ProcessPoolExecutor` (``spawn``: the bot has threads, so no ``fork``),
which opens the same repository and index file with the same walk and chunk policies and runs
``Engine.update`` there. The child and its engine are kept for the next calls (until
:meth:`ProcessUpdate.close`, or until the child dies or a call is abandoned, then the next call
starts a new one): a scheduled update of a few changed files then costs what it costs in one
process (~35 ms for one file of eslint: copy detection moves its counts by difference,
:class:`rag.ingest.copies.SharedLines`, and grammars stay compiled) instead of a new process's
imports and first update (~0.4 s). The child opens the index again when the file at its path is
another one (deleted or moved aside and made anew). The reindexer keeps everything else: its lock
(taken in the bot before the call: the child never takes it), the run record, progress (relayed from the child through a
queue), the stop request and the deadline (the bot sets an event the child's ``should_stop``
reads; the child stops at its next file, writing nothing), embeddings after the update. The
index file is SQLite in WAL mode with one transaction per update (:mod:`rag.store.index`), so the
bot's readers see the old generation until the child commits, then the new one. The child hands
back the :class:`~rag.ingest.stats.IndexStats` and the secret-file values it found (the bot's
redactor of live-tool output and questions adopts them). Errors in the child are raised in the bot
as they were raised there (``UpdateCancelledError``, ``IndexUnavailableError`` …); a child that
dies is an :class:`~rag.errors.IndexUnavailableError` saying so; a child whose bot is killed ends
within a second, its transaction uncommitted (:func:`rag.ingest.pool.exit_with_owner`). Starting the child costs about a
second of imports, once. The child
runs at a lower priority (:data:`DEFAULT_NICENESS`): a reindex is background work.
"""
from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from rag.engine import Engine
from rag.errors import IndexUnavailableError
from rag.ingest.chunk import ChunkPolicy
from rag.ingest.pool import exit_with_owner
from rag.ingest.stats import IndexStats
from rag.ingest.walk import WalkPolicy

__all__ = ["ProcessUpdate", "DEFAULT_NICENESS", "DEFAULT_POLL_S"]

log = logging.getLogger(__name__)

DEFAULT_NICENESS = 10
"""The child's ``nice`` increment: on a busy machine the operating system gives the bot's own
threads (acks, answers) about ten times the reindex's share of a core (Linux CFS weights 1024
against 110); on an idle one the reindex still has a whole core."""
DEFAULT_POLL_S = 0.1
"""How often the bot relays progress and checks for a stop request while the child works (seconds)."""

PING_TIMEOUT_S = 30.0
"""Longest wait for the kept child to answer before an update (it answers in about a millisecond
when idle; past this it is taken for hung, ended, and a new one is started)."""

_CHANNELS: dict[str, Any] = {}
"""In the child process only: the progress queue and stop event its initializer received
(``multiprocessing`` queues and events reach a pool worker through its initializer, not as task
arguments)."""


def _init_child(progress: Any, stop: Any, niceness: int, bot_pid: int) -> None:
    # A bot killed mid-reindex (kill -9, the OOM killer) must not leave this process updating the
    # index without its lock, then waiting forever for work: it ends within a second, unwritten.
    exit_with_owner(bot_pid)
    _CHANNELS["progress"], _CHANNELS["stop"] = progress, stop
    if niceness:
        try:
            os.nice(niceness)
        except OSError:  # not permitted here: run at the bot's priority
            log.debug("could not lower the update process's priority")


_ENGINES: dict[tuple, tuple[tuple[int, int] | None, Engine]] = {}
"""In the child process only: the engine of each repository, index and policies it updated, with the
identity (device, inode) of the index file it opened, kept for the next update."""


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _child_engine(repo: Path, index_path: Path, walk_policy: WalkPolicy, chunk_policy: ChunkPolicy) -> Engine:
    """The child's engine for these arguments: the one kept from the last update while the index file at
    ``index_path`` is still the one it opened, else a newly opened one."""
    key = (str(repo), str(index_path), walk_policy, chunk_policy)
    kept = _ENGINES.get(key)
    if kept is not None:
        identity, engine = kept
        if identity is not None and identity == _file_identity(index_path):
            return engine
        engine.close()
    engine = Engine.open(repo, index_path=index_path, walk_policy=walk_policy, chunk_policy=chunk_policy)
    _ENGINES[key] = (_file_identity(index_path), engine)
    return engine


def _update_in_child(repo: Path, index_path: Path, walk_policy: WalkPolicy, chunk_policy: ChunkPolicy,
                     full: bool) -> tuple[IndexStats, Any, int]:
    """In the child: run the update with the kept engine, return ``(stats, secret redactor, child pid)``."""
    progress, stop = _CHANNELS["progress"], _CHANNELS["stop"]
    engine = _child_engine(repo, index_path, walk_policy, chunk_policy)
    stats = engine.update(full=full, progress=lambda done, total: progress.put((done, total)),
                          should_stop=stop.is_set)
    return stats, engine.secret_redactor(), os.getpid()


class ProcessUpdate:
    """``Engine.update`` of ``engine``'s repository and index, run in a child process (module docstring).

    Args:
        engine: the bot's opened engine (its repository, index path and walk/chunk policies are
            used; it adopts the secret-file values the update found).
        poll_s: how often progress is relayed and ``should_stop`` checked.
        niceness: lower the child's scheduling priority by this much (``os.nice``; 0: as the bot).

    Calling it blocks (the reindexer calls it in a worker thread, one call at a time) and has
    ``Engine.update``'s signature and errors. The child is kept between calls; :meth:`close`
    ends it. ``child_pid`` is the pid of the child that ran the last update (``None`` before).
    """

    def __init__(self, engine: Engine, *, poll_s: float = DEFAULT_POLL_S, niceness: int = DEFAULT_NICENESS) -> None:
        self.engine = engine
        self.poll_s = poll_s
        self.niceness = niceness
        self.child_pid: int | None = None
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._updates: Any = None
        self._stop: Any = None

    def _start(self) -> concurrent.futures.ProcessPoolExecutor:
        """The kept child's pool, started on first use (or after the last one was ended)."""
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            updates, stop = context.Queue(), context.Event()
            try:
                pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context,
                                                              initializer=_init_child,
                                                              initargs=(updates, stop, self.niceness, os.getpid()))
            except OSError as exc:
                updates.close()
                raise IndexUnavailableError(f"could not start the index update process: {exc}") from exc
            self._pool, self._updates, self._stop = pool, updates, stop
        return self._pool

    def _kept_alive(self) -> concurrent.futures.ProcessPoolExecutor | None:
        """The kept child's pool when its child still answers (a no-op task: ~1 ms), else ``None``; a child
        that died while idle (killed, out of memory) is ended here, so the update runs in a new one
        rather than failing because of a death that happened between two updates."""
        if self._pool is None:
            return None
        try:
            self.child_pid = self._pool.submit(os.getpid).result(timeout=PING_TIMEOUT_S)
            return self._pool
        except (BrokenProcessPool, concurrent.futures.TimeoutError) as exc:
            log.warning("index update: the kept update process is gone (%s); starting a new one",
                        type(exc).__name__)
            hung = isinstance(exc, concurrent.futures.TimeoutError)
            if hung and self.child_pid is not None:
                try:  # shutting its pool down would wait for it forever
                    os.kill(self.child_pid, signal.SIGKILL)
                    hung = False
                except OSError:
                    pass
            self._end(wait=not hung)
            return None

    def _end(self, *, wait: bool = True) -> None:
        """Stop and end the kept child (a child still updating stops at its next file, writing nothing);
        ``wait=False`` leaves a hung one behind instead of waiting for it."""
        pool, updates, stop = self._pool, self._updates, self._stop
        self._pool = self._updates = self._stop = None
        if pool is None:
            return
        stop.set()
        pool.shutdown(wait=wait, cancel_futures=True)
        updates.close()

    def close(self) -> None:
        """End the kept child process (the bot's shutdown); a later call starts a new one."""
        with self._lock:
            self._end()

    def __call__(self, *, full: bool = False, progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> IndexStats:
        """Run one update in the kept child process; see :meth:`rag.engine.Engine.update`.

        Raises:
            IndexUnavailableError: the child could not be started or died; or the child's own
                ``IndexUnavailableError``.
            UpdateCancelledError: ``should_stop`` returned true; the previous generation stays.
        """
        with self._lock:
            engine = self.engine
            args = (engine.repo_root, Path(engine.index.path), engine.walk_policy, engine.chunk_policy, full)
            pool = self._kept_alive() or self._start()
            self._stop.clear()  # set when the last run was stopped; read by the child at each file
            self._relay(self._updates, None)  # a late report of the last run is not this one's progress
            try:
                future = pool.submit(_update_in_child, *args)
            except BrokenProcessPool as exc:
                self._end()
                raise IndexUnavailableError("the index update process died before it started; "
                                            "the previous index is unchanged") from exc
            updates, stop = self._updates, self._stop
            finished = False
            try:
                while not future.done():
                    if should_stop is not None and not stop.is_set() and should_stop():
                        stop.set()
                    concurrent.futures.wait([future], timeout=self.poll_s)
                    self._relay(updates, progress)
                self._relay(updates, progress)
                try:
                    stats, redactor, self.child_pid = future.result()
                except BrokenProcessPool as exc:
                    raise IndexUnavailableError("the index update process died before it finished; "
                                                "the previous index is unchanged") from exc
                finally:
                    finished = not isinstance(future.exception(), BrokenProcessPool)
            finally:
                if not finished:  # the child died, or this call was abandoned while it ran: not kept
                    self._end()
        engine.use_secret_redactor(redactor)
        return stats

    @staticmethod
    def _relay(updates: Any, progress: Callable[[int, int], None] | None) -> None:
        latest = None
        while True:
            try:
                latest = updates.get_nowait()
            except queue.Empty:
                break
            except (OSError, ValueError, EOFError):  # the queue's pipe closed with the child
                break
        if latest is not None and progress is not None:
            progress(*latest)
