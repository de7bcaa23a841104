"""Bot settings: read once from the environment (and an optional ``.env``), validated at start-up.

The variables and defaults are the contract in DESIGN.md section 5. Every missing
or malformed value becomes one line of a single :class:`SettingsError`, so an
operator fixes all of them in one go instead of one restart per mistake.

Secrets (``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``, ``SLACK_APP_TOKEN``,
``AI_API_KEY``, ``ADMIN_API_TOKEN``, ``EMBEDDINGS_API_KEY``, ``RERANK_API_KEY``) never appear in
``repr()``, in logs or in error messages: only whether they are set.

``.env`` values are read with ``dotenv_values`` and merged under the real
environment (the environment wins); they are never written into ``os.environ``,
so a ``SLACK_CLIENT_ID`` in a ``.env`` cannot switch Bolt to its OAuth mode.
A ``.env`` that lies inside the repository being indexed is the repository's own file,
not the operator's: it is not read (a cloned repository could otherwise point
``AI_URL`` or ``SLACK_API_URL`` at a host of its choosing and receive the bot's tokens).
``SLACKZILLA_ENV_FILE`` names a file to read whatever its place.

The engine's variables (``REPO_PATH``, ``RAG_INDEX_PATH``, ``AI_*``, ``EMBEDDINGS*``,
``RERANK_*``) are parsed by :mod:`rag.config` in the same pass (one problem list) and
held as ``settings.engine`` (an :class:`rag.config.EngineConfig`); nothing turns them
back into strings.

Example::

    settings = Settings.from_env()                       # os.environ + ./.env
    settings = Settings.from_env({"SLACK_BOT_TOKEN": "xoxb-…", "SLACK_SIGNING_SECRET": "…"},
                                 dotenv_path=None)
"""
from __future__ import annotations

import logging
import os
import re
import socket
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable, Mapping

from dotenv import dotenv_values

from bot.config_file import (DEFAULT_CONFIG_FILE, DocumentsConfig, RepoConfig, find_config_file, read_config_file,
                             resolve_github, single_repository)
from bot.state.store import DEFAULT_STATE_FILENAME, StateConfig, is_postgres_url, redact_url
from rag.config import (ConfigError, EngineConfig, EnvReader, http_url, int_range, positive_seconds,
                        read_engine_config)

__all__ = ["Settings", "SettingsError", "read_environment", "DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_DOTENV", "ENV_FILE_VARIABLE"]

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000
DEFAULT_REINDEX_INTERVAL_S = 300
DEFAULT_REINDEX_TIMEOUT_S = 1800.0
"""``REINDEX_TIMEOUT_S``: one update past this stops, writes nothing and is recorded as failed."""
DEFAULT_ASK_RATE_PER_MIN = 6
#: Seconds to wait for the state store (PostgreSQL connection, SQLite lock) before going on without it.
DEFAULT_STATE_TIMEOUT_S = 2.0
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
DEFAULT_DOTENV = ".env"
ENV_FILE_VARIABLE = "SLACKZILLA_ENV_FILE"
"""Names a ``.env``-style file to read explicitly (wherever it is, even inside the repository)."""
#: ``SLACK_UNREACHABLE_EXIT_S``: a bot that cannot reach Slack this long exits non-zero (its supervisor
#: restarts it); five minutes rides out a short Slack or network incident without a restart loop.
DEFAULT_SLACK_UNREACHABLE_EXIT_S = 300.0
#: Shortest accepted ``ADMIN_API_TOKEN``: 16 characters keeps a guessable word out.
MIN_ADMIN_API_TOKEN_LENGTH = 16

_SECRET_FIELDS = frozenset({"slack_bot_token", "slack_signing_secret", "slack_app_token", "admin_api_token"})
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_REPLICA_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(ConfigError):
    """The configuration is invalid; ``problems`` lists one sentence per bad variable.

    ``str(err)`` is a multi-line message meant for the operator, with no secret values.
    A :class:`rag.config.ConfigError` (hence a ``UserError``).
    """


