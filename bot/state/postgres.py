"""The shared state backend: PostgreSQL through psycopg 3 and its connection pool.

For several replicas on several machines (``DATABASE_URL=postgresql://…``):

* Opening makes one direct connection first (so an unreachable server fails with
  libpq's own one-line reason, never the password), applies the migrations on it
  under ``pg_advisory_xact_lock`` (two replicas starting at once: one migrates,
  the other waits and finds the work done), then opens a
  :class:`psycopg_pool.ConnectionPool` (``StateConfig.pool_min``/``pool_max``
  connections, each checked before use).
* Connections are in autocommit mode; each store call is one ``transaction()``
  (or one statement). Claims and leases are single ``INSERT … ON CONFLICT DO
  UPDATE … WHERE <expired>`` statements; rate limits and votes take a
  transaction-scoped advisory lock on their key.
* Synchronous and thread-safe: the bot calls it from worker threads
  (``asyncio.to_thread``). When the server goes away, calls raise
  :class:`StateUnavailableError` after at most ``connect_timeout_s``; when it comes
  back the pool reconnects by itself (nothing to reopen).

The store's logic is :class:`bot.state.sql.SQLStore`; this module only connects.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from bot.state import migrations
from bot.state.sql import SQLStore
from bot.state.store import StateConfig, StateUnavailableError, one_line, password_of, redact_url

__all__ = ["PostgresStore"]

APPLICATION_NAME = "slackzilla-state"


class PostgresStore(SQLStore):
    """A :class:`bot.state.store.StateStore` in the PostgreSQL database ``config.database_url``.

    Attributes:
        where: the URL without its password.
        applied: the migrations this open applied (``[]`` when the schema was current).

    Raises:
        StateUnavailableError: the server cannot be reached or refuses the login (one line:
            which server, libpq's reason; never the password).
        StateSchemaError: the database was written by a newer version.
    """

    backend = "postgresql"
    placeholder = "%s"

    def __init__(self, config: StateConfig) -> None:
        if not config.database_url:
            raise ValueError("PostgresStore needs StateConfig.database_url")
        self.config = config
        self.where = redact_url(config.database_url)
        self._secret = password_of(config.database_url)
        self._pool: ConnectionPool | None = None
        self._last_connect_error: str | None = None
        url = config.database_url
        connect_kwargs = {"autocommit": True, "connect_timeout": max(1, math.ceil(config.connect_timeout_s)),
                          "application_name": APPLICATION_NAME}
        try:
            with psycopg.connect(url, **connect_kwargs) as conn:
                self.applied = migrations.apply_postgres(conn)
        except psycopg.Error as exc:
            raise self._unavailable("connect", exc) from None
        pool = ConnectionPool(url, min_size=config.pool_min, max_size=max(config.pool_min, config.pool_max),
                              timeout=config.connect_timeout_s, kwargs=connect_kwargs, open=False,
                              connection_class=self._connection_class(),
                              check=ConnectionPool.check_connection, name=APPLICATION_NAME)
        try:
            pool.open(wait=True, timeout=config.connect_timeout_s)
        except psycopg.Error as exc:
            pool.close()
            raise self._unavailable("open the connection pool", exc) from None
        self._pool = pool

    # -- connections and transactions ----------------------------------------------------------

    def _connection_class(self) -> type[psycopg.Connection]:
        """A connection class that remembers why the pool's last connection attempt failed
        (a pool timeout alone says only "couldn't get a connection after 1.00 sec")."""
        store = self

        class _Connection(psycopg.Connection):
            @classmethod
            def connect(cls, *args, **kwargs):
                try:
                    conn = super().connect(*args, **kwargs)
                except psycopg.Error as exc:
                    store._last_connect_error = one_line(exc, store._secret, store.config.database_url)
                    raise
                store._last_connect_error = None
                return conn

        return _Connection

    def _unavailable(self, what: str, exc: BaseException) -> StateUnavailableError:
        reason = one_line(exc, self._secret, self.config.database_url)
        if isinstance(exc, PoolTimeout) and self._last_connect_error:
            reason = f"{reason} (last attempt: {self._last_connect_error})"
        return StateUnavailableError(f"PostgreSQL at {self.where}: {what} failed: {reason}"[:400])

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        if self._pool is None or self._pool.closed:
            raise StateUnavailableError(f"PostgreSQL at {self.where}: the state store is closed")
        try:
            yield
        except psycopg.Error as exc:  # PoolTimeout and PoolClosed are OperationalErrors too
            raise self._unavailable(what, exc) from None

    @contextmanager
    def _write(self, what: str) -> Iterator[psycopg.Connection]:
        """One transaction on a pooled connection; rolled back on any exception."""
        with self._errors(what), self._pool.connection() as conn, conn.transaction():
            yield conn

    def _read(self, what: str, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._errors(what), self._pool.connection() as conn:
            return conn.execute(self._q(sql), params).fetchall()

    def _serialise(self, conn, key: str) -> None:
        """A transaction-scoped advisory lock on ``key`` (64-bit hash), released at commit."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))

    # -- lifecycle -------------------------------------------------------------------------------

    def check(self) -> None:
        """See :meth:`bot.state.store.StateStore.check`."""
        self._read("check", "SELECT 1")

    def close(self) -> None:
        """Close the pool (waits for connections in use to come back)."""
        if self._pool is not None:
            self._pool.close()
