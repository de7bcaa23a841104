"""The store's logic, written once in the SQL both backends speak.

:class:`SQLStore` implements every :class:`bot.state.store.StateStore` method on
top of four hooks a backend provides: a write transaction (:meth:`_write`), a
read (:meth:`_read`), a per-key serialisation inside a write (:meth:`_serialise`:
nothing for SQLite, whose ``BEGIN IMMEDIATE`` already serialises every writer; a
``pg_advisory_xact_lock`` for PostgreSQL) and the placeholder style (``?`` is
written here; PostgreSQL turns it into ``%s``).

Atomicity of the decisions that must have exactly one winner:

* ``claim`` and ``try_lease`` are one ``INSERT … ON CONFLICT DO UPDATE … WHERE
  <expired>`` statement: a row is inserted, or an expired row taken over, or
  nothing happens (``rowcount`` 0). PostgreSQL's ``ON CONFLICT`` locks the
  conflicting row, so concurrent callers see the winner's row; SQLite runs it
  under ``BEGIN IMMEDIATE``.
* ``hit`` (count then insert) and ``record_vote`` (read the old vote then
  write) serialise per key, so two replicas cannot both pass a full window.
"""
from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager

from bot.state.store import (
    DEFAULT_CLAIM_TTL_S,
    KINDS,
    VOTES,
    InFlightAnswer,
    RateDecision,
    StateConfig,
    Turn,
    Vote,
)

__all__ = ["ROLES", "RATE_HIT_HORIZON_S", "SQLStore"]