@dataclass(frozen=True)
class Settings:
    """Validated configuration of one bot process (see DESIGN.md section 5).

    Attributes mirror the Slack/HTTP/admin variables: ``slack_bot_token`` is
    ``SLACK_BOT_TOKEN`` and so on. Times are seconds; ``admin_user_ids`` is a frozenset
    of Slack user ids; ``public_hosts`` (``PUBLIC_HOSTS``) a frozenset of lower-case host
    names or IP addresses without port; ``slack_unreachable_exit_s`` 0 means never exit;
    ``slack_api_url`` always ends with ``/`` (what ``AsyncWebClient(base_url=)`` expects). ``engine`` holds the engine's own variables
    (``REPO_PATH``, ``RAG_INDEX_PATH``, ``AI_*``, ``EMBEDDINGS*``, ``RERANK_*``) as parsed
    by :mod:`rag.config`: ``engine.model``, ``engine.embeddings``, ``engine.rerank``.
    """

    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    repo_web_url: str | None = None
    reindex_interval_s: int = DEFAULT_REINDEX_INTERVAL_S
    reindex_timeout_s: float = DEFAULT_REINDEX_TIMEOUT_S
    repo_git_pull: bool = False
    admin_user_ids: frozenset[str] = frozenset()
    admin_api_token: str | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL
    ask_rate_per_min: int = DEFAULT_ASK_RATE_PER_MIN
    database_url: str | None = None
    state_path: Path | None = None
    replica_id: str = field(default_factory=lambda: default_replica_id())
    state_timeout_s: float = DEFAULT_STATE_TIMEOUT_S
    slack_unreachable_exit_s: float = DEFAULT_SLACK_UNREACHABLE_EXIT_S
    public_hosts: frozenset[str] = frozenset()
    engine: EngineConfig = field(default_factory=EngineConfig)
    repositories: tuple[RepoConfig, ...] = ()
    documents: DocumentsConfig = field(default_factory=DocumentsConfig)
    config_path: Path | None = None

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS:
                shown = "'***'" if value else "None"
            elif f.name == "database_url":
                shown = repr(redact_url(value)) if value else "None"
            else:
                shown = repr(value)  # the engine's records mask their keys themselves
            parts.append(f"{f.name}={shown}")
        return f"Settings({', '.join(parts)})"

    __str__ = __repr__

    @property
    def repo_path(self) -> Path:
        """The repository root (``REPO_PATH``, resolved; default the current directory): ``engine.repo``."""
        return self.engine.repo

    @property
    def rag_index_path(self) -> Path | None:
        """The index file (``RAG_INDEX_PATH``), or ``None`` for the default: ``engine.index_path``."""
        return self.engine.index_path

    @property
    def repository_configs(self) -> tuple[RepoConfig, ...]:
        """The repositories to serve (``slackzilla.toml``, else the one ``REPO_PATH`` names), default first
        marked (:mod:`bot.config_file`)."""
        if self.repositories:
            return self.repositories
        return (single_repository(self.engine, web_url=self.repo_web_url, git_pull=self.repo_git_pull,
                                  reindex_interval_s=self.reindex_interval_s),)

    @property
    def socket_mode(self) -> bool:
        """True when ``SLACK_APP_TOKEN`` is set: Socket Mode instead of HTTP."""
        return bool(self.slack_app_token)

    def state_config(self, index_path: Path | str | None = None) -> StateConfig:
        """Where the bot's state lives: ``DATABASE_URL`` (PostgreSQL), else ``STATE_PATH``, else
        ``state.sqlite`` beside ``index_path`` (the opened index's file)."""
        path = self.state_path
        if path is None and not self.database_url:
            base = Path(index_path) if index_path is not None else (self.rag_index_path or Path("index.sqlite"))
            path = base.parent / DEFAULT_STATE_FILENAME
        return StateConfig(database_url=self.database_url, path=path, replica_id=self.replica_id,
                           connect_timeout_s=self.state_timeout_s)

    def is_admin(self, user_id: str | None) -> bool:
        """Whether ``user_id`` is listed in ``ADMIN_USER_IDS``."""
        return bool(user_id) and user_id in self.admin_user_ids

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        dotenv_path: str | Path | None = DEFAULT_DOTENV,
        require_slack: bool = True,
        config_path: str | Path | None = DEFAULT_CONFIG_FILE,
    ) -> "Settings":
        """Read and validate the settings.

        Args:
            environ: the variables (default ``os.environ``); they win over ``.env``.
            dotenv_path: a ``.env`` file read if it exists (relative to the current
                directory) and is not inside the repository being indexed (``REPO_PATH``,
                else the current directory); ``None`` reads none. ``SLACKZILLA_ENV_FILE``
                in ``environ`` names a file read instead, wherever it is.
            require_slack: require the Slack credentials (``serve`` does; ``manifest``
                and tests of the HTTP API may not).
            config_path: the repositories file read when it exists and ``SLACKZILLA_CONFIG`` is
                unset (:mod:`bot.config_file`; default ``./slackzilla.toml``); ``None`` reads none.

        Raises:
            SettingsError: listing every missing or malformed value (the engine's
                variables included, checked by :func:`rag.config.read_engine_config`).
        """
        values, problems = read_environment(environ, dotenv_path=dotenv_path)
        return _parse(values, require_slack=require_slack, extra_problems=problems, config_path=config_path)


