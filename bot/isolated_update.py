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
(:class:`rag.ingest.reindexer.Reindexer`): each call starts a one-worker
:class:`concurrent.futures.ProcessPoolExecutor` (``spawn``: the bot has threads, so no ``fork``),
which opens the same repository and index file with the same walk and chunk policies and runs
``Engine.update`` there. The reindexer keeps everything else: its lock (taken in the bot before the
call: the child never takes it), the run record, progress (relayed from the child through a
queue), the stop request and the deadline (the bot sets an event the child's ``should_stop``
reads; the child stops at its next file, writing nothing), embeddings after the update. The
index file is SQLite in WAL mode with one transaction per update (:mod:`rag.store.index`), so the
bot's readers see the old generation until the child commits, then the new one. The child hands
back the :class:`~rag.ingest.stats.IndexStats` and the secret-file values it found (the bot's
redactor of live-tool output and questions adopts them). Errors in the child are raised in the bot
as they were raised there (``UpdateCancelledError``, ``IndexUnavailableError`` …); a child that
dies is an :class:`~rag.errors.IndexUnavailableError` saying so; a child whose bot is killed ends
within a second, its transaction uncommitted (:func:`rag.ingest.pool.exit_with_owner`). Starting the child costs about a
second of imports per run, small beside any reindex and the 300 s default interval. The child
runs at a lower priority (:data:`DEFAULT_NICENESS`): a reindex is background work.
"""
from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import queue
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


def _update_in_child(repo: Path, index_path: Path, walk_policy: WalkPolicy, chunk_policy: ChunkPolicy,
                     full: bool) -> tuple[IndexStats, Any]:
    """In the child: open the engine, run the update, return ``(stats, secret redactor)``."""
    progress, stop = _CHANNELS["progress"], _CHANNELS["stop"]
    engine = Engine.open(repo, index_path=index_path, walk_policy=walk_policy, chunk_policy=chunk_policy)
    try:
        stats = engine.update(full=full, progress=lambda done, total: progress.put((done, total)),
                              should_stop=stop.is_set)
        return stats, engine.secret_redactor()
    finally:
        engine.close()


class ProcessUpdate:
    """``Engine.update`` of ``engine``'s repository and index, run in a child process (module docstring).

    Args:
        engine: the bot's opened engine (its repository, index path and walk/chunk policies are
            used; it adopts the secret-file values the update found).
        poll_s: how often progress is relayed and ``should_stop`` checked.
        niceness: lower the child's scheduling priority by this much (``os.nice``; 0: as the bot).

    Calling it blocks (the reindexer calls it in a worker thread) and has ``Engine.update``'s
    signature and errors.
    """

    def __init__(self, engine: Engine, *, poll_s: float = DEFAULT_POLL_S, niceness: int = DEFAULT_NICENESS) -> None:
        self.engine = engine
        self.poll_s = poll_s
        self.niceness = niceness

    def __call__(self, *, full: bool = False, progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> IndexStats:
        """Run one update in a new child process; see :meth:`rag.engine.Engine.update`.

        Raises:
            IndexUnavailableError: the child could not be started or died; or the child's own
                ``IndexUnavailableError``.
            UpdateCancelledError: ``should_stop`` returned true; the previous generation stays.
        """
        context = multiprocessing.get_context("spawn")
        updates, stop = context.Queue(), context.Event()
        engine = self.engine
        try:
            pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context,
                                                          initializer=_init_child,
                                                          initargs=(updates, stop, self.niceness, os.getpid()))
        except OSError as exc:
            raise IndexUnavailableError(f"could not start the index update process: {exc}") from exc
        try:
            future = pool.submit(_update_in_child, engine.repo_root, Path(engine.index.path), engine.walk_policy,
                                 engine.chunk_policy, full)
            while not future.done():
                if should_stop is not None and not stop.is_set() and should_stop():
                    stop.set()
                concurrent.futures.wait([future], timeout=self.poll_s)
                self._relay(updates, progress)
            self._relay(updates, progress)
            try:
                stats, redactor = future.result()
            except BrokenProcessPool as exc:
                raise IndexUnavailableError("the index update process died before it finished; "
                                            "the previous index is unchanged") from exc
        finally:
            stop.set()  # a child still running (the caller was interrupted) stops at its next file
            pool.shutdown(wait=True, cancel_futures=True)
            updates.close()
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
