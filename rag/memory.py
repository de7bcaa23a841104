"""Resident memory of this process, per phase of a benchmark.

``resource.getrusage(...).ru_maxrss`` is the high-water mark of the whole process lifetime, so
it cannot say what one phase (indexing, loading a model, querying) needed once an earlier phase
was larger. Linux can reset that mark: writing ``5`` to ``/proc/self/clear_refs`` sets the peak
(``VmHWM`` in ``/proc/self/status``) back to the current resident size (``proc(5)``, Linux ≥ 4.0).
:class:`PeakRss` resets it when a block starts and reads it when the block ends::

    with PeakRss() as peak:
        engine.update(full=True)
    peak.mb          # highest RSS during the update, in MiB

No thread samples anything (a sampling thread would compete for the GIL and slow the very code
being measured). Where ``/proc`` cannot do this (macOS, old kernels), ``mb`` is the lifetime
peak instead and ``exact`` is ``False``. Worker processes are not included: see
:func:`children_peak_mb`.
"""
from __future__ import annotations

import re
import resource
import sys
from pathlib import Path

__all__ = ["PeakRss", "children_peak_mb", "lifetime_peak_mb"]

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_HWM = re.compile(r"^VmHWM:\s+(\d+)\s+kB", re.MULTILINE)


def _hwm_mb() -> float | None:
    try:
        found = _HWM.search(_STATUS.read_text())
    except OSError:
        return None
    return int(found.group(1)) / 1024 if found else None


def _reset_hwm() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def lifetime_peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    """The peak RSS of the process lifetime (``RUSAGE_SELF``) or of its largest finished child
    (``RUSAGE_CHILDREN``), in MiB (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    raw = resource.getrusage(who).ru_maxrss
    return raw / (1024 * 1024) if sys.platform == "darwin" else raw / 1024


def children_peak_mb() -> float:
    """The largest peak RSS of any finished, waited-for child process (e.g. an indexing worker), MiB."""
    return lifetime_peak_mb(resource.RUSAGE_CHILDREN)


class PeakRss:
    """Context manager: the highest resident set size of this process while the block runs (MiB).

    Attributes:
        mb: the peak in MiB, set when the block ends.
        exact: whether the kernel's peak could be reset at the start (else ``mb`` is the
            lifetime peak, an upper bound).
    """

    def __init__(self) -> None:
        self.mb = 0.0
        self.exact = False

    def __enter__(self) -> PeakRss:
        self.exact = _reset_hwm() and _hwm_mb() is not None
        return self

    def __exit__(self, *exc: object) -> None:
        peak = _hwm_mb() if self.exact else None
        self.mb = peak if peak is not None else lifetime_peak_mb()
