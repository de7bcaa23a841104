"""Runtime state of one bot process: recent logs, captured errors and metrics, joined in :class:`Runtime`.

This is what the live tools (``getLogs``, ``getErrors``, ``getMetrics``,
``getStatus``) and the HTTP API (``/api/*``) read. One :class:`Runtime` is
built per process by the composition root (:mod:`bot.compose`) and passed in;
nothing here is a module-level singleton, so tests get a fresh state per app.
Each part lives in its own module: :mod:`~bot.observability.logs`,
:mod:`~bot.observability.errors`, :mod:`~bot.observability.feedback`,
:mod:`~bot.observability.metrics`, :mod:`~bot.observability.release`.
"""
from __future__ import annotations

import logging
import time

from bot.observability.errors import DEFAULT_ERROR_CAPACITY, ErrorLog
from bot.observability.logs import APP_LOGGERS, DEFAULT_LOG_CAPACITY, LogRingBuffer
from bot.observability.metrics import Metrics
from bot.observability.release import package_version

__all__ = ["Runtime"]


class Runtime:
    """All runtime state of one bot process.

    Attributes:
        started_at: epoch seconds at construction.
        version: the installed package version.
        logs: ring buffer handler; :meth:`install_log_handler` attaches it.
        errors: captured errors.
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

    def status(self) -> dict:
        """``{"version", "uptime_s", "started_at"}`` (epoch seconds)."""
        return {
            "version": self.version,
            "uptime_s": round(self.clock() - self.started_at, 3),
            "started_at": self.started_at,
        }
