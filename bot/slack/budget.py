"""An app-wide budget of Slack Web API calls per method: progress is shed before an answer waits.

Slack rate-limits every Web API method per app and workspace by tier (Slack "Rate limits":
Tier 2 about 20 calls a minute, Tier 3 about 50, Tier 4 about 100, each with some burst), and
``chat.postMessage`` specially, about one message per second per channel with short bursts.
Twenty questions at once used to make ~120 ``chat.update`` calls in 10 s against a ~50 a
minute tier. Every Slack call of the ``/sz-ask`` flow now goes through one
:class:`SlackBudget` (one per app, so every answer shares it), in one of two ways:

* **must go** (:meth:`SlackBudget.spend`): the progress post, the final answer and its pages,
  the last edit of the progress message, the end of a stream. It waits for room in the
  method's bucket and for any Retry-After pause, then goes.
* **sheddable** (:meth:`SlackBudget.try_spend`): progress edits, stream appends, starting a
  stream. It goes only while the bucket keeps room for what the answers in flight still
  must send (:meth:`SlackBudget.hold`: each running answer holds the ``chat.update`` calls it
  will need), and never during a Retry-After pause; otherwise it is skipped and counted
  (``slackzilla_slack_shed_total{method}``). A skipped progress state is replaced by a later
  one, a skipped append goes out with the next, a stream that cannot start leaves the answer
  to be shown in place.

A 429's ``Retry-After`` pauses the whole method for every answer (:meth:`SlackBudget.pause`,
called by the retry handlers of :mod:`bot.slack.delivery`), so the next call of that method
waits at least that long.

The buckets are aiolimiter's leaky bucket (``AsyncLimiter(burst, burst / rate)``): up to
``burst`` calls at once, then ``per_minute`` a minute.

    budget = SlackBudget(DEFAULT_LIMITS, metrics=metrics)
    async with budget.hold({"chat.update": 2}):             # an answer in flight
        if await budget.try_spend("chat.update"):           # a progress edit: maybe
            ...
        await budget.spend("chat.postMessage", channel="C1")  # the answer: always
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging
import time
from dataclasses import dataclass, field
from typing import Iterator, Mapping

from aiolimiter import AsyncLimiter

__all__ = ["DEFAULT_LIMITS", "MethodLimit", "SlackBudget", "SlackLimits", "sheddable_call", "is_sheddable_call"]

log = logging.getLogger(__name__)

#: Channels whose ``chat.postMessage`` bucket is kept (the least recently used is forgotten).
MAX_CHANNEL_BUCKETS = 1000

_SHEDDABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("slack_sheddable_call", default=False)


@contextlib.contextmanager
def sheddable_call() -> Iterator[None]:
    """Mark the Slack calls made inside as sheddable: the retry handlers of
    :mod:`bot.slack.delivery` do not wait to retry them (a later progress state replaces them)."""
    token = _SHEDDABLE.set(True)
    try:
        yield
    finally:
        _SHEDDABLE.reset(token)


def is_sheddable_call() -> bool:
    """Whether the current task is inside :func:`sheddable_call`."""
    return _SHEDDABLE.get()


@dataclass(frozen=True)
class MethodLimit:
    """One method's allowance.

    Attributes:
        per_minute: calls a minute on average.
        burst: calls that may go at once (the bucket's size); default ``per_minute``.
        per_channel: the allowance is per channel (``chat.postMessage``), not app-wide.
    """

    per_minute: float
    burst: float | None = None
    per_channel: bool = False

    def __post_init__(self) -> None:
        if self.per_minute <= 0 or (self.burst is not None and self.burst < 1):
            raise ValueError(f"per_minute must be > 0 and burst >= 1, got {self.per_minute}, {self.burst}")

    def limiter(self) -> AsyncLimiter:
        burst = self.burst if self.burst is not None else self.per_minute
        return AsyncLimiter(burst, burst * 60.0 / self.per_minute)


#: Slack's tiers (Slack "Rate limits" and each method's reference page): ``chat.update`` and
#: ``chat.delete`` Tier 3, ``chat.postEphemeral``, ``chat.appendStream`` and the file upload
#: methods Tier 4; ``chat.postMessage`` about 1 a second per channel with short bursts (5 here).
#: ``chat.startStream``/``chat.stopStream`` are budgeted as Tier 2, the cautious guess (their
#: tier was not confirmed here); a 429 from Slack still pauses any method by its Retry-After.
DEFAULT_METHOD_LIMITS: Mapping[str, MethodLimit] = {
    "chat.postMessage": MethodLimit(60, burst=5, per_channel=True),
    "chat.update": MethodLimit(50),
    "chat.delete": MethodLimit(50),
    "chat.postEphemeral": MethodLimit(100),
    "chat.startStream": MethodLimit(20),
    "chat.appendStream": MethodLimit(100),
    "chat.stopStream": MethodLimit(20),
    "files.getUploadURLExternal": MethodLimit(100),
    "files.completeUploadExternal": MethodLimit(100),
}


@dataclass(frozen=True)
class SlackLimits:
    """The allowances a :class:`SlackBudget` enforces; methods not listed are not budgeted.

    Example::

        SlackLimits()                                          # Slack's tiers (DEFAULT_LIMITS)
        SlackLimits({"chat.update": MethodLimit(10, burst=2)})  # a tighter budget (tests)
    """

    methods: Mapping[str, MethodLimit] = field(default_factory=lambda: dict(DEFAULT_METHOD_LIMITS))


DEFAULT_LIMITS = SlackLimits()


class SlackBudget:
    """Per-method buckets, Retry-After pauses and the calls answers in flight still need.

    One per app (:class:`bot.slack.ask_flow.AskFlow` builds it); not thread-safe (event loop only).

    Args:
        limits: the allowances (:data:`DEFAULT_LIMITS`).
        metrics: a :class:`bot.observability.metrics.Metrics` (``record_slack_shed``), optional.
        clock: monotonic seconds (the Retry-After pauses; the buckets use the loop's clock).
    """

    def __init__(self, limits: SlackLimits = DEFAULT_LIMITS, *, metrics=None,
                 clock=time.monotonic) -> None:
        self.limits = limits
        self._metrics = metrics
        self._clock = clock
        self._buckets: dict[str, AsyncLimiter] = {}
        self._channel_buckets: collections.OrderedDict[tuple[str, str], AsyncLimiter] = collections.OrderedDict()
        self._paused_until: dict[str, float] = {}
        self._held: collections.Counter[str] = collections.Counter()
        #: calls skipped per method (also in metrics)
        self.shed: collections.Counter[str] = collections.Counter()

    def _bucket(self, method: str, channel: str | None) -> AsyncLimiter | None:
        limit = self.limits.methods.get(method)
        if limit is None:
            return None
        if limit.per_channel:
            key = (method, channel or "-")
            bucket = self._channel_buckets.pop(key, None) or limit.limiter()
            self._channel_buckets[key] = bucket
            while len(self._channel_buckets) > MAX_CHANNEL_BUCKETS:
                self._channel_buckets.popitem(last=False)
            return bucket
        if method not in self._buckets:
            self._buckets[method] = limit.limiter()
        return self._buckets[method]

    def pause(self, method: str, seconds: float) -> None:
        """No call of ``method`` before ``seconds`` from now (a 429's Retry-After)."""
        until = self._clock() + max(0.0, seconds)
        if until > self._paused_until.get(method, 0.0):
            self._paused_until[method] = until
            log.info("Slack rate-limited %s: pausing it for %.1f s", method, seconds)

    def paused_for(self, method: str) -> float:
        """Seconds left of ``method``'s Retry-After pause (0 when none)."""
        return max(0.0, self._paused_until.get(method, 0.0) - self._clock())

    def reserve(self, calls: Mapping[str, int]) -> None:
        """Keep room for ``calls`` (method → count) that an answer in flight must still send."""
        self._held.update(calls)

    def release(self, calls: Mapping[str, int]) -> None:
        """Undo :meth:`reserve`."""
        self._held.subtract(calls)

    @contextlib.asynccontextmanager
    async def hold(self, calls: Mapping[str, int]):
        """:meth:`reserve` ``calls`` while inside."""
        self.reserve(calls)
        try:
            yield
        finally:
            self.release(calls)

    async def spend(self, method: str, *, channel: str | None = None) -> None:
        """Wait until a ``method`` call may go (after any pause, with room in its bucket), then take it."""
        while (wait := self.paused_for(method)) > 0:
            await asyncio.sleep(wait)
        bucket = self._bucket(method, channel)
        if bucket is not None:
            await bucket.acquire()

    async def try_spend(self, method: str, *, channel: str | None = None) -> bool:
        """Take a ``method`` call only if it leaves room for what answers in flight hold, and no
        pause is on; ``False`` (counted as shed) otherwise. Never waits."""
        bucket = self._bucket(method, channel)
        room = bucket is None or bucket.has_capacity(1 + self._held.get(method, 0))
        if self.paused_for(method) > 0 or not room:
            self.shed[method] += 1
            if self._metrics is not None:
                self._metrics.record_slack_shed(method)
            return False
        if bucket is not None:
            await bucket.acquire()  # has room: returns at once
        return True
