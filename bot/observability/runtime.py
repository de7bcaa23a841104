"""Runtime state of one bot process: recent logs, captured errors, metrics, status, release.

This is what the live tools (``getLogs``, ``getErrors``, ``getMetrics``,
``getStatus``, ``getReleaseInfo``) and the HTTP API (``/api/*``) read. One
:class:`Runtime` is built per process by the factory and passed in; nothing here
is a module-level singleton, so tests get a fresh state per app. Each instance
owns its own prometheus-client ``CollectorRegistry`` for the same reason.

Everything kept is metadata: log records are what the code logged (the code logs
metadata, never question text or secrets), errors keep type, message and stack.
The live-tools adapter sanitises again before anything reaches the model.
"""
from __future__ import annotations

import collections
import importlib.metadata
import logging
import re
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = [
    "Runtime",
    "LogRingBuffer",
    "LogEntry",
    "CapturedError",
    "ErrorLog",
    "Metrics",
    "FeedbackVote",
    "FeedbackLog",
    "release_info",
    "package_version",
    "latest_changelog_section",
    "DEFAULT_LOG_CAPACITY",
    "DEFAULT_ERROR_CAPACITY",
]

DEFAULT_LOG_CAPACITY = 500
DEFAULT_ERROR_CAPACITY = 100
#: Feedback votes kept in memory (newest win; one per user and answer).
DEFAULT_FEEDBACK_CAPACITY = 5000
FEEDBACK_VOTES = ("up", "down")
#: Latency samples kept per command for the percentiles (a sliding window).
DEFAULT_LATENCY_WINDOW = 1000
#: Histogram buckets in seconds: slash commands are milliseconds, asks are seconds.
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
PACKAGE_NAME = "slackzilla"
DEFAULT_CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"
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


