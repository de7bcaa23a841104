"""The exit watchdog (tests/exit_watchdog.py) ends a test process that would hang at exit."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

HANGING_TEST = """
import threading
from concurrent.futures import ThreadPoolExecutor

BLOCKED = threading.Event()
POOL = ThreadPoolExecutor(1)


def test_leaves_a_worker_blocked():
    POOL.submit(BLOCKED.wait)  # never set: interpreter exit joins this worker forever
    assert True
"""


def run_session(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "SZ_EXIT_GRACE_S": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "exit_watchdog", "-p", "no:cacheprovider",
                           str(tmp_path / "test_sample.py")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)


def test_a_blocked_worker_does_not_hang_the_run_and_its_stack_is_printed(tmp_path):
    done = run_session(tmp_path, HANGING_TEST)
    assert done.returncode == 0, done.stdout + done.stderr  # the session's own status: it passed
    assert "1 passed" in done.stdout
    assert "did not exit 1 s after the session" in done.stderr
    assert "BLOCKED.wait" in done.stderr or "threading.py" in done.stderr  # the blocked worker's stack


def test_a_failing_session_keeps_its_status(tmp_path):
    done = run_session(tmp_path, HANGING_TEST.replace("assert True", "assert False"))
    assert done.returncode == 1
    assert "1 failed" in done.stdout


def test_a_clean_session_exits_without_the_watchdog(tmp_path):
    done = run_session(tmp_path, "def test_ok():\n    assert True\n")
    assert done.returncode == 0
    assert "watchdog" not in done.stderr
