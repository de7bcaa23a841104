"""A pytest plugin: the test process exits even when something it started is still blocked.

At interpreter exit Python joins every non-daemon thread and every ``concurrent.futures``
worker (``threading._register_atexit``), so one call blocked forever in a worker — a socket read
without a timeout, a lock never released — hangs the process after the summary is printed, and CI
waits until its own limit. After the session this plugin starts a daemon thread that, if the
process is still alive ``SZ_EXIT_GRACE_S`` seconds later (default 60), prints every thread's stack
to stderr (:func:`faulthandler.dump_traceback`) and ends the process with the session's exit
status, so the run still reports its real result and the stack says what to fix.
"""
from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time

#: Seconds the process may take to exit after the session (``SZ_EXIT_GRACE_S`` overrides).
DEFAULT_EXIT_GRACE_S = 60.0


def pytest_sessionfinish(session, exitstatus) -> None:
    """Start the exit watchdog thread (see the module docstring)."""
    grace_s = float(os.environ.get("SZ_EXIT_GRACE_S") or DEFAULT_EXIT_GRACE_S)

    def watchdog() -> None:
        time.sleep(grace_s)
        print(f"\nexit watchdog: the test process did not exit {grace_s:g} s after the session; "
              "every thread's stack follows", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(int(exitstatus))

    threading.Thread(target=watchdog, name="sz-exit-watchdog", daemon=True).start()
