"""rag.memory.PeakRss: each phase reports its own peak, not the process lifetime's."""
from __future__ import annotations

import sys

import pytest

from rag.memory import PeakRss, lifetime_peak_mb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the peak is reset through /proc (Linux only)")
def test_a_later_smaller_phase_is_not_charged_an_earlier_peak():
    with PeakRss() as big:
        block = bytearray(200 * 1024 * 1024)  # touched: 200 MiB resident
        del block
    with PeakRss() as small:
        kept = bytearray(20 * 1024 * 1024)
    assert big.exact and small.exact
    assert big.mb >= 200 and small.mb < big.mb - 150
    assert kept


def test_without_proc_the_lifetime_peak_is_reported(monkeypatch):
    import rag.memory as memory

    monkeypatch.setattr(memory, "_reset_hwm", lambda: False)
    with PeakRss() as peak:
        pass
    assert not peak.exact and peak.mb == pytest.approx(lifetime_peak_mb(), rel=0.05)
