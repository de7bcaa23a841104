"""Processes a test started and expects to end on their own (orphaned workers, a killed parent's children)."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an orphan is reaped by init, which may be slow in a container)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def survivors(pids: list[int], *, timeout_s: float = 10.0) -> list[int]:
    """Wait up to ``timeout_s`` for ``pids`` to end; those still running are killed (SIGKILL, so no test
    leaves them behind) and returned."""
    deadline = time.monotonic() + timeout_s
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in pids if running(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left