def read_environment(environ: Mapping[str, str] | None = None, *, dotenv_path: str | Path | None = DEFAULT_DOTENV,
                     repo: str | Path | None = None) -> tuple[dict[str, str], list[str]]:
    """The variables every command reads: ``environ`` over the values of a ``.env`` file.

    The file is ``SLACKZILLA_ENV_FILE`` when set (wherever it is), else ``dotenv_path`` when it exists
    and is not inside the repository being indexed (``repo``, else ``REPO_PATH``, else the current
    directory: there it is the repository's own file, module docstring). Nothing is written into
    ``os.environ``.

    Args:
        environ: the real variables (default ``os.environ``); they win over the file's.
        dotenv_path: the default file (relative to the current directory); ``None`` reads none.
        repo: the repository being indexed when the caller knows it (a command's ``--repo``).

    Returns:
        ``(variables, problems)``: ``problems`` holds one line per unusable setting (a
        ``SLACKZILLA_ENV_FILE`` that is not a file), for the caller to report.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    explicit = (environ.get(ENV_FILE_VARIABLE) or "").strip()
    problems: list[str] = []
    if explicit:
        if Path(explicit).expanduser().is_file():
            values.update(_read_dotenv(Path(explicit).expanduser()))
        else:
            problems.append(f"{ENV_FILE_VARIABLE}: {explicit} is not a file")
    elif dotenv_path is not None and Path(dotenv_path).is_file():
        found = _read_dotenv(Path(dotenv_path))
        repo = str(repo) if repo is not None else (
            (environ.get("REPO_PATH") or found.get("REPO_PATH") or ".").strip() or ".")
        if _inside(Path(dotenv_path), Path(repo).expanduser()):
            log.warning("not reading %s: it is inside the repository being indexed (%s), so it is that "
                        "repository's file and could redirect the bot's tokens; set the bot's variables in the "
                        "environment or name the bot's own file with %s", dotenv_path, repo, ENV_FILE_VARIABLE)
        else:
            values.update(found)
    values.update(environ)
    return values, problems


def _read_dotenv(path: Path) -> dict[str, str]:
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def _inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` resolves to a place inside ``directory`` (symlinks resolved)."""
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except OSError:
        return False


def _parse(env: Mapping[str, str], *, require_slack: bool, extra_problems: list[str] = (),
           config_path: str | Path | None = None) -> Settings:
    reader = EnvReader(env)
    get, convert, problem = reader.get, reader.convert, reader.problem
    for line in extra_problems:
        problem(line)

    app_token = convert("SLACK_APP_TOKEN", None, _prefixed("xapp-", "an app-level token"))
    bot_token = convert("SLACK_BOT_TOKEN", None, _prefixed("xoxb-", "a bot token"))
    signing_secret = get("SLACK_SIGNING_SECRET")
    if require_slack and bot_token is None and get("SLACK_BOT_TOKEN") is None:
        problem("SLACK_BOT_TOKEN: missing (OAuth & Permissions > Bot User OAuth Token, xoxb-…)")
    if require_slack and app_token is None and signing_secret is None:
        problem("SLACK_SIGNING_SECRET: missing (Basic Information > App Credentials > Signing Secret)")
    if get("SLACK_CLIENT_ID") and get("SLACK_CLIENT_SECRET"):
        problem(
            "SLACK_CLIENT_ID/SLACK_CLIENT_SECRET: set in the environment; Slackzilla is a single-workspace "
            "app and Bolt would switch to its OAuth flow: unset them"
        )

    engine = read_engine_config(reader)
    admin_token = get("ADMIN_API_TOKEN")
    if admin_token is not None and len(admin_token) < MIN_ADMIN_API_TOKEN_LENGTH:
        problem(f"ADMIN_API_TOKEN: too short, use at least {MIN_ADMIN_API_TOKEN_LENGTH} random characters")
        admin_token = None

    interval = convert("REINDEX_INTERVAL_S", DEFAULT_REINDEX_INTERVAL_S, int_range(0, 7 * 86400))
    git_pull = convert("REPO_GIT_PULL", False, _bool)
    file = find_config_file(env, default=config_path)
    repositories: tuple[RepoConfig, ...] = ()
    documents = DocumentsConfig()
    if file is not None:
        found, documents = read_config_file(file, problem=problem, default_interval_s=interval,
                                            default_git_pull=git_pull)
        repositories = tuple(resolve_github(found, base=engine.github, env=env, problem=problem))
        default = next((r for r in repositories if r.default), None)
        if default is not None:  # settings.repo_path and the state file follow the default repository
            engine = default.engine_config(engine)
    settings = Settings(
        slack_bot_token=bot_token,
        slack_signing_secret=signing_secret,
        slack_app_token=app_token,
        host=get("HOST") or DEFAULT_HOST,
        port=convert("PORT", DEFAULT_PORT, int_range(0, 65535)),
        repo_web_url=convert("REPO_WEB_URL", None, lambda raw: http_url(raw).rstrip("/")),
        reindex_interval_s=interval,
        reindex_timeout_s=convert("REINDEX_TIMEOUT_S", DEFAULT_REINDEX_TIMEOUT_S, positive_seconds),
        repo_git_pull=git_pull,
        admin_user_ids=convert("ADMIN_USER_IDS", frozenset(), _user_ids),
        admin_api_token=admin_token,
        slack_api_url=convert("SLACK_API_URL", DEFAULT_SLACK_API_URL, lambda raw: http_url(raw).rstrip("/") + "/"),
        ask_rate_per_min=convert("ASK_RATE_PER_MIN", DEFAULT_ASK_RATE_PER_MIN, int_range(0, 10_000)),
        database_url=convert("DATABASE_URL", None, _database_url),
        state_path=convert("STATE_PATH", None, _state_path),
        replica_id=convert("REPLICA_ID", default_replica_id(), _replica_id),
        state_timeout_s=convert("STATE_TIMEOUT_S", DEFAULT_STATE_TIMEOUT_S, _float_range(0.1, 60.0)),
        slack_unreachable_exit_s=convert("SLACK_UNREACHABLE_EXIT_S", DEFAULT_SLACK_UNREACHABLE_EXIT_S,
                                         _float_range(0.0, 86400.0)),
        public_hosts=convert("PUBLIC_HOSTS", frozenset(), _host_names),
        engine=engine,
        repositories=repositories,
        documents=documents,
        config_path=file,
    )
    reader.raise_problems(SettingsError)
    return settings


