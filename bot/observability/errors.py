"""Errors the bot caught and reported, kept in memory for ``getErrors`` and ``GET /api/admin/errors``."""
from __future__ import annotations

import collections
import time
import traceback
from dataclasses import dataclass

__all__ = ["CapturedError", "DEFAULT_ERROR_CAPACITY", "ErrorLog"]

DEFAULT_ERROR_CAPACITY = 100


@dataclass(frozen=True, slots=True)
class CapturedError:
    """An exception the bot caught and reported: ``time`` in epoch seconds."""

    type: str
    message: str
    stack: str
    time: float
    command: str | None = None

    def to_json(self, *, include_stack: bool = False) -> dict:
        data = {"type": self.type, "message": self.message, "time": self.time, "command": self.command}
        if include_stack:
            data["stack"] = self.stack
        return data


class ErrorLog:
    """The last ``capacity`` captured errors, newest last."""

    def __init__(self, capacity: int = DEFAULT_ERROR_CAPACITY, *, clock=time.time) -> None:
        self._errors: collections.deque[CapturedError] = collections.deque(maxlen=capacity)
        self._clock = clock

    def capture(self, error: BaseException, *, command: str | None = None, keep_message: bool = True) -> CapturedError:
        """Record ``error`` (with its traceback) and return the record.

        ``keep_message=False`` stores the type name instead of ``str(error)`` and
        traceback frames without the message: for command crashes, whose message
        may quote the user's input (a password given to ``/sz-hash pbkdf2``).
        """
        if keep_message:
            message = str(error)
            stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        else:
            message = f"{type(error).__name__} (message withheld: it may quote command input)"
            stack = "".join(traceback.format_tb(error.__traceback__)) + type(error).__name__
        captured = CapturedError(type(error).__name__, message, stack, self._clock(), command)
        self._errors.append(captured)
        return captured

    def entries(self, *, limit: int = 50) -> list[CapturedError]:
        """The newest ``limit`` errors, newest first."""
        return list(reversed(self._errors))[:limit] if limit > 0 else []

    def __len__(self) -> int:
        return len(self._errors)
