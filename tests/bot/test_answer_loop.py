"""bot.answer_loop: answers on their own loop thread, CPU stages oldest first, callbacks on the caller's loop."""
from __future__ import annotations

import asyncio
import threading

import pytest

from bot.answer_loop import AnswerLoop, OldestFirst


async def test_an_answer_runs_on_its_loop_its_cpu_stage_in_the_pool_and_callbacks_here_in_order():
    answers = AnswerLoop(workers=1, relay_interval_s=0.01)
    here = threading.current_thread().name
    seen: list[tuple[str, str]] = []

    async def on_activity(item):
        seen.append(("activity", item, threading.current_thread().name))

    def on_token(text):
        seen.append(("text", text, threading.current_thread().name))

    async def work(offload, activity, token):
        where = threading.current_thread().name
        cpu = await offload(lambda: threading.current_thread().name)
        await token("Hel")
        await token("lo")
        await activity("searched")
        await token(" world")
        return where, cpu

    try:
        where, cpu = await answers.run(work, on_activity=on_activity, on_token=on_token)
    finally:
        await answers.aclose()
    assert where == "sz-answer-loop" and cpu.startswith("sz-answer_")
    assert [(kind, value) for kind, value, _t in seen] == [("text", "Hello"), ("activity", "searched"),
                                                           ("text", " world")]
    assert {thread for _k, _v, thread in seen} == {here}


async def test_errors_and_cancellation_cross_the_loops():
    answers = AnswerLoop()
    started, cancelled = threading.Event(), threading.Event()

    async def fails(offload, activity, token):
        raise ValueError("bad question")

    async def hangs(offload, activity, token):
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    try:
        with pytest.raises(ValueError, match="bad question"):
            await answers.run(fails)
        task = asyncio.ensure_future(answers.run(hangs))
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(cancelled.wait, 5)
    finally:
        await answers.aclose()


async def test_a_failing_text_callback_stops_the_answer_instead_of_being_lost(caplog):
    """``slackzilla ask … | head``: the terminal's callback raised BrokenPipeError in the relay's
    timer task, where nobody awaited it: a traceback per batch ("Task exception was never
    retrieved") and the answer streamed on to the end. The answer now gets the error."""
    import gc
    import logging

    answers = AnswerLoop(relay_interval_s=0.01)
    fed: list[str] = []

    def on_token(text):
        raise BrokenPipeError(32, "Broken pipe")

    async def streams(offload, activity, token):
        for n in range(200):
            fed.append(str(n))
            await token(f"word{n} ")
            await asyncio.sleep(0.01)
        return "finished"

    caplog.set_level(logging.ERROR, logger="asyncio")
    try:
        with pytest.raises(BrokenPipeError):
            await answers.run(streams, on_token=on_token)
    finally:
        await answers.aclose()
    assert len(fed) < 50, "the answer went on after its text could not be delivered"
    gc.collect()
    assert "never retrieved" not in caplog.text


async def test_oldest_first_gives_a_freed_slot_to_the_smallest_ticket():
    gate = OldestFirst(1)
    order: list[int] = []
    await gate.acquire(0)

    async def holder(ticket: int) -> None:
        async with gate.hold(ticket):
            order.append(ticket)

    waiting = [asyncio.ensure_future(holder(t)) for t in (5, 3, 9, 1)]
    await asyncio.sleep(0)
    gate.release()
    await asyncio.gather(*waiting)
    assert order == [1, 3, 5, 9]


async def test_a_cancelled_waiter_does_not_keep_its_slot():
    gate = OldestFirst(1)
    await gate.acquire(0)
    waiter = asyncio.ensure_future(gate.acquire(1))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    gate.release()
    await asyncio.wait_for(gate.acquire(2), 1)  # the slot came back
