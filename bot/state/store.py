"""The state store's interface, record types, configuration and errors.

One :class:`StateStore` holds what the bot must not forget across restarts and
share across replicas (issue 17): conversation turns per thread, delivery
identities (duplicate/retry decisions), rate-limit windows, feedback votes,
reindex run records, answers in flight, settings and leases.

Two backends implement it with the same behaviour:

* :class:`bot.state.sqlite.SQLiteStore` — one file (WAL, busy timeout, short
  ``BEGIN IMMEDIATE`` transactions), safe for several processes on one machine;
* :class:`bot.state.postgres.PostgresStore` — psycopg 3 with a connection pool,
  for several replicas on several machines.

Both are synchronous and thread-safe; the bot calls them from worker threads
(``await asyncio.to_thread(store.claim, identity)``), never on the event loop.

Times are epoch seconds (``time.time()``); every method that reads the clock
takes ``now`` so tests (and callers batching work) can pin it. Durations
(``ttl_s``, ``window_s``) are seconds. Expiry compares the callers' clocks, so
replicas sharing PostgreSQL should run NTP (a skew of a few seconds only shifts
when a claim, lease or rate window ends).

:func:`bot.state.factory.open_store` chooses the backend from a :class:`StateConfig`.

Errors: a backend that cannot be reached (server down, file locked past the
busy timeout, directory missing and not creatable) raises
:class:`StateUnavailableError` with a one-line reason that never carries a
password; a database written by a newer version raises :class:`StateSchemaError`.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_CLAIM_TTL_S",
    "DEFAULT_IN_FLIGHT_TTL_S",
    "DEFAULT_MAX_RUNS",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_STATE_FILENAME",
    "DEFAULT_TURN_TTL_S",
    "InFlightAnswer",
    "KINDS",
    "RateDecision",
    "StateConfig",
    "StateError",
    "StateSchemaError",
    "StateStore",
    "StateUnavailableError",
    "Turn",
    "VOTES",
    "Vote",
    "is_postgres_url",
    "one_line",
    "password_of",
    "redact_url",
]

#: Slack retries an unacknowledged event after ~1 min and ~5 min (three attempts): ten
#: minutes covers the whole schedule with room to spare.
DEFAULT_CLAIM_TTL_S = 600.0
#: Turns kept per thread (a question and an answer are two turns).
DEFAULT_MAX_TURNS = 20
#: A thread's turns expire a week after they were written.
DEFAULT_TURN_TTL_S = 7 * 24 * 3600.0
#: Reindex run records kept per repository.
DEFAULT_MAX_RUNS = 200
#: An answer still "in flight" after a day is stale (its replica is long gone); pruned.
DEFAULT_IN_FLIGHT_TTL_S = 24 * 3600.0
#: The SQLite file's name when the caller gives a directory (beside the index).
DEFAULT_STATE_FILENAME = "state.sqlite"
#: Feedback votes.
VOTES = ("up", "down")
#: Rows of each kind, as :meth:`StateStore.counts` reports them.
KINDS = ("turns", "claims", "rate_hits", "votes", "runs", "in_flight", "settings", "leases", "repo_bindings")


class StateError(Exception):
    """Base class of the state store's errors."""


class StateUnavailableError(StateError):
    """The backend cannot be reached or used right now; ``str(err)`` is one line, no secrets.

    Callers keep working without memory (and say so) and try again later: a store
    whose server returns recovers by itself, nothing needs reopening.
    """


class StateSchemaError(StateError):
    """The database holds a schema this code does not know (written by a newer version)."""


@dataclass(frozen=True, slots=True)
class StateConfig:
    """Where the state lives and its limits (built by the caller from settings/environment).

    Attributes:
        database_url: ``postgresql://user:pass@host:port/db`` selects PostgreSQL; ``None``
            or empty selects SQLite.
        path: the SQLite file, or a directory to hold ``state.sqlite``; required for SQLite.
        replica_id: who this process is (recorded with claims and answers in flight).
        connect_timeout_s: how long to wait for a connection (PostgreSQL) or a lock (SQLite's
            busy timeout) before :class:`StateUnavailableError`.
        pool_min, pool_max: PostgreSQL connection pool size.
        max_turns: turns kept per thread; turn_ttl_s: their lifetime (seconds).
        max_runs: reindex run records kept per repository.
        in_flight_ttl_s: answers in flight older than this are pruned (seconds).
    """

    database_url: str | None = None
    path: Path | str | None = None
    replica_id: str = "local"
    connect_timeout_s: float = 5.0
    pool_min: int = 1
    pool_max: int = 4
    max_turns: int = DEFAULT_MAX_TURNS
    turn_ttl_s: float = DEFAULT_TURN_TTL_S
    max_runs: int = DEFAULT_MAX_RUNS
    in_flight_ttl_s: float = DEFAULT_IN_FLIGHT_TTL_S

    def __repr__(self) -> str:  # never print a password
        url = redact_url(self.database_url) if self.database_url else None
        return f"StateConfig(database_url={url!r}, path={self.path!r}, replica_id={self.replica_id!r})"


