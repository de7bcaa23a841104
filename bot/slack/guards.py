"""Request guards: each delivery processed once (decided by identity), then questions' repeats and rate limit.

Each guard is a Bolt middleware function ``async def …(…, next)`` (as in
slack_bolt/middleware/middleware.py): it either calls ``next()`` or answers the
request itself with a :class:`slack_bolt.BoltResponse`, so nothing downstream
(the ack, the lazy answer) runs.

* :func:`deliver_once` (global, every request): the delivery's identities
  (:func:`delivery_identities`: ``event:<event_id>``, ``msg:<client_msg_id>``,
  ``mention:<channel>:<ts>``, ``slash:<trigger_id>``, ``action:<trigger_id>``,
  ``sig:<X-Slack-Signature>``) are claimed atomically in the state store for
  :data:`DELIVERY_TTL_S` (Slack's whole retry schedule: attempts after about 1 minute and
  5 minutes); a request any of whose identities was claimed before is acked with an empty
  200 and dropped. The retry header (``X-Slack-Retry-Num``) decides nothing: Socket Mode
  copies an envelope's ``retry_attempt`` into it on every delivery, first ones included
  (``0``; slack_bolt/adapter/socket_mode/internals.py ``build_headers``), and a retry whose
  first delivery never arrived (the bot was restarting) must still be answered. So: first
  deliveries are processed; retries are processed when no earlier delivery was seen;
  duplicates (the same event, the same client message, an edit of a mention, a replayed
  signed request) are processed once — by one replica, also after a restart.
* :func:`ask_guards` (on ``/sz-ask`` and ``app_mention``): the same question from the
  same user in the same channel within ``DEFAULT_DUPLICATE_WINDOW_S`` is answered once
  (the asker is told so); then the per-user limit of ``ASK_RATE_PER_MIN`` questions per
  minute (a sliding window) answers the excess with a friendly message saying when to retry.

Delivery identities and rate-limit windows live in the state store
(:class:`bot.state.resilient.ResilientState`), so a redelivery after a restart, or to
another replica, is recognised, and the limit counts across replicas; exactly one
claimer of an identity answers. While the store is unavailable the in-process
:class:`DuplicateFilter` (deliveries remembered for the same :data:`DELIVERY_TTL_S`) and
:class:`RateLimiter` decide instead (bounded, oldest keys dropped first), and the
answer's footer says memory is off.

Known limit: a delivery is claimed before it is acked; a process killed between the two
(a few milliseconds) loses that delivery, since its retries find it claimed.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from dataclasses import dataclass
from typing import Callable, Mapping

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
    "deliver_once",
    "delivery_identities",
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


def delivery_identities(body: dict, headers: Mapping | None = None) -> list[str]:
    """The identities one delivery is known by, in the fixed order they are claimed.

    * events: ``event:<event_id>``; ``msg:<client_msg_id>`` (the message's own id, which an
      edited message keeps, also inside a ``message_changed`` event's ``message``); for an
      ``app_mention``, ``mention:<channel>:<ts>``: Slack re-fires ``app_mention`` when a message
      that mentions the bot is edited, with a new ``event_id`` but the same message ``ts``
      (unique per channel), so an edit is not a new question;
    * slash commands: ``slash:<trigger_id>``; interactions (buttons …): ``action:<trigger_id>``;
    * every HTTP request: ``sig:<X-Slack-Signature>``, the HMAC of ``v0:<timestamp>:<body>``,
      the same on a replayed request (Slack's 5-minute window would otherwise accept it again).

    Args:
        body: the parsed request body (Bolt's ``body``: an envelope's ``payload`` in Socket Mode).
        headers: the request headers (Bolt's: lower-case names, lists of values).

    Returns:
        The identities (possibly none: then nothing is remembered).
    """
    found: list[str] = []
    if "command" in body:
        if body.get("trigger_id"):
            found.append(f"slash:{body['trigger_id']}")
    elif body.get("type") == "event_callback" or "event" in body:
        event = body.get("event") or {}
        if body.get("event_id"):
            found.append(f"event:{body['event_id']}")
        origin = event.get("client_msg_id") or (event.get("message") or {}).get("client_msg_id")
        if origin:
            found.append(f"msg:{origin}")
        if event.get("type") == "app_mention" and event.get("ts"):
            found.append(f"mention:{event.get('channel')}:{event['ts']}")
    elif body.get("trigger_id"):
        found.append(f"action:{body['trigger_id']}")
    signature = _header(headers, "x-slack-signature")
    if signature:
        found.append(f"sig:{signature}")
    return found


def _header(headers: Mapping | None, name: str) -> str | None:
    """The first value of header ``name`` in Bolt's headers (lists of values) or a plain mapping."""
    value = (headers or {}).get(name)
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return value or None


def deliver_once(*, state: ResilientState | None = None, memory: DuplicateFilter | None = None):
    """The global middleware deciding retries and duplicates by identity, not by the retry header.

    Every request's :func:`delivery_identities` are claimed in the state store for
    :data:`DELIVERY_TTL_S` (and remembered in process); a request any of whose identities was
    claimed before is acked with an empty 200 and goes no further, whatever its headers say.
    So a first delivery is always processed (Socket Mode copies ``retry_attempt`` into
    ``X-Slack-Retry-Num`` on every envelope, ``0`` included: the header alone decides
    nothing), a retry whose earlier deliveries never arrived (the bot was restarting) is
    processed once, and a retry of a delivery already acked is not processed again — for
    every listener, the cheap commands included.

    Args:
        state: the state store (``None``: in-process only).
        memory: the in-process memory, consulted too (it decides alone while the store is
            unavailable); default: :data:`DELIVERY_TTL_S`, :data:`DEFAULT_MAX_KEYS` keys.

    Returns:
        ``async def deliver_once(body, request, next)`` for ``app.middleware(...)``.
    """
    state = state if state is not None else ResilientState.memory_only()
    memory = memory if memory is not None else DuplicateFilter(window_s=DELIVERY_TTL_S)

    async def seen_before(identities: list[str]) -> str | None:
        """The first identity claimed already, else ``None`` (all are claimed now). Identities are
        claimed in a fixed order and the first refusal stops (so two replicas racing on one
        delivery cannot each win half)."""

        def claim_all(store) -> str | None:
            return next((identity for identity in identities if not store.claim(identity, DELIVERY_TTL_S)), None)

        ok, claimed = await state.acall("claim", claim_all, timeout_s=ACK_PATH_TIMEOUT_S)
        local = [identity for identity in identities if memory.check(("delivery", identity)) is not None]
        return (claimed if ok else None) or (local[0] if local else None)

    async def deliver_once(body: dict, request, next) -> BoltResponse | None:  # noqa: A002 - Bolt's name
        headers = getattr(request, "headers", None) or {}
        identities = delivery_identities(body or {}, headers)
        attempt = _header(headers, "x-slack-retry-num")
        reason = _header(headers, "x-slack-retry-reason") or "?"
        seen = await seen_before(identities) if identities else None
        if seen is not None:
            kind = seen.split(":", 1)[0]  # the identity's kind only: ids and signatures stay out of the log
            if attempt and attempt != "0":
                log.info("ignored a Slack retry of a delivery already received (same %s, attempt %s, reason %s)",
                         kind, attempt, reason)
            else:
                log.info("ignored a repeated delivery (same %s as one already received)", kind)
            return BoltResponse(status=200, body="")
        if attempt and attempt != "0":
            log.info("processing a Slack retry whose earlier deliveries never arrived (attempt %s, reason %s)",
                     attempt, reason)
        return await next()

    return deliver_once


def _who_where_what(body: dict) -> tuple[str | None, str | None, str, str | None]:
    """``(user, channel, text, thread_ts)`` of a slash command or an ``app_mention`` event."""
    if "command" in body:
        return body.get("user_id"), body.get("channel_id"), body.get("text") or "", None
    event = body.get("event") or {}
    return event.get("user"), event.get("channel"), event.get("text") or "", event.get("thread_ts") or event.get("ts")


def ask_guards(*, duplicates: DuplicateFilter, limiter: RateLimiter, tasks: set | None = None,
               state: ResilientState | None = None):
    """Listener middleware for questions (after :func:`deliver_once` let the delivery through):
    a repeated question first, then the per-user rate limit.

    Args:
        duplicates: remembers recent questions (``DEFAULT_DUPLICATE_WINDOW_S``).
        limiter: the per-user limiter (``ASK_RATE_PER_MIN``; the store's window first).
        tasks: where background ephemeral posts are kept referenced (events only).
        state: the state store (``None``: in-process only).

    Returns:
        ``async def guard_asks(body, client, next)``.
    """
    pending = tasks if tasks is not None else set()
    state = state if state is not None else ResilientState.memory_only()

    async def hit(user: str) -> Decision:
        if limiter.limit == 0:
            return Decision(True)
        ok, decision = await state.acall("rate_limit", lambda s: s.hit(f"ask:{user}", limiter.limit,
                                                                      limiter.window_s),
                                         timeout_s=ACK_PATH_TIMEOUT_S)
        if ok:
            return Decision(decision.allowed, decision.retry_after_s)
        return limiter.hit(user)

    async def guard_asks(body: dict, client, next) -> BoltResponse | None:  # noqa: A002
        user, channel, text, thread_ts = _who_where_what(body)
        is_command = "command" in body
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