ROLES = ("user", "assistant")
#: ``prune`` drops rate hits older than this (seconds; no window the bot uses is longer).
RATE_HIT_HORIZON_S = 3600.0


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def _retry_after(oldest: float, window_s: float, now: float) -> int:
    """Whole seconds (≥ 1) until the oldest counted hit leaves the window."""
    return max(1, int(-(-(oldest + window_s - now) // 1)))


class SQLStore:
    """The shared implementation; subclasses provide the connection hooks.

    Subclasses set ``backend``, ``where`` and ``config`` and implement :meth:`_write`,
    :meth:`_read`, :meth:`_serialise`, :meth:`check` and :meth:`close`.
    """

    backend: str
    where: str
    config: StateConfig
    placeholder = "?"

    # -- hooks -----------------------------------------------------------------------------------

    def _write(self, what: str) -> AbstractContextManager:  # pragma: no cover - abstract
        """A write transaction yielding a connection (``.execute(sql, params)`` → cursor)."""
        raise NotImplementedError

    def _read(self, what: str, sql: str, params: Sequence = ()) -> list[tuple]:  # pragma: no cover - abstract
        """Rows of one query (its own short transaction)."""
        raise NotImplementedError

    def _serialise(self, conn, key: str) -> None:
        """Inside a write: wait until no other transaction holds ``key``."""

    def _q(self, sql: str) -> str:
        """``sql`` in the backend's placeholder style."""
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _x(self, conn, sql: str, params: Sequence = ()):
        """Run one statement on ``conn`` (inside :meth:`_write`); returns the cursor."""
        return conn.execute(self._q(sql), params)

    # -- conversation turns ----------------------------------------------------------------------

    def append_turns(self, thread_key: str, turns: Sequence[tuple[str, str]], *, now: float | None = None) -> None:
        """See :meth:`bot.state.store.StateStore.append_turns`."""
        now = _now(now)
        rows = [(thread_key, role, content, now, now + self.config.turn_ttl_s) for role, content in turns]
        if any(row[1] not in ROLES for row in rows):
            raise ValueError(f"a turn's role is one of {ROLES}")
        if not rows:
            return
        with self._write("append turns") as conn:
            for row in rows:
                self._x(conn, "INSERT INTO turns (thread_key, role, content, at, expires_at) VALUES (?, ?, ?, ?, ?)",
                        row)
            self._x(conn, "DELETE FROM turns WHERE thread_key = ? AND id NOT IN "
                          "(SELECT id FROM turns WHERE thread_key = ? ORDER BY id DESC LIMIT ?)",
                    (thread_key, thread_key, self.config.max_turns))

    def turns(self, thread_key: str, limit: int | None = None, *, now: float | None = None) -> list[Turn]:
        """See :meth:`bot.state.store.StateStore.turns`."""
        limit = self.config.max_turns if limit is None else limit
        rows = self._read("read turns", "SELECT role, content, at FROM turns WHERE thread_key = ? AND expires_at > ? "
                          "ORDER BY id DESC LIMIT ?", (thread_key, _now(now), max(0, limit)))
        return [Turn(role, content, at) for role, content, at in reversed(rows)]

    # -- delivery identities ---------------------------------------------------------------------

    def claim(self, identity: str, ttl_s: float = DEFAULT_CLAIM_TTL_S, *, now: float | None = None) -> bool:
        """See :meth:`bot.state.store.StateStore.claim`. Raises ``ValueError`` for ``ttl_s <= 0``."""
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be > 0, got {ttl_s}")
        now = _now(now)
        with self._write("claim") as conn:
            cur = self._x(conn, "INSERT INTO claims VALUES (?, ?, ?, ?) ON CONFLICT (identity) DO UPDATE SET "
                                "claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at, "
                                "expires_at = excluded.expires_at WHERE claims.expires_at <= excluded.claimed_at",
                          (identity, self.config.replica_id, now, now + ttl_s))
            return cur.rowcount == 1

    # -- rate limits -----------------------------------------------------------------------------

    def hit(self, key: str, limit: int, window_s: float, *, now: float | None = None) -> RateDecision:
        """See :meth:`bot.state.store.StateStore.hit`."""
        if limit < 0 or window_s <= 0:
            raise ValueError(f"limit must be >= 0 and window_s > 0, got {limit} and {window_s}")
        if limit == 0:
            return RateDecision(True)
        now = _now(now)
        with self._write("rate limit") as conn:
            self._serialise(conn, json.dumps(["rate", key]))
            self._x(conn, "DELETE FROM rate_hits WHERE key = ? AND at <= ?", (key, now - window_s))
            count, oldest = self._x(conn, "SELECT COUNT(*), MIN(at) FROM rate_hits WHERE key = ?", (key,)).fetchone()
            if count >= limit:
                return RateDecision(False, _retry_after(oldest, window_s, now))
            self._x(conn, "INSERT INTO rate_hits (key, at) VALUES (?, ?)", (key, now))
            return RateDecision(True)

    # -- feedback --------------------------------------------------------------------------------

    def record_vote(self, *, user_id: str | None, answer_id: str, vote: str, question_chars: int = 0,
                    sources: Sequence[str] = (), model: str | None = None,
                    now: float | None = None) -> str | None:
        """See :meth:`bot.state.store.StateStore.record_vote`."""
        if vote not in VOTES:
            raise ValueError(f"vote is one of {VOTES}, got {vote!r}")
        if isinstance(sources, str):
            raise TypeError("sources is a sequence of paths, not one string")
        row = (user_id or "", answer_id, vote, _now(now), int(question_chars), json.dumps(list(sources)), model)
        with self._write("record vote") as conn:
            self._serialise(conn, json.dumps(["vote", row[0], answer_id]))
            old = self._x(conn, "SELECT vote FROM votes WHERE user_id = ? AND answer_id = ?", row[:2]).fetchone()
            self._x(conn, "INSERT INTO votes VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, answer_id) DO UPDATE "
                          "SET vote = excluded.vote, at = excluded.at, question_chars = excluded.question_chars, "
                          "sources = excluded.sources, model = excluded.model", row)
        return old[0] if old else None

    def votes(self, *, answer_id: str | None = None, limit: int = 50) -> list[Vote]:
        """See :meth:`bot.state.store.StateStore.votes`."""
        where, params = ("WHERE answer_id = ?", [answer_id]) if answer_id is not None else ("", [])
        rows = self._read("read votes", f"SELECT user_id, answer_id, vote, at, question_chars, sources, model "
                          f"FROM votes {where} ORDER BY at DESC, answer_id DESC, user_id DESC LIMIT ?",
                          [*params, max(0, limit)])
        return [Vote(u or None, a, v, at, q, tuple(json.loads(s)), m) for u, a, v, at, q, s, m in rows]

    def vote_counts(self) -> dict[str, int]:
        """See :meth:`bot.state.store.StateStore.vote_counts`."""
        counts = {vote: 0 for vote in VOTES}
        counts.update({v: int(n) for v, n in self._read("count votes", "SELECT vote, COUNT(*) FROM votes GROUP BY vote")})
        return counts

    # -- reindex runs ----------------------------------------------------------------------------

    def record_run(self, repo: str, run_id: str, document: Mapping, *, now: float | None = None) -> None:
        """See :meth:`bot.state.store.StateStore.record_run`."""
        text = json.dumps(dict(document), sort_keys=True)
        with self._write("record run") as conn:
            self._x(conn, "INSERT INTO runs (repo, run_id, recorded_at, document) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (repo, run_id) DO UPDATE SET document = excluded.document, "
                          "recorded_at = excluded.recorded_at", (repo, run_id, _now(now), text))
            self._x(conn, "DELETE FROM runs WHERE repo = ? AND seq NOT IN "
                          "(SELECT seq FROM runs WHERE repo = ? ORDER BY seq DESC LIMIT ?)",
                    (repo, repo, self.config.max_runs))

    def runs(self, repo: str | None = None, limit: int = 20) -> list[dict]:
        """See :meth:`bot.state.store.StateStore.runs`."""
        where, params = ("WHERE repo = ?", [repo]) if repo is not None else ("", [])
        rows = self._read("read runs", f"SELECT document FROM runs {where} ORDER BY seq DESC LIMIT ?",
                          [*params, max(0, limit)])
        return [json.loads(doc) for (doc,) in reversed(rows)]

    # -- answers in flight -----------------------------------------------------------------------

    def begin_answer(self, answer: InFlightAnswer) -> None:
        """See :meth:`bot.state.store.StateStore.begin_answer`."""
        with self._write("begin answer") as conn:
            self._x(conn, "INSERT INTO in_flight VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (answer_id) DO UPDATE SET "
                          "channel = excluded.channel, thread_ts = excluded.thread_ts, "
                          "message_ts = excluded.message_ts, replica_id = excluded.replica_id, "
                          "started_at = excluded.started_at",
                    (answer.answer_id, answer.channel, answer.thread_ts, answer.message_ts, answer.replica_id,
                     float(answer.started_at)))

    def finish_answer(self, answer_id: str) -> bool:
        """See :meth:`bot.state.store.StateStore.finish_answer`."""
        with self._write("finish answer") as conn:
            return self._x(conn, "DELETE FROM in_flight WHERE answer_id = ?", (answer_id,)).rowcount == 1

    def unfinished(self, replica_id: str | None = None) -> list[InFlightAnswer]:
        """See :meth:`bot.state.store.StateStore.unfinished`."""
        where, params = ("WHERE replica_id = ?", [replica_id]) if replica_id is not None else ("", [])
        rows = self._read("read answers in flight", f"SELECT answer_id, channel, thread_ts, message_ts, replica_id, "
                          f"started_at FROM in_flight {where} ORDER BY started_at, answer_id", params)
        return [InFlightAnswer(*row) for row in rows]

    # -- repository bindings ---------------------------------------------------------------------

    def bind_repo(self, scope: str, repo: str | None, *, set_by: str | None = None, ttl_s: float | None = None,
                  now: float | None = None) -> None:
        """See :meth:`bot.state.store.StateStore.bind_repo`. Raises ``ValueError`` for ``ttl_s <= 0``."""
        if ttl_s is not None and ttl_s <= 0:
            raise ValueError(f"ttl_s must be > 0, got {ttl_s}")
        now = _now(now)
        with self._write("bind repository") as conn:
            if repo is None:
                self._x(conn, "DELETE FROM repo_bindings WHERE scope = ?", (scope,))
                return
            self._x(conn, "INSERT INTO repo_bindings VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET "
                          "repo = excluded.repo, set_by = excluded.set_by, set_at = excluded.set_at, "
                          "expires_at = excluded.expires_at",
                    (scope, repo, set_by, now, now + ttl_s if ttl_s is not None else None))

    def bound_repo(self, scope: str, *, now: float | None = None) -> str | None:
        """See :meth:`bot.state.store.StateStore.bound_repo`."""
        rows = self._read("read repository binding", "SELECT repo FROM repo_bindings WHERE scope = ? AND "
                          "(expires_at IS NULL OR expires_at > ?)", (scope, _now(now)))
        return rows[0][0] if rows else None

    def repo_bindings(self, prefix: str = "", *, now: float | None = None) -> dict[str, str]:
        """See :meth:`bot.state.store.StateStore.repo_bindings`."""
        rows = self._read("read repository bindings", "SELECT scope, repo FROM repo_bindings WHERE "
                          "(expires_at IS NULL OR expires_at > ?) ORDER BY scope", (_now(now),))
        return {scope: repo for scope, repo in rows if scope.startswith(prefix)}

    # -- settings --------------------------------------------------------------------------------

    def set_setting(self, key: str, value: str | None) -> None:
        """See :meth:`bot.state.store.StateStore.set_setting`."""
        with self._write("set setting") as conn:
            if value is None:
                self._x(conn, "DELETE FROM settings WHERE key = ?", (key,))
            else:
                self._x(conn, "INSERT INTO settings VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                              "value = excluded.value, updated_at = excluded.updated_at", (key, str(value), time.time()))

    def get_setting(self, key: str) -> str | None:
        """See :meth:`bot.state.store.StateStore.get_setting`."""
        rows = self._read("read setting", "SELECT value FROM settings WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def settings(self, prefix: str = "") -> dict[str, str]:
        """See :meth:`bot.state.store.StateStore.settings`."""
        rows = self._read("read settings", "SELECT key, value FROM settings ORDER BY key")
        return {k: v for k, v in rows if k.startswith(prefix)}

    # -- leases ----------------------------------------------------------------------------------

    def try_lease(self, name: str, holder: str, ttl_s: float, *, now: float | None = None) -> bool:
        """See :meth:`bot.state.store.StateStore.try_lease`. Raises ``ValueError`` for ``ttl_s <= 0``."""
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be > 0, got {ttl_s}")
        now = _now(now)
        with self._write("lease") as conn:
            cur = self._x(conn, "INSERT INTO leases VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                                "holder = excluded.holder, acquired_at = CASE WHEN leases.holder = excluded.holder "
                                "THEN leases.acquired_at ELSE excluded.acquired_at END, "
                                "expires_at = excluded.expires_at "
                                "WHERE leases.expires_at <= excluded.acquired_at OR leases.holder = excluded.holder",
                          (name, holder, now, now + ttl_s))
            return cur.rowcount == 1

    def lease_holder(self, name: str, *, now: float | None = None) -> tuple[str, float] | None:
        """See :meth:`bot.state.store.StateStore.lease_holder`."""
        rows = self._read("read lease", "SELECT holder, expires_at FROM leases WHERE name = ? AND expires_at > ?",
                          (name, _now(now)))
        return (rows[0][0], float(rows[0][1])) if rows else None

    def release_lease(self, name: str, holder: str) -> bool:
        """See :meth:`bot.state.store.StateStore.release_lease`."""
        with self._write("release lease") as conn:
            return self._x(conn, "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder)).rowcount == 1

    # -- housekeeping ----------------------------------------------------------------------------

    def prune(self, now: float | None = None) -> dict[str, int]:
        """See :meth:`bot.state.store.StateStore.prune` (rate hits older than
        :data:`RATE_HIT_HORIZON_S` go too)."""
        now = _now(now)
        out = {kind: 0 for kind in KINDS}
        with self._write("prune") as conn:
            out["turns"] = self._x(conn, "DELETE FROM turns WHERE expires_at <= ?", (now,)).rowcount
            out["claims"] = self._x(conn, "DELETE FROM claims WHERE expires_at <= ?", (now,)).rowcount
            out["rate_hits"] = self._x(conn, "DELETE FROM rate_hits WHERE at <= ?",
                                       (now - RATE_HIT_HORIZON_S,)).rowcount
            out["leases"] = self._x(conn, "DELETE FROM leases WHERE expires_at <= ?", (now,)).rowcount
            out["repo_bindings"] = self._x(conn, "DELETE FROM repo_bindings WHERE expires_at <= ?",
                                           (now,)).rowcount
            out["in_flight"] = self._x(conn, "DELETE FROM in_flight WHERE started_at <= ?",
                                       (now - self.config.in_flight_ttl_s,)).rowcount
            out["runs"] = self._x(conn, "DELETE FROM runs WHERE seq IN (SELECT seq FROM (SELECT seq, ROW_NUMBER() "
                                        "OVER (PARTITION BY repo ORDER BY seq DESC) AS n FROM runs) AS ranked "
                                        "WHERE n > ?)", (self.config.max_runs,)).rowcount
        return out

    def counts(self) -> dict[str, int]:
        """See :meth:`bot.state.store.StateStore.counts`."""
        sql = " UNION ALL ".join(f"SELECT '{kind}', COUNT(*) FROM {kind}" for kind in KINDS)
        return {kind: int(n) for kind, n in self._read("count", sql)}

    def describe(self) -> dict:
        """See :meth:`bot.state.store.StateStore.describe`."""
        names = [n for (n,) in self._read("describe", "SELECT name FROM schema_migrations ORDER BY name")]
        return {"backend": self.backend, "where": self.where, "migrations": names, "counts": self.counts()}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
