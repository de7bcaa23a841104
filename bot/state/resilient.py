"""The bot's one handle on the state store: failures are visible, never fatal.

    state = ResilientState.open(config, replica_id="web-1", on_failure=metrics.record_state_failure)
    ok, claimed = await state.acall("claim", lambda s: s.claim("event:Ev1"))
    if not ok:                      # the store is down: fall back to in-process memory
        ...

Every call names a *kind* (``claim``, ``turns``, ``votes`` …). When the store raises
:class:`~bot.state.store.StateUnavailableError` (or could not be opened at all), the call
returns ``(False, None)``, the failure is counted (``on_failure(kind)``), and one WARNING
line is logged per kind until the store answers again (then one INFO line says it is
back). The store's messages carry no password (see :func:`bot.state.store.one_line`).

Writes that must not be lost (votes, conversation turns, run records, finished answers)
are made with :meth:`write` / :meth:`awrite`: when the store is down they are queued
(bounded) and replayed, oldest first and each in its own transaction, on the next call
that reaches the store ("catches up"); nothing is written half.

A store that could not be opened at start-up (PostgreSQL down) is opened again at most
every ``reopen_every_s`` seconds by the next call. After a failure, calls fall back at
once (no waiting on a dead server) for ``retry_every_s`` seconds; the next call then
tries the store again. An async caller on Slack's 3-second ack path can bound its wait
with ``timeout_s`` (:meth:`acall`).

Async code uses the ``a…`` methods: the store is synchronous and runs in a worker thread, never
on the event loop; in this object's own small pool (:data:`STATE_THREADS` threads, ``sz-state-…``),
not the event loop's default executor, so an ack-path call never queues behind retrievals and
reindex work that fill the default one under load.
"""
from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from bot.state.store import StateConfig, StateError, StateStore, StateUnavailableError

__all__ = ["DEFAULT_PENDING_WRITES", "ResilientState"]

log = logging.getLogger(__name__)

#: Writes kept while the store is down (the oldest are dropped beyond this, and counted).
DEFAULT_PENDING_WRITES = 1000
#: Seconds between two attempts to open a store that could not be opened.
DEFAULT_REOPEN_EVERY_S = 5.0
#: After a failure, calls fall back without trying the store for this long (seconds).
DEFAULT_RETRY_EVERY_S = 2.0
#: Worker threads of the store's own pool (the ``a…`` methods). Store calls are short; a few
#: threads absorb a burst of acks without taking cores from retrieval.
STATE_THREADS = 4

Operation = Callable[[StateStore], Any]


