"""Open the state store a configuration names: PostgreSQL for a URL, else SQLite.

The caller parses the environment (the store reads none)::

    store = open_store(StateConfig(database_url=os.environ.get("DATABASE_URL"),
                                   path=os.environ.get("STATE_PATH") or index_dir))
    store = open_store("postgresql://bot@db/slackzilla")      # or a URL / a path directly
"""
from __future__ import annotations

from pathlib import Path

from bot.state.store import DEFAULT_STATE_FILENAME, StateConfig, StateStore, is_postgres_url, redact_url

__all__ = ["open_store"]


def open_store(config: StateConfig | str | Path) -> StateStore:
    """Open (creating and migrating as needed) the store ``config`` names.

    ``config`` is a :class:`StateConfig`, a ``postgresql://`` URL, or a SQLite path (a
    file, or a directory to hold ``state.sqlite``). Raises :class:`StateUnavailableError`
    when the backend cannot be reached (one line, no password), :class:`StateSchemaError`
    when it was written by a newer version, ``ValueError`` when neither a URL nor a path
    is given.
    """
    if isinstance(config, (str, Path)):
        config = StateConfig(database_url=str(config)) if is_postgres_url(str(config)) else StateConfig(path=config)
    if config.database_url and is_postgres_url(config.database_url):
        from bot.state.postgres import PostgresStore  # psycopg is loaded only when used

        return PostgresStore(config)
    if config.database_url:
        raise ValueError(f"DATABASE_URL must start with postgresql:// (got {redact_url(config.database_url)})")
    if config.path is None or str(config.path) == "":
        raise ValueError("the SQLite state store needs a path (STATE_PATH, or a directory beside the index)")
    from bot.state.sqlite import SQLiteStore

    path = Path(config.path).expanduser()
    if path.is_dir():
        path = path / DEFAULT_STATE_FILENAME
    return SQLiteStore(config, path)
