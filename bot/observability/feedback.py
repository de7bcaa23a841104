"""👍/👎 votes on the bot's answers: the current vote per (user, answer), kept in the state store.

    feedback = FeedbackLog(state=state, metrics=runtime.metrics)      # bot.compose builds it
    await feedback.arecord(user_id="U1", answer_id="ab12…", vote="up",
                           question_chars=42, sources=("src/a.js",), model="gpt-x")

A vote carries the answer's question *length*, cited sources and model, never the
question text. With a store (:class:`bot.state.resilient.ResilientState`) votes survive
restarts and are shared by every replica; while the store is unavailable they are kept
in memory (bounded) and written to the store when it answers again. Without a store
(``state=None``) the log is in memory only.
"""
from __future__ import annotations

import asyncio
import collections
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from bot.state.resilient import ResilientState

__all__ = ["DEFAULT_FEEDBACK_CAPACITY", "FEEDBACK_VOTES", "FeedbackLog", "FeedbackVote"]

#: Feedback votes kept in memory (newest win; one per user and answer).
DEFAULT_FEEDBACK_CAPACITY = 5000
FEEDBACK_VOTES = ("up", "down")


@dataclass(frozen=True, slots=True)
class FeedbackVote:
    """One feedback click: who, on which answer, ``up`` or ``down``, when (epoch seconds), and
    the answer's question length, sources and model (never the question)."""

    user_id: str | None
    answer_id: str
    vote: str
    time: float
    question_chars: int = 0
    sources: tuple[str, ...] = field(default=())
    model: str | None = None

    def to_json(self) -> dict:
        return {"user_id": self.user_id, "answer_id": self.answer_id, "vote": self.vote, "time": self.time,
                "question_chars": self.question_chars, "sources": list(self.sources), "model": self.model}


class FeedbackLog:
    """The current vote per (user, answer): in the state store when there is one, else in memory.

    Args:
        state: the bot's state handle (``None``: memory only).
        metrics: the :class:`bot.observability.metrics.Metrics` counting votes (``record_feedback``).
        capacity: votes kept in memory (the fallback), the oldest dropped first.
        clock: epoch seconds.
    """

    def __init__(self, capacity: int = DEFAULT_FEEDBACK_CAPACITY, *, state: "ResilientState | None" = None,
                 metrics=None, clock=time.time) -> None:
        self._votes: collections.OrderedDict[tuple[str | None, str], FeedbackVote] = collections.OrderedDict()
        self._capacity = capacity
        self._clock = clock
        self._lock = threading.Lock()
        self._state = state
        self._metrics = metrics

    def record(self, *, user_id: str | None, answer_id: str, vote: str, question_chars: int = 0,
               sources: Sequence[str] = (), model: str | None = None) -> tuple[FeedbackVote, str | None]:
        """Keep ``vote`` as the user's vote on ``answer_id``; returns it and the vote it replaced.

        Blocking (the store): async code calls :meth:`arecord`. Raises ``ValueError`` for a
        vote other than ``up``/``down``.
        """
        if vote not in FEEDBACK_VOTES:
            raise ValueError(f"vote must be one of {FEEDBACK_VOTES}, got {vote!r}")
        entry = FeedbackVote(user_id, answer_id, vote, self._clock(), int(question_chars), tuple(sources), model)
        with self._lock:
            old = self._votes.pop((user_id, answer_id), None)
            self._votes[(user_id, answer_id)] = entry
            while len(self._votes) > self._capacity:
                self._votes.popitem(last=False)
        previous = old.vote if old else None
        if self._state is not None and self._state.enabled:
            def write(store):
                return store.record_vote(user_id=user_id, answer_id=answer_id, vote=vote,
                                         question_chars=entry.question_chars, sources=entry.sources,
                                         model=model, now=entry.time)

            ok, stored_previous = self._state.call("votes", write)
            if ok:
                previous = stored_previous
            else:  # kept in memory; written when the store is back
                self._state.defer("votes", write)
        if self._metrics is not None:
            self._metrics.record_feedback(vote, previous=previous)
        return entry, previous

    async def arecord(self, **kwargs) -> tuple[FeedbackVote, str | None]:
        """:meth:`record` in a worker thread."""
        return await asyncio.to_thread(lambda: self.record(**kwargs))

    def entries(self, *, answer_id: str | None = None, limit: int = 50) -> list[FeedbackVote]:
        """The newest votes first, optionally for one answer (from the store when it answers)."""
        if limit <= 0:
            return []
        if self._state is not None and self._state.enabled:
            ok, votes = self._state.call("votes", lambda s: s.votes(answer_id=answer_id, limit=limit))
            if ok:
                return [FeedbackVote(v.user_id, v.answer_id, v.vote, v.at, v.question_chars, tuple(v.sources),
                                     v.model) for v in votes]
        with self._lock:
            chosen = [v for v in reversed(self._votes.values()) if answer_id is None or v.answer_id == answer_id]
        return chosen[:limit]

    def counts(self) -> dict[str, int] | None:
        """``{"up", "down"}`` current votes from the store (every replica's); ``None`` without one
        or while it is unavailable (the metrics keep this process's counts then)."""
        if self._state is None or not self._state.enabled:
            return None
        ok, counts = self._state.call("votes", lambda s: s.vote_counts())
        return dict(counts) if ok else None
