"""Recent log records of the bot process, kept in memory for ``getLogs`` and ``GET /api/logs``.

Everything kept is what the code logged (the code logs metadata, never question
text or secrets); the live-tools adapter sanitises again before anything reaches the model.
"""
from __future__ import annotations

import collections
import logging
import traceback
from dataclasses import dataclass

__all__ = ["APP_LOGGERS", "DEFAULT_LOG_CAPACITY", "LogEntry", "LogRingBuffer"]

DEFAULT_LOG_CAPACITY = 500
#: The project's loggers, whose INFO records the ring buffer keeps.
APP_LOGGERS = ("bot", "commands", "rag", "slackzilla")
_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log record: ``time`` is epoch seconds, ``stack`` the formatted exception if any."""

    time: float
    level: str
    logger: str
    message: str
    stack: str | None = None

    def to_json(self, *, include_stack: bool = False) -> dict:
        data = {"time": self.time, "level": self.level, "logger": self.logger, "message": self.message}
        if include_stack and self.stack:
            data["stack"] = self.stack
        return data


class LogRingBuffer(logging.Handler):
    """A logging handler keeping the last ``capacity`` records in memory (thread-safe)."""

    def __init__(self, capacity: int = DEFAULT_LOG_CAPACITY, *, level: int = logging.INFO) -> None:
        super().__init__(level=level)
        self._records: collections.deque[LogEntry] = collections.deque(maxlen=capacity)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stack = None
            if record.exc_info:
                stack = "".join(traceback.format_exception(*record.exc_info))
            entry = LogEntry(record.created, record.levelname, record.name, record.getMessage(), stack)
        except Exception:  # noqa: BLE001 - a handler must never raise
            self.handleError(record)
            return
        self._records.append(entry)

    def entries(self, *, limit: int = 50, level: str | None = None) -> list[LogEntry]:
        """The newest ``limit`` records at ``level`` or above, newest first.

        Raises:
            ValueError: ``level`` is not a logging level name.
        """
        floor = 0
        if level:
            if level.upper() not in _LEVELS:
                raise ValueError(f"unknown log level {level!r}; use one of {', '.join(_LEVELS)}")
            floor = _LEVELS[level.upper()]
        chosen = [e for e in reversed(self._records) if _LEVELS.get(e.level, 0) >= floor]
        return chosen[:limit] if limit > 0 else []