def _state_path(raw: str) -> Path:
    """``STATE_PATH``: a file, or a folder (existing, or written with a trailing ``/``) to hold ``state.sqlite``."""
    path = Path(raw).expanduser()
    return path / "state.sqlite" if raw.endswith(("/", os.sep)) or path.is_dir() else path


def _prefixed(prefix: str, what: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if not raw.startswith(prefix):
            raise ValueError(f"malformed: expected {what} starting with {prefix!r}")
        return raw

    return parse


def _bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"expected 1/0, true/false, yes/no or on/off, got {raw!r}")


def _user_ids(raw: str) -> frozenset[str]:
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    bad = [i for i in ids if not _USER_ID.match(i)]
    if bad:
        raise ValueError(f"expected comma-separated Slack user ids like U012ABCDEF, got {', '.join(map(repr, bad))}")
    return frozenset(ids)


def default_replica_id() -> str:
    """``<hostname>-<pid>``: unique per process (set ``REPLICA_ID`` to keep one across restarts)."""
    host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname() or "host")[:48] or "host"
    return f"{host}-{os.getpid()}"


def _database_url(raw: str) -> str:
    if not is_postgres_url(raw):
        raise ValueError(f"expected a postgresql://user:password@host:5432/database URL, got {redact_url(raw)!r}")
    return raw.strip()


def _replica_id(raw: str) -> str:
    if not _REPLICA_ID.match(raw):
        raise ValueError("expected 1-64 letters, digits, '.', '_', ':', '@' or '-' (e.g. web-1), "
                         f"got {raw[:70]!r}")
    return raw


#: A DNS name (RFC 1123 labels), as ``PUBLIC_HOSTS`` takes them.
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
                        r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$")


def _host_names(raw: str) -> frozenset[str]:
    """``PUBLIC_HOSTS``: comma-separated host names or IP addresses (no scheme, port or path)."""
    import ipaddress

    names = [part.strip().lower().rstrip(".") for part in raw.split(",") if part.strip()]
    bad = []
    for name in names:
        try:
            ipaddress.ip_address(name.strip("[]"))
            continue
        except ValueError:
            pass
        if not _HOST_NAME.match(name):
            bad.append(name)
    if bad:
        raise ValueError("expected comma-separated host names like bot.example.com (no scheme, port or path), "
                         f"got {', '.join(map(repr, bad))}")
    return frozenset(name.strip("[]") for name in names)


def _float_range(low: float, high: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"expected a number of seconds, got {raw!r}") from None
        if not low <= value <= high:
            raise ValueError(f"must be between {low:g} and {high:g}, got {value:g}")
        return value

    return parse
