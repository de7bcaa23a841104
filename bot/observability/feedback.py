"""👍/👎 votes on the bot's answers: the current vote per (user, answer), in memory."""
from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass

__all__ = ["DEFAULT_FEEDBACK_CAPACITY", "FEEDBACK_VOTES", "FeedbackLog", "FeedbackVote"]

#: Feedback votes kept in memory (newest win; one per user and answer).
DEFAULT_FEEDBACK_CAPACITY = 5000
FEEDBACK_VOTES = ("up", "down")


@dataclass(frozen=True, slots=True)
class FeedbackVote:
    """One feedback click: who, on which answer, ``up`` or ``down``, when (epoch seconds)."""

    user_id: str | None
    answer_id: str
    vote: str
    time: float

    def to_json(self) -> dict:
        return {"user_id": self.user_id, "answer_id": self.answer_id, "vote": self.vote, "time": self.time}


class FeedbackLog:
    """The current vote per (user, answer), the oldest dropped beyond ``capacity``."""

    def __init__(self, capacity: int = DEFAULT_FEEDBACK_CAPACITY, *, clock=time.time) -> None:
        self._votes: collections.OrderedDict[tuple[str | None, str], FeedbackVote] = collections.OrderedDict()
        self._capacity = capacity
        self._clock = clock
        self._lock = threading.Lock()

    def record(self, *, user_id: str | None, answer_id: str, vote: str) -> tuple[FeedbackVote, str | None]:
        """Keep ``vote`` as the user's vote on ``answer_id``; returns it and the vote it replaced."""
        entry = FeedbackVote(user_id, answer_id, vote, self._clock())
        with self._lock:
            old = self._votes.pop((user_id, answer_id), None)
            self._votes[(user_id, answer_id)] = entry
            while len(self._votes) > self._capacity:
                self._votes.popitem(last=False)
        return entry, old.vote if old else None

    def entries(self, *, answer_id: str | None = None, limit: int = 50) -> list[FeedbackVote]:
        """The newest votes first, optionally for one answer."""
        with self._lock:
            chosen = [v for v in reversed(self._votes.values()) if answer_id is None or v.answer_id == answer_id]
        return chosen[:limit] if limit > 0 else []
