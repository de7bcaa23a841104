"""Request guards for questions: Slack retries, duplicate deliveries and a per-user rate limit.

Each guard is a Bolt middleware function ``async def …(…, next)`` (as in
slack_bolt/middleware/middleware.py): it either calls ``next()`` or answers the
request itself with a :class:`slack_bolt.BoltResponse`, so nothing downstream
(the ack, the lazy answer) runs.

* :func:`ignore_slack_retries` (global): a request carrying ``X-Slack-Retry-Num``
  is acked with an empty 200 and dropped. Slack retries an event when the first
  delivery was not acked within 3 s; every listener here acks at once and works
  lazily, so the first delivery is already being answered. (Bolt exposes the
  header in ``request.headers``; Socket Mode mirrors ``retry_attempt`` into the
  same header, slack_bolt/adapter/socket_mode/internals.py.)
* :func:`ask_guards` (on ``/sz-ask`` and ``app_mention``): a delivery seen before
  (same ``trigger_id`` or ``event_id``) is dropped silently; the same question
  from the same user in the same channel within ``DEFAULT_DUPLICATE_WINDOW_S``
  is answered once (the asker is told so); then the per-user limit of
  ``ASK_RATE_PER_MIN`` questions per minute (a sliding window) answers the
  excess with a friendly message saying when to retry.

Delivery identities and rate-limit windows live in the state store
(:class:`bot.state.resilient.ResilientState`), so a redelivery after a restart, or to
another replica, is recognised, and the limit counts across replicas: each delivery
identity (``event:<event_id>``, ``msg:<client_msg_id>``, ``slash:<trigger_id>``,
``sig:<X-Slack-Signature>``) is claimed atomically for :data:`DELIVERY_TTL_S` (Slack's
whole retry schedule); exactly one claimer answers. While the store is unavailable the
in-process :class:`DuplicateFilter` and :class:`RateLimiter` decide instead (bounded,
oldest keys dropped first), and the answer's footer says memory is off.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from dataclasses import dataclass
from typing import Callable

from slack_bolt.response import BoltResponse

from bot.slack import messages
from bot.state.resilient import ResilientState
from bot.state.store import DEFAULT_CLAIM_TTL_S

__all__ = [
    "DEFAULT_DUPLICATE_WINDOW_S",
    "DEFAULT_RATE_WINDOW_S",
    "DELIVERY_TTL_S",
    "Decision",
    "DuplicateFilter",
    "RateLimiter",
    "ask_guards",
    "ignore_slack_retries",
]

log = logging.getLogger(__name__)

#: Window of the per-user limit: ``ASK_RATE_PER_MIN`` is per minute.
DEFAULT_RATE_WINDOW_S = 60.0
#: "An identical question from the same user within a few seconds is answered once" (issue 8).
DEFAULT_DUPLICATE_WINDOW_S = 10.0
#: How long a delivery identity is remembered: Slack retries after ~1 and ~5 minutes.
DELIVERY_TTL_S = max(600.0, DEFAULT_CLAIM_TTL_S)
#: Longest wait for the store on the ack path (Slack wants the ack within 3 s); then in-process.
ACK_PATH_TIMEOUT_S = 1.0
#: Keys remembered at most (users for the limiter, deliveries for the duplicate filter).
DEFAULT_MAX_KEYS = 10_000


@dataclass(frozen=True)
class Decision:
    """``allowed``; when not, ``retry_after_s`` (whole seconds, ≥ 1) until the next one is."""

    allowed: bool
    retry_after_s: int = 0


class RateLimiter:
    """At most ``limit`` hits per key in any ``window_s`` seconds (a sliding-window log).

    Only allowed hits are counted, so a refused ask does not push the retry time back.
    ``limit`` 0 turns the limiter off.

    Example::

        limiter = RateLimiter(6)
        limiter.hit("U123")            # Decision(allowed=True)
    """

    def __init__(self, limit: int, *, window_s: float = DEFAULT_RATE_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        if limit < 0 or window_s <= 0:
            raise ValueError(f"limit must be >= 0 and window_s > 0, got {limit} and {window_s}")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._max_keys = max_keys
        self._hits: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()

    def hit(self, key: str) -> Decision:
        """Count one request for ``key`` if it is allowed."""
        if self.limit == 0:
            return Decision(True)
        now = self._clock()
        hits = self._hits.pop(key, None) or collections.deque()
        while hits and hits[0] <= now - self.window_s:
            hits.popleft()
        if len(hits) >= self.limit:
            self._hits[key] = hits
            return Decision(False, max(1, math.ceil(hits[0] + self.window_s - now)))
        hits.append(now)
        self._hits[key] = hits
        while len(self._hits) > self._max_keys:
            self._hits.popitem(last=False)
        return Decision(True)


class DuplicateFilter:
    """Remembers keys for ``window_s`` seconds.

    :meth:`check` answers how long ago a key was first seen (``None`` the first
    time, which also records it).
    """

    def __init__(self, *, window_s: float = DEFAULT_DUPLICATE_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self.window_s = window_s
        self._clock = clock
        self._max_keys = max_keys
        self._seen: collections.OrderedDict[tuple, float] = collections.OrderedDict()

    def check(self, key: tuple) -> float | None:
        now = self._clock()
        while self._seen:
            oldest_key, at = next(iter(self._seen.items()))
            if at > now - self.window_s and len(self._seen) <= self._max_keys:
                break
            self._seen.popitem(last=False)
        first = self._seen.get(key)
        if first is not None:
            return now - first
        self._seen[key] = now
        return None


async def ignore_slack_retries(request, next) -> BoltResponse | None:  # noqa: A002 - Bolt's argument name
    """Global middleware: ack and drop any request with ``X-Slack-Retry-Num``."""
    attempt = request.headers.get("x-slack-retry-num")
    if attempt:
        reason = (request.headers.get("x-slack-retry-reason") or ["?"])[0]
        log.info("ignored a Slack retry (attempt %s, reason %s)", attempt[0], reason)
        return BoltResponse(status=200, body="")
    return await next()


def _who_where_what(body: dict) -> tuple[str | None, str | None, str, str | None, str | None]:
    """``(user, channel, text, delivery id, thread_ts)`` of a slash command or an ``app_mention`` event."""
    if "command" in body:
        return body.get("user_id"), body.get("channel_id"), body.get("text") or "", body.get("trigger_id"), None
    event = body.get("event") or {}
    delivery = body.get("event_id") or event.get("client_msg_id") or event.get("ts")
    return event.get("user"), event.get("channel"), event.get("text") or "", delivery, \
        event.get("thread_ts") or event.get("ts")


def delivery_identities(body: dict, headers: dict | None = None) -> list[str]:
    """The identities one delivery is known by: ``event:``, ``msg:`` (client message id, also
    an edited message's origin), ``slash:`` (trigger id) and ``sig:`` (the request signature,
    the same on a replayed request)."""
    found: list[str] = []
    if "command" in body:
        if body.get("trigger_id"):
            found.append(f"slash:{body['trigger_id']}")
    else:
        event = body.get("event") or {}
        if body.get("event_id"):
            found.append(f"event:{body['event_id']}")
        origin = event.get("client_msg_id") or (event.get("message") or {}).get("client_msg_id")
        if origin:
            found.append(f"msg:{origin}")
        if not found and event.get("ts"):
            found.append(f"ts:{event.get('channel')}:{event['ts']}")
    signature = (headers or {}).get("x-slack-signature")
    if signature:
        found.append(f"sig:{signature[0] if isinstance(signature, (list, tuple)) else signature}")
    return found


def ask_guards(*, duplicates: DuplicateFilter, limiter: RateLimiter, tasks: set | None = None,
               state: ResilientState | None = None):
    """Listener middleware for questions: duplicates first, then the per-user rate limit.

    Args:
        duplicates: remembers recent questions, and deliveries while the store is unavailable.
        limiter: the per-user limiter (``ASK_RATE_PER_MIN``; the store's window first).
        tasks: where background ephemeral posts are kept referenced (events only).
        state: the state store (``None``: in-process only).

    Returns:
        ``async def guard_asks(body, request, client, next)``.
    """
    pending = tasks if tasks is not None else set()
    state = state if state is not None else ResilientState.memory_only()

    async def claimed_before(identities: list[str]) -> bool:
        """Whether any identity was claimed already. Identities are claimed in a fixed order and
        the first refusal stops (so two replicas racing on one delivery cannot each win half)."""
        if not identities:
            return False

        def claim_all(store) -> bool:
            return not all(store.claim(identity, DELIVERY_TTL_S) for identity in identities)

        ok, seen = await state.acall("claim", claim_all, timeout_s=ACK_PATH_TIMEOUT_S)
        local = [duplicates.check(("delivery", identity)) is not None for identity in identities]
        return bool(seen) if ok else any(local)

    async def hit(user: str) -> Decision:
        if limiter.limit == 0:
            return Decision(True)
        ok, decision = await state.acall("rate_limit", lambda s: s.hit(f"ask:{user}", limiter.limit,
                                                                      limiter.window_s),
                                         timeout_s=ACK_PATH_TIMEOUT_S)
        if ok:
            return Decision(decision.allowed, decision.retry_after_s)
        return limiter.hit(user)

    async def guard_asks(body: dict, request, client, next) -> BoltResponse | None:  # noqa: A002
        user, channel, text, delivery, thread_ts = _who_where_what(body)
        is_command = "command" in body
        headers = getattr(request, "headers", None) or {}
        if await claimed_before(delivery_identities(body, headers)):
            log.info("dropped a duplicate delivery of a question")
            return BoltResponse(status=200, body="")
        ago = duplicates.check(("question", user, channel, thread_ts, " ".join(text.split()).lower()))
        if ago is not None:
            log.info("answered a repeated question once (%.1f s apart)", ago)
            if is_command:
                return BoltResponse(status=200, body={"response_type": "ephemeral",
                                                      "text": messages.duplicate_ask(seconds_ago=ago)})
            return BoltResponse(status=200, body="")
        decision = await hit(user or "anonymous")
        if decision.allowed:
            return await next()
        log.info("rate limited a question (retry in %d s)", decision.retry_after_s)
        text = messages.rate_limited(retry_after_s=decision.retry_after_s, per_minute=limiter.limit)
        if is_command:
            return BoltResponse(status=200, body={"response_type": "ephemeral", "text": text})
        if channel and user:
            task = asyncio.create_task(_post_ephemeral(client, channel=channel, user=user, thread_ts=thread_ts,
                                                       text=text))
            pending.add(task)
            task.add_done_callback(pending.discard)
        return BoltResponse(status=200, body="")

    return guard_asks


async def _post_ephemeral(client, *, channel: str, user: str, thread_ts: str | None, text: str) -> None:
    try:
        await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=text)
    except Exception as err:  # noqa: BLE001 - best effort: the limit holds either way
        log.warning("could not tell a rate-limited user (%s)", type(err).__name__)
