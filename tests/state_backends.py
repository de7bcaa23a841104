"""The two state-store backends for tests: a SQLite file, or a fresh database on the real PostgreSQL.

``ADMIN_URL`` is the server (``SLACKZILLA_TEST_DATABASE_URL``, default the project machines'
127.0.0.1:5432 ``test`` database). A test that needs it and cannot reach it skips with the reason
(:func:`require_postgres`), never silently.
"""
from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest

from bot.state import StateConfig, StateStore, open_store, redact_url

__all__ = ["ADMIN_URL", "StoreTarget", "drop_database", "fresh_database", "postgres_reachable",
           "require_postgres", "with_database"]

ADMIN_URL = os.environ.get("SLACKZILLA_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")

_pg_probe: tuple[bool, str] | None = None


def postgres_reachable() -> tuple[bool, str]:
    """``(True, "")`` when ``ADMIN_URL`` answers, else ``(False, reason)``; probed once per process."""
    global _pg_probe
    if _pg_probe is None:
        try:
            import psycopg

            with psycopg.connect(ADMIN_URL, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            _pg_probe = (True, "")
        except Exception as exc:  # noqa: BLE001 - any failure means "skip, and say why"
            _pg_probe = (False, " ".join(str(exc).split())[:200] or type(exc).__name__)
    return _pg_probe


def require_postgres() -> None:
    """Skip the calling test, with the reason, when PostgreSQL is not reachable."""
    ok, reason = postgres_reachable()
    if not ok:
        pytest.skip(f"PostgreSQL not reachable at {redact_url(ADMIN_URL)}: {reason}")


def with_database(url: str, name: str, *, netloc: str | None = None) -> str:
    """``url`` pointing at database ``name`` (and at ``netloc`` when given)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, netloc or parts.netloc, "/" + name, parts.query, ""))


def fresh_database(prefix: str = "slz_test") -> str:
    """Create an empty database on the server; returns its name (drop it with :func:`drop_database`)."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class StoreTarget:
    """Where one test's stores live: ``env`` points an app at it, :meth:`open` opens one directly
    (every opened store is closed by :meth:`close_all` at teardown)."""

    def __init__(self, kind: str, location: str) -> None:
        self.kind = kind
        self.location = location  # a SQLite file path or a PostgreSQL URL
        self._opened: list[StateStore] = []

    @property
    def env(self) -> dict:
        return {"DATABASE_URL": self.location} if self.kind == "postgresql" else {"STATE_PATH": self.location}

    def config(self, **overrides) -> StateConfig:
        if self.kind == "postgresql":
            return StateConfig(database_url=self.location, **overrides)
        return StateConfig(path=self.location, **overrides)

    def open(self, **overrides) -> StateStore:
        store = open_store(self.config(**overrides))
        self._opened.append(store)
        return store

    def close_all(self) -> None:
        for store in self._opened:
            store.close()
