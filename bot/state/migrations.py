"""The state store's schema: ordered, named migrations for SQLite and PostgreSQL.

As in :mod:`rag.store.index`: each migration is a function registered with
:func:`migration` in definition order; its name is recorded in
``schema_migrations(name, applied_at)`` when applied, inside the same
transaction as its DDL, so a migration is applied wholly or not at all. Each
function returns DDL written once for both dialects, with ``{real}`` (a float
column) and ``{serial}`` (an auto-increment primary key) filled in per dialect.

Layout::

    schema_migrations(name, applied_at)
    turns(id, thread_key, role, content, at, expires_at)          conversation turns
    claims(identity, claimed_by, claimed_at, expires_at)           delivery identities
    rate_hits(id, key, at)                                         sliding-window rate log
    votes(user_id, answer_id, vote, at, question_chars, sources, model)
    runs(seq, repo, run_id, recorded_at, document)                 reindex run records (JSON)
    in_flight(answer_id, channel, thread_ts, message_ts, replica_id, started_at)
    settings(key, value, updated_at)
    leases(name, holder, acquired_at, expires_at)
    repo_bindings(scope, repo, set_by, set_at, expires_at)        channel/thread → repository

Concurrency: SQLite applies migrations under ``BEGIN IMMEDIATE`` (one writer at a
time across processes); PostgreSQL under ``pg_advisory_xact_lock(MIGRATION_LOCK)``
taken before anything else in the transaction, so two replicas starting at once
apply each migration once and the second sees it done.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.state.store import StateSchemaError

__all__ = ["MIGRATIONS", "MIGRATION_LOCK", "Dialect", "POSTGRES", "SQLITE", "apply_postgres", "apply_sqlite",
           "migration", "statements"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """Column types that differ between the backends."""

    name: str
    real: str
    serial: str


SQLITE = Dialect("sqlite", real="REAL", serial="INTEGER PRIMARY KEY")
POSTGRES = Dialect("postgresql", real="DOUBLE PRECISION", serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY")

#: The advisory lock key PostgreSQL migrations run under (any constant; "SZstate1").
MIGRATION_LOCK = 0x535A7374617465

Migration = Callable[[Dialect], str]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next schema migration (applied in definition order)."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def statements(fn: Migration, dialect: Dialect) -> list[str]:
    """The ``;``-separated statements of ``fn`` for ``dialect``."""
    sql = fn(dialect).format(real=dialect.real, serial=dialect.serial)
    return [s.strip() for s in sql.split(";") if s.strip()]


@migration
def m001_initial(d: Dialect) -> str:
    return """
        CREATE TABLE turns (
            id {serial}, thread_key TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
            at {real} NOT NULL, expires_at {real} NOT NULL
        );
        CREATE INDEX turns_thread ON turns (thread_key, id);
        CREATE INDEX turns_expiry ON turns (expires_at);
        CREATE TABLE claims (
            identity TEXT PRIMARY KEY, claimed_by TEXT NOT NULL, claimed_at {real} NOT NULL,
            expires_at {real} NOT NULL
        );
        CREATE INDEX claims_expiry ON claims (expires_at);
        CREATE TABLE rate_hits (id {serial}, key TEXT NOT NULL, at {real} NOT NULL);
        CREATE INDEX rate_hits_key ON rate_hits (key, at);
        CREATE INDEX rate_hits_at ON rate_hits (at);
        CREATE TABLE votes (
            user_id TEXT NOT NULL, answer_id TEXT NOT NULL, vote TEXT NOT NULL, at {real} NOT NULL,
            question_chars INTEGER NOT NULL DEFAULT 0, sources TEXT NOT NULL DEFAULT '[]', model TEXT,
            PRIMARY KEY (user_id, answer_id)
        );
        CREATE INDEX votes_answer ON votes (answer_id);
        CREATE INDEX votes_at ON votes (at);
        CREATE TABLE runs (
            seq {serial}, repo TEXT NOT NULL, run_id TEXT NOT NULL, recorded_at {real} NOT NULL,
            document TEXT NOT NULL, UNIQUE (repo, run_id)
        );
        CREATE TABLE in_flight (
            answer_id TEXT PRIMARY KEY, channel TEXT NOT NULL, thread_ts TEXT, message_ts TEXT,
            replica_id TEXT NOT NULL, started_at {real} NOT NULL
        );
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at {real} NOT NULL);
        CREATE TABLE leases (
            name TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired_at {real} NOT NULL, expires_at {real} NOT NULL
        )
    """


@migration
def m002_repo_bindings(d: Dialect) -> str:
    """Which repository a channel (``channel:<id>``) or a thread (``thread:<channel>:<ts>``) asks about;
    ``expires_at`` is NULL for bindings kept until changed (channels)."""
    return """
        CREATE TABLE repo_bindings (
            scope TEXT PRIMARY KEY, repo TEXT NOT NULL, set_by TEXT, set_at {real} NOT NULL, expires_at {real}
        );
        CREATE INDEX repo_bindings_expiry ON repo_bindings (expires_at)
    """


def _check_known(done: set[str]) -> None:
    unknown = done - {name for name, _ in MIGRATIONS}
    if unknown:
        raise StateSchemaError(f"the state database was written by a newer version (migrations {sorted(unknown)}); "
                               "upgrade this replica")


def apply_sqlite(conn) -> list[str]:
    """Apply the pending migrations on ``conn`` (a ``sqlite3`` connection in autocommit mode).

    One ``BEGIN IMMEDIATE`` transaction; returns the names applied now (``[]`` when the
    schema is current). Raises :class:`StateSchemaError` for a newer schema and lets
    ``sqlite3.Error`` through (the caller turns it into ``StateUnavailableError``).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
                     f"applied_at {SQLITE.real} NOT NULL)")
        done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
        _check_known(done)
        applied = []
        for name, fn in MIGRATIONS:
            if name not in done:
                for statement in statements(fn, SQLITE):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))
                applied.append(name)
        conn.execute("COMMIT")
        return applied
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def apply_postgres(conn) -> list[str]:
    """Apply the pending migrations on ``conn`` (a psycopg 3 connection) in one transaction
    under ``pg_advisory_xact_lock(MIGRATION_LOCK)``.

    Returns the names applied now. Raises :class:`StateSchemaError` for a newer schema and
    lets ``psycopg.Error`` through.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(f"CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
                     f"applied_at {POSTGRES.real} NOT NULL)")
        done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations").fetchall()}
        _check_known(done)
        applied = []
        for name, fn in MIGRATIONS:
            if name not in done:
                for statement in statements(fn, POSTGRES):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (name, time.time()))
                applied.append(name)
        return applied