@dataclass(frozen=True, slots=True)
class Turn:
    """One conversation turn: ``role`` is ``"user"`` or ``"assistant"``; ``at`` epoch seconds."""

    role: str
    content: str
    at: float

    def to_message(self) -> dict:
        """``{"role", "content"}``, the shape the model client's ``history`` takes."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class RateDecision:
    """``allowed``; when not, ``retry_after_s`` (whole seconds, ≥ 1) until a hit would be."""

    allowed: bool
    retry_after_s: int = 0


@dataclass(frozen=True, slots=True)
class Vote:
    """A user's current feedback vote on one answer.

    ``question_chars`` is the question's length (the text itself is never stored),
    ``sources`` the cited paths, ``model`` the model that answered; ``at`` epoch seconds.
    ``user_id`` ``None`` is an anonymous vote.
    """

    user_id: str | None
    answer_id: str
    vote: str
    at: float
    question_chars: int = 0
    sources: tuple[str, ...] = ()
    model: str | None = None

    def to_json(self) -> dict:
        """A JSON-ready dict (for ``/api/feedback``)."""
        return {"user_id": self.user_id, "answer_id": self.answer_id, "vote": self.vote, "time": self.at,
                "question_chars": self.question_chars, "sources": list(self.sources), "model": self.model}


@dataclass(frozen=True, slots=True)
class InFlightAnswer:
    """An answer being written: where its message is and who writes it.

    ``thread_ts`` is the thread the answer belongs to, ``message_ts`` the message
    being edited (the "Searching…" placeholder); ``started_at`` epoch seconds.
    """

    answer_id: str
    channel: str
    thread_ts: str | None
    message_ts: str | None
    replica_id: str
    started_at: float


@runtime_checkable
class StateStore(Protocol):
    """What both backends offer. All methods are thread-safe and short (one transaction).

    Every method may raise :class:`StateUnavailableError` when the backend cannot be
    reached; nothing is written half (each call is one transaction).
    """

    backend: str
    """``"sqlite"`` or ``"postgresql"``."""
    where: str
    """The file path or the URL without its password (for logs and ``slackzilla state``)."""

    # -- conversation turns ------------------------------------------------------------------
    def append_turns(self, thread_key: str, turns: Sequence[tuple[str, str]], *, now: float | None = None) -> None:
        """Append ``[(role, content), …]`` to the thread (one transaction), keeping the newest
        ``max_turns``. Raises ``ValueError`` for a role other than ``user``/``assistant``."""

    def turns(self, thread_key: str, limit: int | None = None, *, now: float | None = None) -> list[Turn]:
        """The thread's last ``limit`` (default ``max_turns``) unexpired turns, oldest first."""

    # -- delivery identities -----------------------------------------------------------------
    def claim(self, identity: str, ttl_s: float = DEFAULT_CLAIM_TTL_S, *, now: float | None = None) -> bool:
        """Claim a delivery identity for ``ttl_s`` seconds: ``True`` for exactly one caller
        across processes and replicas; ``False`` while an unexpired claim exists."""

    # -- rate limits -------------------------------------------------------------------------
    def hit(self, key: str, limit: int, window_s: float, *, now: float | None = None) -> RateDecision:
        """Count one hit for ``key`` if fewer than ``limit`` were allowed in the last
        ``window_s`` seconds (a sliding-window log shared by every instance). Refused hits
        are not counted; ``limit`` 0 means unlimited. Raises ``ValueError`` for
        ``limit < 0`` or ``window_s <= 0``."""

    # -- feedback ----------------------------------------------------------------------------
    def record_vote(self, *, user_id: str | None, answer_id: str, vote: str, question_chars: int = 0,
                    sources: Sequence[str] = (), model: str | None = None,
                    now: float | None = None) -> str | None:
        """Keep ``vote`` (``up``/``down``) as the user's vote on ``answer_id``; returns the vote
        it replaced (``None`` for a first vote). Raises ``ValueError`` for another vote."""

    def votes(self, *, answer_id: str | None = None, limit: int = 50) -> list[Vote]:
        """Current votes, newest first, optionally for one answer."""

    def vote_counts(self) -> dict[str, int]:
        """``{"up": n, "down": m}`` over every current vote."""

    # -- reindex runs ------------------------------------------------------------------------
    def record_run(self, repo: str, run_id: str, document: Mapping, *, now: float | None = None) -> None:
        """Insert or replace the run ``run_id`` of ``repo`` (a JSON-serialisable mapping), keeping
        the newest ``max_runs`` per repository. Raises ``TypeError`` for a non-JSON document."""

    def runs(self, repo: str | None = None, limit: int = 20) -> list[dict]:
        """The last ``limit`` run documents (of ``repo``, or of all), oldest first."""

    # -- answers in flight -------------------------------------------------------------------
    def begin_answer(self, answer: InFlightAnswer) -> None:
        """Record an answer being written (replacing a record with the same id)."""

    def finish_answer(self, answer_id: str) -> bool:
        """Forget an answer in flight; ``True`` when it was recorded."""

    def unfinished(self, replica_id: str | None = None) -> list[InFlightAnswer]:
        """Answers still in flight (of one replica, or all), oldest first."""

    # -- repository bindings -------------------------------------------------------------------
    def bind_repo(self, scope: str, repo: str | None, *, set_by: str | None = None, ttl_s: float | None = None,
                  now: float | None = None) -> None:
        """Bind ``scope`` (``channel:<id>``, ``thread:<channel>:<ts>``) to the repository ``repo``
        (``None`` removes the binding); ``ttl_s`` makes it expire (``None``: kept until changed)."""

    def bound_repo(self, scope: str, *, now: float | None = None) -> str | None:
        """The repository ``scope`` is bound to, or ``None`` (never bound, removed or expired)."""

    def repo_bindings(self, prefix: str = "", *, now: float | None = None) -> dict[str, str]:
        """Every unexpired binding whose scope starts with ``prefix``: ``{scope: repo}``."""

    # -- settings ----------------------------------------------------------------------------
    def set_setting(self, key: str, value: str | None) -> None:
        """Set ``key`` to ``value``; ``None`` deletes it."""

    def get_setting(self, key: str) -> str | None:
        """The value of ``key``, or ``None``."""

    def settings(self, prefix: str = "") -> dict[str, str]:
        """Every setting whose key starts with ``prefix``."""

    # -- leases ------------------------------------------------------------------------------
    def try_lease(self, name: str, holder: str, ttl_s: float, *, now: float | None = None) -> bool:
        """Take or renew the lease ``name`` for ``ttl_s`` seconds: ``True`` when it was free,
        expired or already ``holder``'s; ``False`` while another holder's lease runs."""

    def lease_holder(self, name: str, *, now: float | None = None) -> tuple[str, float] | None:
        """``(holder, expires_at)`` of an unexpired lease, else ``None``."""

    def release_lease(self, name: str, holder: str) -> bool:
        """Give up ``holder``'s lease early; ``True`` when it held it."""

    # -- housekeeping ------------------------------------------------------------------------
    def prune(self, now: float | None = None) -> dict[str, int]:
        """Delete expired turns, claims, rate hits and leases, stale answers in flight and
        runs beyond ``max_runs``; returns rows deleted per kind."""

    def counts(self) -> dict[str, int]:
        """Rows per kind (:data:`KINDS`), expired ones included until pruned."""

    def describe(self) -> dict:
        """``{"backend", "where", "migrations": [names], "counts": {...}}``."""

    def check(self) -> None:
        """Raise :class:`StateUnavailableError` unless the backend answers now."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""


def is_postgres_url(value: str | None) -> bool:
    """``True`` for ``postgres://…`` and ``postgresql://…`` URLs."""
    return bool(value) and re.match(r"^postgres(ql)?://", value.strip(), re.I) is not None


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (``postgresql://bot:***@db/x``).

    A string that does not parse as a URL is reduced to its scheme, so nothing in it leaks.
    """
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:***@{host}" if ":" in userinfo else f"{user}@{host}"
        query = re.sub(r"(?i)(password=)[^&]*", r"\1***", parts.query)
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return (url.split(":", 1)[0] + "://…") if ":" in url else "…"


def one_line(exc: BaseException | str, *secrets: str | None) -> str:
    """One line (at most 300 characters) of an error message, each of ``secrets`` (and its
    URL-quoted form) replaced by ``***``."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***").replace(quote(secret, safe=""), "***")
    return text[:300]


def password_of(url: str) -> str | None:
    """The password in ``url`` (userinfo or ``?password=``), to scrub from messages; else ``None``."""
    try:
        parts = urlsplit(url)
        found = parts.password
        query = re.search(r"(?i)password=([^&]*)", parts.query)
        found = found or (query.group(1) if query else None)
        return unquote(found) if found else None
    except ValueError:
        return None
