"""bot.slack.budget: per-method buckets (aiolimiter), Retry-After pauses, room kept for answers in flight."""
from __future__ import annotations

import time

import pytest

from bot.observability.metrics import Metrics
from bot.slack.budget import MethodLimit, SlackBudget, SlackLimits


async def test_sheddable_calls_leave_room_for_what_answers_in_flight_hold():
    metrics = Metrics()
    budget = SlackBudget(SlackLimits({"chat.update": MethodLimit(60, burst=5)}), metrics=metrics)
    async with budget.hold({"chat.update": 3}):  # an answer that still needs three edits
        assert [await budget.try_spend("chat.update") for _ in range(4)] == [True, True, False, False]
        started = time.monotonic()
        for _ in range(3):  # the answer's own edits always go (the bucket had room for them)
            await budget.spend("chat.update")
        assert time.monotonic() - started < 0.1
    assert budget.shed["chat.update"] == 2 and metrics.snapshot()["slack"]["shed"] == {"chat.update": 2}
    assert b'slackzilla_slack_shed_total{method="chat.update"} 2.0' in metrics.prometheus_text()


async def test_a_must_go_call_waits_for_the_bucket_instead_of_failing():
    budget = SlackBudget(SlackLimits({"chat.update": MethodLimit(600, burst=1)}))  # one call per 0.1 s
    started = time.monotonic()
    for _ in range(4):
        await budget.spend("chat.update")
    assert time.monotonic() - started >= 0.25


async def test_retry_after_pauses_the_method_for_everyone():
    budget = SlackBudget()
    budget.pause("chat.update", 0.4)
    assert not await budget.try_spend("chat.update")  # progress: skipped during the pause
    assert await budget.try_spend("chat.delete")  # other methods are not paused
    started = time.monotonic()
    await budget.spend("chat.update")  # the answer: waits it out
    assert time.monotonic() - started >= 0.39


async def test_chat_post_message_is_budgeted_per_channel():
    budget = SlackBudget(SlackLimits({"chat.postMessage": MethodLimit(60, burst=2, per_channel=True)}))
    assert [await budget.try_spend("chat.postMessage", channel="C1") for _ in range(3)] == [True, True, False]
    assert await budget.try_spend("chat.postMessage", channel="C2")
    assert await budget.try_spend("chat.unbudgeted")  # methods without a limit are not budgeted


def test_limits_are_checked():
    with pytest.raises(ValueError):
        MethodLimit(0)
    with pytest.raises(ValueError):
        MethodLimit(10, burst=0.5)
