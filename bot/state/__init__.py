"""Durable, shared bot state (issue 17): SQLite by default, PostgreSQL for several replicas.

``open_store(StateConfig(...))`` (or a URL / a path) returns a
:class:`~bot.state.store.StateStore`; see :mod:`bot.state.store` for what it holds,
:mod:`bot.state.sqlite` and :mod:`bot.state.postgres` for the backends and
:mod:`bot.state.migrations` for the schema. psycopg is imported only when a
PostgreSQL URL is opened. The bot holds its store through
:class:`bot.state.resilient.ResilientState` (fallbacks, failure counting, catch-up).
"""
from __future__ import annotations

from bot.state.factory import open_store
from bot.state.store import (
    DEFAULT_CLAIM_TTL_S,
    InFlightAnswer,
    RateDecision,
    StateConfig,
    StateError,
    StateSchemaError,
    StateStore,
    StateUnavailableError,
    Turn,
    Vote,
    redact_url,
)

__all__ = [
    "DEFAULT_CLAIM_TTL_S",
    "InFlightAnswer",
    "RateDecision",
    "StateConfig",
    "StateError",
    "StateSchemaError",
    "StateStore",
    "StateUnavailableError",
    "Turn",
    "Vote",
    "open_store",
    "redact_url",
]
