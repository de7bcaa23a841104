"""Where answers run: their own event loop in their own thread, and a small oldest-first CPU pool.

    loop = AnswerLoop(workers=2)
    result = await loop.run(lambda offload: answer_question(..., offload=offload), on_token=..., on_activity=...)
    await loop.aclose()

**Why (issue 13).** The bot's main event loop must do little more than route: verify a Slack
request, ack it, hand the work on. Measured with ``slackzilla bench --load`` (60 concurrent
questions on 2 cores), two kinds of answer work kept it from doing so:

* the model's streamed tokens: the openai SDK decodes every SSE event into a typed chunk
  (about 0.25 ms of CPU each here); 60 streams at 25 tokens/s are 1,500 chunks a second,
  most of the main loop's time, so a ``/sz-help`` arriving meanwhile waited seconds in the queue;
* the CPU-bound stages (retrieval, code context, packing: 0.1-0.3 s per question), which in the
  default executor's six threads held the GIL against the loop and, taken first come first
  served, made every question wait for all sixty retrievals before any answer started.

So each answer's coroutine (``answer_question``: model client, tool loop, SSE decoding) runs on
a second event loop in a thread of its own; the main loop only receives what the asker's
callbacks must see: each activity as it happens, and the streamed text in batches every
:data:`TOKEN_RELAY_INTERVAL_S` (Slack's message updates are coalesced to about one a second
anyway). The CPU-bound stages run in ``workers`` threads (:data:`DEFAULT_ANSWER_WORKERS`: one), and
a free thread goes to the *oldest* question waiting (:class:`OldestFirst`), so the first questions
finish their context and start streaming while later ones wait, instead of all of them finishing
together. The GIL is still shared, but by three threads, each of which the interpreter
makes yield every 5 ms (``sys.getswitchinterval``), not by a queue of thousands of callbacks.

Callbacks run on the caller's loop, in order, and the answer waits for each (their exceptions
reach the answer as before). Cancelling the caller cancels the answer on its loop.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import heapq
import itertools
import threading
from collections.abc import Awaitable, Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from rag.activities import call_maybe_async

__all__ = ["AnswerLoop", "OldestFirst", "DEFAULT_ANSWER_WORKERS", "TOKEN_RELAY_INTERVAL_S"]

T = TypeVar("T")

DEFAULT_ANSWER_WORKERS = 1
"""Threads for the answers' CPU-bound stages. The stages hold the GIL (only SQLite's FTS5 queries
release it), so a second thread hardly answers faster; it takes more turns away from the event
loops. Measured with ``slackzilla bench --load`` (60 questions, 2 cores, a busy machine), two runs
each: probe ack p99 0.56/0.78 s with one thread, 0.78/1.00 s with two, final answers as fast
(a question's stages take about 50 ms on a 2,000-file repository)."""
TOKEN_RELAY_INTERVAL_S = 0.2
"""Streamed text reaches the caller's loop at most this often per answer (seconds)."""
CLOSE_TIMEOUT_S = 2.0
"""How long :meth:`AnswerLoop.aclose` waits for the answers it cancels to finish their clean-up (seconds)."""


class OldestFirst:
    """At most ``slots`` holders at once; a freed slot goes to the waiter with the smallest ticket.

    One event loop's primitive (like ``asyncio.Semaphore``, which wakes waiters first come first
    served): ``async with gate.hold(ticket): …``. Tickets are any orderable values; ties go in
    arrival order.
    """

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self._free = slots
        self._waiters: list[tuple[Any, int, asyncio.Future]] = []
        self._arrivals = itertools.count()

    async def acquire(self, ticket: Any) -> None:
        """Wait for a slot (at once when one is free and nobody waits)."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (ticket, next(self._arrivals), waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a slot just as it was cancelled
                self.release()
            raise

    def release(self) -> None:
        """Give the slot to the oldest waiter still waiting, else free it."""
        while self._waiters:
            _ticket, _n, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    def hold(self, ticket: Any):
        """``async with gate.hold(ticket):`` acquire, then release on exit."""
        gate = self

        class _Held:
            async def __aenter__(self) -> None:
                await gate.acquire(ticket)

            async def __aexit__(self, *exc_info: object) -> None:
                gate.release()

        return _Held()


class _TextRelay:
    """Streamed text from the answer loop to a callback on the caller's loop, batched.

    A callback that fails in the timer task (the terminal's pipe closed, a client gone) is not
    lost there: nothing more is sent, and the answer gets the error at its next ``feed`` (or when
    it ends, :meth:`raise_failure`), so it stops instead of streaming on to nobody.
    """

    def __init__(self, callback: Callable[[str], Any], target: asyncio.AbstractEventLoop, interval_s: float) -> None:
        self._callback, self._target, self._interval_s = callback, target, interval_s
        self._buffer: list[str] = []
        self._sender: asyncio.Task | None = None
        self._failure: BaseException | None = None

    async def feed(self, text: str) -> None:
        """The answer's ``on_token`` (on the answer loop): keep the text, send it within ``interval_s``.

        Raises:
            Exception: what the callback raised for earlier text.
        """
        self.raise_failure()
        self._buffer.append(text)
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send_later())

    def raise_failure(self) -> None:
        """Raise what the callback raised in the timer task, if it did."""
        if self._failure is not None:
            raise self._failure

    async def _send_later(self) -> None:
        try:
            while self._buffer:
                await asyncio.sleep(self._interval_s)
                await self.flush()
        except Exception as exc:  # noqa: BLE001 - handed to the answer by feed()/raise_failure()
            self._failure = exc
            self._buffer.clear()
        finally:
            self._sender = None

    async def flush(self) -> None:
        """Send what is kept now (and wait until the callback has run)."""
        if not self._buffer:
            return
        text = "".join(self._buffer)
        self._buffer.clear()
        await _on(self._target, self._callback, text)

    async def close(self) -> None:
        """Stop the timer and send the rest (nothing once the callback has failed)."""
        sender, self._sender = self._sender, None
        if sender is not None and not sender.done():
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
        if self._failure is None:
            await self.flush()


async def drain_answers(tasks: Collection[asyncio.Task], *, timeout_s: float, grace_s: float) -> int:
    """Let the running answer ``tasks`` (on this event loop) finish for up to ``timeout_s`` seconds, then
    cancel the rest and give them ``grace_s`` seconds to end (to tell their askers why); returns how many
    were cancelled. Shared by the Slack answers and the HTTP API's at shutdown."""
    running = {task for task in tasks if not task.done()}
    if not running:
        return 0
    _done, pending = await asyncio.wait(running, timeout=timeout_s)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=grace_s)
    return len(pending)


async def _cancel_tasks(timeout_s: float) -> None:
    """Cancel every other task of the running loop and wait up to ``timeout_s`` for them to end."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout_s)


async def _on(target: asyncio.AbstractEventLoop, callback: Callable[..., Any], *args: Any) -> None:
    """Run ``callback(*args)`` (sync or async) on ``target`` and wait for it."""
    await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call_maybe_async(callback, *args), target))


class AnswerLoop:
    """The answers' event loop thread and CPU pool (module docstring); started on first use.

    Args:
        workers: threads for the CPU-bound stages (default :data:`DEFAULT_ANSWER_WORKERS`).
        relay_interval_s: batching of streamed text towards the caller (:data:`TOKEN_RELAY_INTERVAL_S`).
    """

    def __init__(self, *, workers: int = DEFAULT_ANSWER_WORKERS,
                 relay_interval_s: float = TOKEN_RELAY_INTERVAL_S) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self.relay_interval_s = relay_interval_s
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._gate: OldestFirst | None = None
        self._tickets = itertools.count()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The answers' event loop (started if needed)."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(target=self._serve, args=(loop, ready), name="sz-answer-loop", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sz-answer")
                self._gate = None
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    async def offload(self, ticket: Any, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in the CPU pool once the gate lets ``ticket`` through (on the answer loop)."""
        if self._gate is None:
            self._gate = OldestFirst(self.workers)
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        async with self._gate.hold(ticket):
            return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def run(self, work: Callable[..., Awaitable[T]], *,
                  on_activity: Callable[..., Any] | None = None, on_token: Callable[[str], Any] | None = None,
                  ) -> T:
        """Run ``work(offload, on_activity, on_token)`` on the answer loop and return its result.

        ``work`` receives the :data:`rag.answer.orchestrator.Offload` of this answer (its ticket:
        the order in which answers started) and the two callbacks as they must be called from
        the answer loop (each activity relayed to ``on_activity`` on the caller's loop and waited
        for, the text batched to ``on_token``; ``None`` stays ``None``).
        """
        caller = asyncio.get_running_loop()
        loop = self.loop
        ticket = next(self._tickets)
        offload = functools.partial(self.offload, ticket)
        relay = _TextRelay(on_token, caller, self.relay_interval_s) if on_token is not None else None

        async def activity(item: Any) -> None:
            if relay is not None:
                await relay.flush()  # the text so far first: the caller sees them in order
            await _on(caller, on_activity, item)

        async def here() -> T:
            try:
                result = await work(offload, activity if on_activity is not None else None,
                                    relay.feed if relay is not None else None)
            finally:
                if relay is not None:
                    await relay.close()
            if relay is not None:
                relay.raise_failure()  # the text never reached the caller
            return result

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(here(), loop))

    def call(self, coro: Awaitable[T]) -> "asyncio.Future[T]":
        """Await ``coro`` on the answer loop from the caller's loop: ``await loop.call(client.aclose())``."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def aclose(self) -> None:
        """Stop the loop thread and the pool (a later :meth:`run` starts them again). Answers still running
        on the loop are cancelled and their clean-up awaited first (as ``asyncio.run`` does), not dropped
        with the loop."""
        with self._lock:
            loop, thread, pool = self._loop, self._thread, self._pool
            self._loop = self._thread = self._pool = None
            self._gate = None
        if loop is not None and thread is not None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_cancel_tasks(CLOSE_TIMEOUT_S), loop))
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join, 5.0)
            if not thread.is_alive():
                loop.close()