class ResilientState:
    """A :class:`StateStore` (or the means to open one) with fallbacks, counting and catch-up.

    Args:
        store: an opened store, or ``None`` when it could not be opened (see ``opener``).
        replica_id: who this process is (claims, answers in flight, leases).
        opener: opens the store again (``None``: never reopened).
        on_failure: called with the kind of every failed call (metrics).
        owned: :meth:`close` closes the store (the composition root opened it).
        reopen_every_s, max_pending: see the module docstring.
        clock: monotonic seconds (reopen spacing).
    """

    def __init__(self, store: StateStore | None, *, replica_id: str, opener: Callable[[], StateStore] | None = None,
                 on_failure: Callable[[str], None] | None = None, owned: bool = True,
                 reopen_every_s: float = DEFAULT_REOPEN_EVERY_S, retry_every_s: float = DEFAULT_RETRY_EVERY_S,
                 max_pending: int = DEFAULT_PENDING_WRITES,
                 clock: Callable[[], float] = time.monotonic, last_error: str | None = None) -> None:
        self._store = store
        self.replica_id = replica_id
        self._opener = opener
        self._on_failure = on_failure
        self._owned = owned
        self._reopen_every_s = reopen_every_s
        self._retry_every_s = retry_every_s
        self._skip_until = 0.0
        self._clock = clock
        self._last_open_attempt = clock()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._calls = threading.Condition()  # close() waits for calls running in worker threads
        self._active = 0
        self._pending: collections.deque[tuple[str, Operation]] = collections.deque(maxlen=max_pending)
        self._failing: set[str] = set()
        self.failures: collections.Counter[str] = collections.Counter()
        self.dropped_writes = 0
        self.last_error: str | None = last_error
        self._available = store is not None
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None  # made by the first a… call
        self._executor_lock = threading.Lock()  # never held across a store call: the loop may take it

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def open(cls, config: StateConfig, *, on_failure: Callable[[str], None] | None = None,
             **kwargs) -> "ResilientState":
        """Open the store ``config`` names; when it is unreachable now, start without it (logged,
        counted) and open it later. Raises ``ValueError`` / :class:`StateSchemaError` for a store
        that can never work (bad URL, newer schema)."""
        from bot.state.factory import open_store

        def opener() -> StateStore:
            return open_store(config)

        store, error = None, None
        try:
            store = opener()
        except StateUnavailableError as err:
            error = str(err)
            log.warning("state store unavailable at start-up, running without memory until it answers: %s", error)
            if on_failure is not None:
                on_failure("open")
        state = cls(store, replica_id=config.replica_id, opener=opener, on_failure=on_failure, last_error=error,
                    **kwargs)
        if store is None:
            state._failing.add("open")
            state.failures["open"] += 1
        return state

    @classmethod
    def memory_only(cls, replica_id: str = "local") -> "ResilientState":
        """No store at all (the CLI's ``ask``/``tool``): every call falls back, nothing is logged."""
        state = cls(None, replica_id=replica_id)
        state._disabled = True
        return state

    _disabled = False

    # -- what it is ------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """False for :meth:`memory_only`."""
        return not self._disabled

    @property
    def available(self) -> bool:
        """Whether the last call reached the store."""
        return self._available and not self._disabled

    @property
    def store(self) -> StateStore | None:
        """The opened store (``None`` until it could be opened)."""
        return self._store

    @property
    def pending_writes(self) -> int:
        return len(self._pending)

    def describe(self) -> dict:
        """``{"backend", "where", "replica", "available", "pending_writes", "failures", "last_error"}``."""
        store = self._store
        return {"backend": store.backend if store is not None else None,
                "where": store.where if store is not None else None,
                "replica": self.replica_id, "available": self.available,
                "pending_writes": self.pending_writes, "failures": dict(self.failures),
                "last_error": None if self.available else self.last_error}

    # -- calls -----------------------------------------------------------------------------------
    def call(self, kind: str, operation: Operation) -> tuple[bool, Any]:
        """``(True, operation(store))``, or ``(False, None)`` when the store is unavailable."""
        with self._calls:
            if self._disabled or self._closed:
                return False, None
            self._active += 1
        try:
            return self._call(kind, operation)
        finally:
            with self._calls:
                self._active -= 1
                self._calls.notify_all()

    def _call(self, kind: str, operation: Operation) -> tuple[bool, Any]:
        if not self._available and self._clock() < self._skip_until:  # failed a moment ago: fall back now
            self._failed(kind, self.last_error or "unavailable", trip=False)
            return False, None
        store = self._ensure_store()
        if store is None:
            self._failed(kind, self.last_error or "not opened")
            return False, None
        try:
            self._flush(store)
            result = operation(store)
        except StateUnavailableError as err:
            self._failed(kind, str(err))
            return False, None
        self._succeeded()
        return True, result

    def write(self, kind: str, operation: Operation) -> bool:
        """Like :meth:`call` for a write that must not be lost: queued when the store is down,
        replayed when it answers again. ``True`` when written now."""
        ok, _ = self.call(kind, operation)
        if not ok:
            self.defer(kind, operation)
        return ok

    def defer(self, kind: str, operation: Operation) -> None:
        """Queue a write that failed, to replay when the store answers again."""
        if self._disabled or self._closed:
            return
        with self._lock:
            if len(self._pending) == self._pending.maxlen:
                self.dropped_writes += 1
                log.warning("state store: a queued %s write was dropped (queue full)", self._pending[0][0])
            self._pending.append((kind, operation))

    async def acall(self, kind: str, operation: Operation, *, timeout_s: float | None = None) -> tuple[bool, Any]:
        """:meth:`call` in a worker thread; with ``timeout_s``, ``(False, None)`` when it takes longer
        (the call still completes in its thread)."""
        if self._disabled or self._closed:
            return False, None
        work = asyncio.ensure_future(self._in_thread(self.call, kind, operation))
        if timeout_s is None:
            return await work
        try:
            return await asyncio.wait_for(asyncio.shield(work), timeout_s)
        except asyncio.TimeoutError:
            self._failed(kind, f"no answer within {timeout_s:g} s", trip=False)
            return False, None

    async def awrite(self, kind: str, operation: Operation) -> bool:
        """:meth:`write` in a worker thread."""
        if self._disabled or self._closed:
            return False
        return await self._in_thread(self.write, kind, operation)

    def close(self, *, wait_s: float = 10.0) -> None:
        """Close the store if this object opened it: queued writes are tried once more, calls
        still running in worker threads are waited for (up to ``wait_s``), later calls fall back."""
        if self._closed:
            return
        store = self._store
        if store is not None and self._pending:
            self.call("flush", lambda s: None)
        with self._calls:
            self._closed = True
            self._calls.wait_for(lambda: self._active == 0, timeout=wait_s)
        if store is not None and self._owned:
            store.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    # -- internals -------------------------------------------------------------------------------
    def _in_thread(self, function: Callable[..., Any], *args: Any) -> "asyncio.Future[Any]":
        """``function(*args)`` in this object's pool, with the caller's context variables (as
        :func:`asyncio.to_thread` copies them)."""
        if self._executor is None:
            with self._executor_lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=STATE_THREADS, thread_name_prefix="sz-state")
        call = functools.partial(contextvars.copy_context().run, function, *args)
        return asyncio.get_running_loop().run_in_executor(self._executor, call)

    def _ensure_store(self) -> StateStore | None:
        if self._store is not None or self._opener is None:
            return self._store
        with self._lock:
            if self._store is not None:
                return self._store
            now = self._clock()
            if now - self._last_open_attempt < self._reopen_every_s:
                return None
            self._last_open_attempt = now
            try:
                self._store = self._opener()
            except StateUnavailableError as err:
                self.last_error = str(err)
                return None
            except StateError as err:  # a newer schema appeared meanwhile: say so, keep going without
                self.last_error = str(err)
                return None
            log.info("state store opened: %s %s", self._store.backend, self._store.where)
            return self._store

    def _flush(self, store: StateStore) -> None:
        """Replay queued writes, oldest first; stop (keeping the rest) at the first failure.

        One thread replays at a time (``_flush_lock``): two worker threads must never run
        the same queued write twice.
        """
        if not self._flush_lock.acquire(blocking=False):
            return  # another thread is replaying; it empties the queue
        try:
            self._replay(store)
        finally:
            self._flush_lock.release()

    def _replay(self, store: StateStore) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    return
                kind, operation = self._pending[0]
            try:
                operation(store)  # StateUnavailableError propagates: the caller records it
            except StateUnavailableError:
                raise
            except Exception as err:  # noqa: BLE001 - a write that can never succeed must not block the rest
                log.warning("state store: dropped a queued %s write that failed (%s)", kind, type(err).__name__)
                self.dropped_writes += 1
            with self._lock:
                if self._pending and self._pending[0][1] is operation:
                    self._pending.popleft()
            log.debug("state store: replayed a queued %s write", kind)

    def _failed(self, kind: str, reason: str, *, trip: bool = True) -> None:
        self._available = False
        self.last_error = reason
        if trip:
            self._skip_until = self._clock() + self._retry_every_s
        self.failures[kind] += 1
        first = False
        with self._lock:
            if kind not in self._failing:
                self._failing.add(kind)
                first = True
        if first:
            log.warning("state store unavailable (%s), continuing without memory: %s", kind, reason)
        if self._on_failure is not None:
            try:
                self._on_failure(kind)
            except Exception:  # noqa: BLE001 - counting must never break a request
                log.debug("state failure hook failed", exc_info=True)

    def _succeeded(self) -> None:
        if self._available and not self._failing:
            return
        self._available = True
        with self._lock:
            was = sorted(self._failing)
            self._failing.clear()
        if was:
            log.info("state store available again (after failures of %s); memory is back", ", ".join(was))
