"""Resident memory of this process, per phase of a benchmark.

``resource.getrusage(...).ru_maxrss`` is the high-water mark of the whole process lifetime, so
it cannot say what one phase (indexing, loading a model, querying) needed once an earlier phase
was larger. :class:`PeakRss` samples the current resident set size from ``/proc/self/statm``
(Linux; ``proc(5)``: the second field is resident pages) in a background thread while a block
runs and keeps the largest value::

    with PeakRss() as peak:
        engine.update(full=True)
    peak.mb          # highest RSS seen during the update, in MiB

Where ``/proc`` is missing (macOS), ``mb`` is the lifetime ``ru_maxrss`` instead
(``sampled`` is then ``False``). Worker processes are not included: see :func:`children_peak_mb`.
"""
from __future__ import annotations

import os
import resource
import sys
import threading
from pathlib import Path

__all__ = ["PeakRss", "current_rss_mb", "children_peak_mb", "DEFAULT_INTERVAL_S"]

DEFAULT_INTERVAL_S = 0.005
"""Sampling period (seconds): short enough to catch a model load's peak, cheap (one small read)."""
_STATM = Path("/proc/self/statm")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MIB = 1024 * 1024


def current_rss_mb() -> float | None:
    """This process's resident set size now, in MiB; ``None`` without ``/proc/self/statm``."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE / _MIB
    except (OSError, IndexError, ValueError):
        return None


def _lifetime_peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    # ru_maxrss is in KiB on Linux, in bytes on macOS (getrusage(2) on each).
    raw = resource.getrusage(who).ru_maxrss
    return raw / _MIB if sys.platform == "darwin" else raw / 1024


def children_peak_mb() -> float:
    """The largest peak RSS of any finished, waited-for child process (e.g. an indexing worker), MiB."""
    return _lifetime_peak_mb(resource.RUSAGE_CHILDREN)


class PeakRss:
    """Context manager: the highest resident set size of this process while the block runs (MiB).

    Args:
        interval_s: sampling period (default :data:`DEFAULT_INTERVAL_S`).

    Attributes:
        mb: the peak in MiB (after the block; while it runs, the peak so far).
        sampled: whether ``/proc`` sampling was available (else ``mb`` is the lifetime peak).
    """

    def __init__(self, *, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.mb = 0.0
        self.sampled = current_rss_mb() is not None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        now = current_rss_mb()
        if now is not None and now > self.mb:
            self.mb = now

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> PeakRss:
        if self.sampled:
            self._sample()
            self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._sample()
        else:
            self.mb = _lifetime_peak_mb()
