"""Activities: the visible trail of what one answer is doing.

Each step of ``answer_question`` (retrieval, context packing, a command run, a
model round, the model reasoning, a live tool call) becomes an
:class:`Activity`. The recorder keeps them in order and forwards each one to
the caller's ``on_activity`` callback as soon as it exists, so the Slack bot
can update its progress message and ``/api/ask`` can stream ``activity``
events. A failing callback (Slack down, client gone) is logged and never
breaks the answer.
"""
from __future__ import annotations

import inspect
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STAGES", "STATUSES", "Activity", "ActivityRecorder", "new_activity", "call_maybe_async"]

log = logging.getLogger(__name__)

STAGES = ("retrieval", "context", "command", "ai", "reasoning", "tool")
"""Stage names, in the order they usually happen."""
STATUSES = ("started", "completed", "failed", "skipped")

ActivityCallback = Callable[["Activity"], "Awaitable[None] | None"]


@dataclass(frozen=True)
class Activity:
    """One step of an answer.

    Attributes:
        id: random UUID4 string.
        timestamp_ms: Unix time in milliseconds when the activity was created.
        stage: one of :data:`STAGES`.
        status: one of :data:`STATUSES`.
        message: one line for a person ("Found 6 sources in 4 files").
        metadata: JSON-safe details (counts, durations, tool name, endpoint);
            never question text, command text or secrets.
    """

    id: str
    timestamp_ms: int
    stage: str
    status: str
    message: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        """``{"id", "timestamp", "stage", "status", "message", "metadata"}`` (timestamp in ms)."""
        return {
            "id": self.id,
            "timestamp": self.timestamp_ms,
            "stage": self.stage,
            "status": self.status,
            "message": self.message,
            "metadata": dict(self.metadata),
        }


def new_activity(stage: str, status: str, message: str, metadata: dict[str, Any] | None = None) -> Activity:
    """Build an :class:`Activity` stamped now.

    Raises:
        ValueError: unknown ``stage`` or ``status``.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown activity stage {stage!r}; expected one of {STAGES}")
    if status not in STATUSES:
        raise ValueError(f"unknown activity status {status!r}; expected one of {STATUSES}")
    return Activity(str(uuid.uuid4()), int(time.time() * 1000), stage, status, message, dict(metadata or {}))


async def call_maybe_async(callback: Callable[..., Any] | None, *args: Any) -> None:
    """Call a sync or async callback; awaits the result when it is awaitable."""
    if callback is None:
        return
    result = callback(*args)
    if inspect.isawaitable(result):
        await result


class ActivityRecorder:
    """Collects activities and forwards each to ``on_activity`` (sync or async)."""

    def __init__(self, on_activity: ActivityCallback | None = None) -> None:
        self.items: list[Activity] = []
        self._callback = on_activity

    async def record(self, activity: Activity) -> Activity:
        """Keep ``activity`` and forward it; callback errors are logged, not raised."""
        self.items.append(activity)
        try:
            await call_maybe_async(self._callback, activity)
        except Exception:  # a progress sink must never break the answer
            log.warning("on_activity callback failed for stage %s", activity.stage, exc_info=True)
        return activity

    async def add(self, stage: str, status: str, message: str, /, **metadata: Any) -> Activity:
        """Create, keep and forward a new activity."""
        return await self.record(new_activity(stage, status, message, metadata))
