"""The embedded state backend: one SQLite file, safe for several processes on one machine.

* WAL journal (readers never block the writer), ``synchronous=NORMAL``, and a busy
  timeout of ``StateConfig.connect_timeout_s``: a process waiting for another's
  write waits that long, then gets :class:`StateUnavailableError`.
* Every write is one short ``BEGIN IMMEDIATE`` … ``COMMIT``: the write lock is taken
  at ``BEGIN``, so a claim's check-and-insert (and a rate limit's count-and-insert)
  cannot interleave with another process's — exactly one caller wins.
* One connection per thread (``sqlite3`` connections are not shared between threads).

The store's logic is :class:`bot.state.sql.SQLStore`; this module only connects.
"""
from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bot.state import migrations
from bot.state.sql import SQLStore
from bot.state.store import StateConfig, StateUnavailableError, one_line

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLStore):
    """A :class:`bot.state.store.StateStore` in the SQLite file ``path``.

    Args:
        config: limits and the busy timeout (:class:`StateConfig`).
        path: the database file (its directory is created).

    Attributes:
        applied: the migrations this open applied (``[]`` when the schema was current).

    Raises:
        StateUnavailableError: the file cannot be created, opened or migrated (locked
            past the busy timeout, read-only, not a database).
        StateSchemaError: the file was written by a newer version.
    """

    backend = "sqlite"

    def __init__(self, config: StateConfig, path: Path) -> None:
        self.config = config
        self.path = Path(path)
        self.where = str(self.path)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        if self.path.exists() and not self.path.is_file():
            raise StateUnavailableError(f"the state path {self.path} exists and is not a regular file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateUnavailableError(f"cannot create the state directory {self.path.parent}: "
                                        f"{exc.strerror}") from exc
        with self._errors("open"):
            self.applied = migrations.apply_sqlite(self._conn())

    # -- connections and transactions ----------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StateUnavailableError(f"the state store at {self.path} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.config.connect_timeout_s, isolation_level=None,
                                   check_same_thread=False)
            try:
                conn.execute(f"PRAGMA busy_timeout={int(self.config.connect_timeout_s * 1000)}")
                self._enable_wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error:
                conn.close()
                raise
            with self._lock:
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """``PRAGMA journal_mode=WAL``, retried until the busy timeout.

        Two processes switching a fresh file to WAL at once can deadlock on the
        rollback-journal locks (both hold SHARED, both want EXCLUSIVE); SQLite then
        answers "database is locked" at once, without its busy handler.
        """
        deadline = time.monotonic() + self.config.connect_timeout_s
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(0.005, 0.05))

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StateUnavailableError(f"state store {self.path}: {what} failed: {one_line(exc)}") from exc

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; rolled back on any exception."""
        with self._errors(what):
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _read(self, what: str, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._errors(what):
            return self._conn().execute(sql, params).fetchall()

    # -- lifecycle -------------------------------------------------------------------------------

    def check(self) -> None:
        """See :meth:`bot.state.store.StateStore.check`."""
        self._read("check", "SELECT 1")

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._lock:
            self._closed = True
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover - closing is best effort
                    pass
            self._connections.clear()
        self._local = threading.local()