def percentile(samples: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of ``samples``; ``None`` when empty.

    Nearest-rank is the textbook definition (NIST e-Handbook 7.2.5.2): the value at
    rank ``ceil(q/100 * n)`` of the sorted samples; no interpolation.
    """
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, -(-q * len(ordered) // 100))
    return ordered[int(rank) - 1]


class Metrics:
    """Counters and latencies, as JSON (``snapshot``) and Prometheus text (``prometheus_text``).

    Latency percentiles (p50/p95/p99, milliseconds) come from the last
    ``DEFAULT_LATENCY_WINDOW`` samples per command; Prometheus gets histograms.
    """

    def __init__(self, *, window: int = DEFAULT_LATENCY_WINDOW) -> None:
        self.registry = CollectorRegistry()
        self._lock = threading.Lock()
        self._window = window
        self._latencies: dict[str, collections.deque[float]] = {}
        self._counts: dict[str, dict[str, int]] = {}
        self._asks = {"total": 0, "failed": 0, "declined": 0}
        self._tokens = {"input": 0, "output": 0, "total": 0}
        self._feedback: dict[str, int] = {vote: 0 for vote in FEEDBACK_VOTES}
        self._reindex = {"runs": 0, "busy_refusals": 0}
        self._commands_total = Counter(
            "slackzilla_commands", "Slash commands handled.", ["command", "result"], registry=self.registry
        )
        self._command_seconds = Histogram(
            "slackzilla_command_seconds", "Slash command latency.", ["command"],
            buckets=LATENCY_BUCKETS_S, registry=self.registry,
        )
        self._asks_total = Counter("slackzilla_asks", "Questions answered.", ["result"], registry=self.registry)
        self._tokens_total = Counter("slackzilla_tokens", "Model tokens used.", ["kind"], registry=self.registry)
        self._reindex_gauge = Gauge("slackzilla_reindex", "Index updates: runs and refusals while one ran.",
                                    ["kind"], registry=self.registry)
        self._feedback_total = Counter("slackzilla_feedback", "Answer feedback votes.", ["vote"], registry=self.registry)
        self._feedback_current = Gauge("slackzilla_feedback_current", "Current answer feedback votes.", ["vote"],
                                       registry=self.registry)

    def record_command(self, command_id: str, seconds: float, *, ok: bool) -> None:
        """Count one command run taking ``seconds`` (wall clock, handler only)."""
        with self._lock:
            window = self._latencies.setdefault(command_id, collections.deque(maxlen=self._window))
            window.append(seconds)
            counts = self._counts.setdefault(command_id, {"count": 0, "failed": 0})
            counts["count"] += 1
            counts["failed"] += 0 if ok else 1
        self._commands_total.labels(command_id, "ok" if ok else "error").inc()
        self._command_seconds.labels(command_id).observe(seconds)

    def record_ask(self, *, ok: bool, input_tokens: int = 0, output_tokens: int = 0, declined: bool = False) -> None:
        """Count one answered question and the model tokens it used (summed over rounds).

        ``declined``: the model answered that the repository does not document the answer
        (:mod:`rag.answer.citations`); counted apart so operators see how often the bot has no answer.
        """
        result = "error" if not ok else "declined" if declined else "ok"
        with self._lock:
            self._asks["total"] += 1
            self._asks["failed"] += 0 if ok else 1
            self._asks["declined"] += 1 if result == "declined" else 0
            for kind, amount in (("input", input_tokens), ("output", output_tokens)):
                if amount > 0:
                    self._tokens[kind] += amount
                    self._tokens["total"] += amount
                    self._tokens_total.labels(kind).inc(amount)
        self._asks_total.labels(result).inc()

    def record_feedback(self, vote: str, *, previous: str | None = None) -> None:
        """Count one 👍/👎 vote (``up`` or ``down``); ``previous`` is the same user's earlier
        vote on the same answer, which this one replaces.

        The JSON counts are current votes (a changed vote moves from one count to the
        other; the same vote twice counts once). Prometheus gets
        ``slackzilla_feedback_total{vote}`` (votes cast, monotonic) and
        ``slackzilla_feedback_current{vote}`` (current votes).

        Raises:
            ValueError: ``vote`` is not ``up`` or ``down``.
        """
        if vote not in FEEDBACK_VOTES:
            raise ValueError(f"vote must be one of {FEEDBACK_VOTES}, got {vote!r}")
        if previous == vote:
            return
        with self._lock:
            self._feedback[vote] = self._feedback.get(vote, 0) + 1
            if previous in FEEDBACK_VOTES:
                self._feedback[previous] = max(0, self._feedback.get(previous, 0) - 1)
            current = dict(self._feedback)
        self._feedback_total.labels(vote).inc()
        for name, count in current.items():
            self._feedback_current.labels(name).set(count)

    def set_reindex(self, *, runs: int, busy_refusals: int) -> None:
        """Mirror the reindexer's own counts (it is the one place that knows every run)."""
        with self._lock:
            self._reindex = {"runs": runs, "busy_refusals": busy_refusals}
        self._reindex_gauge.labels("runs").set(runs)
        self._reindex_gauge.labels("busy_refusals").set(busy_refusals)

    def snapshot(self) -> dict:
        """``{"commands": {id: {count, failed, p50_ms, p95_ms, p99_ms}}, "asks", "tokens", "reindex", "feedback"}``."""
        with self._lock:
            commands = {}
            for command_id, counts in sorted(self._counts.items()):
                samples = list(self._latencies.get(command_id, ()))
                commands[command_id] = {
                    **counts,
                    **{f"p{q}_ms": _ms(percentile(samples, q)) for q in (50, 95, 99)},
                }
            return {
                "commands": commands,
                "asks": dict(self._asks),
                "tokens": dict(self._tokens),
                "reindex": dict(self._reindex),
                "feedback": dict(self._feedback),
            }

    def prometheus_text(self) -> bytes:
        """The Prometheus text exposition of this instance's registry."""
        return generate_latest(self.registry)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


_CHANGELOG_HEADING = re.compile(r"^##\s+(?!#)(.+?)\s*$", re.MULTILINE)


def latest_changelog_section(text: str) -> dict | None:
    """The first ``## `` section of a Keep-a-Changelog file: ``{"title", "body"}`` or ``None``.

    A section headed ``Unreleased`` with an empty body is skipped.
    """
    matches = list(_CHANGELOG_HEADING.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end():end].strip()
        title = match.group(1).strip()
        if "unreleased" in title.lower() and not body:
            continue
        return {"title": title, "body": body}
    return None


def package_version() -> str:
    """The installed ``slackzilla`` version from package metadata (``0.0.0+unknown`` if not installed)."""
    try:
        return importlib.metadata.version(PACKAGE_NAME)
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def release_info(*, changelog: Path = DEFAULT_CHANGELOG) -> dict:
    """``{"name", "version", "changelog": {"title", "body"} | None}`` of the running bot.

    The version comes from the installed package metadata; the changelog section
    from ``changelog`` (default: ``CHANGELOG.md`` of the project checkout next to
    this package), ``None`` when that file is not there (e.g. a wheel install).
    """
    try:
        section = latest_changelog_section(changelog.read_text(encoding="utf-8"))
    except OSError:
        section = None
    return {"name": PACKAGE_NAME, "version": package_version(), "changelog": section}


class Runtime:
    """All runtime state of one bot process.

    Attributes:
        started_at: epoch seconds at construction.
        version: the installed package version.
        logs: ring buffer handler; :meth:`install_log_handler` attaches it.
        errors: captured errors.
        feedback: 👍/👎 votes on answers (:meth:`record_feedback`).
        metrics: counters, latency percentiles and the Prometheus registry.
    """

    def __init__(
        self,
        *,
        log_capacity: int = DEFAULT_LOG_CAPACITY,
        error_capacity: int = DEFAULT_ERROR_CAPACITY,
        clock=time.time,
    ) -> None:
        self.clock = clock
        self.started_at = clock()
        self.version = package_version()
        self.logs = LogRingBuffer(log_capacity)
        self.errors = ErrorLog(error_capacity, clock=clock)
        self.metrics = Metrics()
        self.feedback = FeedbackLog(clock=clock)
        self._raised_levels: list[logging.Logger] = []

    def install_log_handler(self, logger: logging.Logger | None = None) -> logging.Handler:
        """Attach :attr:`logs` to ``logger`` (default: the root logger) and return it.

        The project's loggers (:data:`APP_LOGGERS`) left at ``NOTSET`` are set to INFO so
        their INFO records reach the buffer; :meth:`remove_log_handler` restores them.
        """
        target = logger or logging.getLogger()
        if self.logs not in target.handlers:
            target.addHandler(self.logs)
        for name in APP_LOGGERS:
            app_logger = logging.getLogger(name)
            if app_logger.level == logging.NOTSET:
                self._raised_levels.append(app_logger)
                app_logger.setLevel(logging.INFO)
        return self.logs

    def remove_log_handler(self, logger: logging.Logger | None = None) -> None:
        """Detach :attr:`logs` and undo the level changes of :meth:`install_log_handler`."""
        (logger or logging.getLogger()).removeHandler(self.logs)
        while self._raised_levels:
            self._raised_levels.pop().setLevel(logging.NOTSET)

    def capture_command_error(self, command_id: str, error: Exception) -> None:
        """The registry's ``on_error`` hook: record a command crash without its message."""
        self.errors.capture(error, command=command_id, keep_message=False)

    def record_feedback(self, *, user_id: str | None, answer_id: str, vote: str) -> FeedbackVote:
        """Record a 👍/👎 click on an answer (who, which answer, vote) and count it in the metrics.

        Raises:
            ValueError: ``vote`` is not ``up`` or ``down``.
        """
        if vote not in FEEDBACK_VOTES:
            raise ValueError(f"vote must be one of {FEEDBACK_VOTES}, got {vote!r}")
        entry, previous = self.feedback.record(user_id=user_id, answer_id=answer_id, vote=vote)
        self.metrics.record_feedback(vote, previous=previous)
        return entry

    def status(self) -> dict:
        """``{"version", "uptime_s", "started_at"}`` (epoch seconds)."""
        return {
            "version": self.version,
            "uptime_s": round(self.clock() - self.started_at, 3),
            "started_at": self.started_at,
        }
