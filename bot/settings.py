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

Example::

    settings = Settings.from_env()                       # os.environ + ./.env
    settings = Settings.from_env({"SLACK_BOT_TOKEN": "xoxb-…", "SLACK_SIGNING_SECRET": "…"},
                                 dotenv_path=None)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable, Mapping
from urllib.parse import urlsplit

from dotenv import dotenv_values

from rag.errors import UserError

__all__ = ["Settings", "SettingsError", "DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_DOTENV"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000
DEFAULT_REINDEX_INTERVAL_S = 300
DEFAULT_AI_TIMEOUT_S = 60.0
DEFAULT_ASK_RATE_PER_MIN = 6
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
DEFAULT_DOTENV = ".env"
#: Shortest accepted ``ADMIN_API_TOKEN``: 16 characters keeps a guessable word out.
MIN_ADMIN_API_TOKEN_LENGTH = 16

_SECRET_FIELDS = frozenset(
    {
        "slack_bot_token",
        "slack_signing_secret",
        "slack_app_token",
        "ai_api_key",
        "admin_api_token",
        "embeddings_api_key",
        "rerank_api_key",
    }
)
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(UserError):
    """The configuration is invalid; ``problems`` lists one sentence per bad variable.

    ``str(err)`` is a multi-line message meant for the operator, with no secret values.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("Invalid configuration:\n" + "\n".join(f"- {p}" for p in self.problems))


@dataclass(frozen=True)
class Settings:
    """Validated configuration of one bot process (see DESIGN.md section 5).

    Attributes mirror the variables: ``slack_bot_token`` is ``SLACK_BOT_TOKEN`` and so
    on. Times are seconds; ``admin_user_ids`` is a frozenset of Slack user ids;
    ``slack_api_url`` always ends with ``/`` (what ``AsyncWebClient(base_url=)`` expects).
    """

    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    repo_path: Path = field(default_factory=Path.cwd)
    repo_web_url: str | None = None
    rag_index_path: Path | None = None
    ai_url: str | None = None
    ai_api_key: str | None = None
    ai_model: str | None = None
    reindex_interval_s: int = DEFAULT_REINDEX_INTERVAL_S
    repo_git_pull: bool = False
    admin_user_ids: frozenset[str] = frozenset()
    admin_api_token: str | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL
    ai_timeout_s: float = DEFAULT_AI_TIMEOUT_S
    ask_rate_per_min: int = DEFAULT_ASK_RATE_PER_MIN
    embeddings_url: str | None = None
    embeddings_api_key: str | None = None
    embeddings_model: str | None = None
    embeddings_local_path: Path | None = None
    embeddings: str = "auto"
    rerank_url: str | None = None
    rerank_api_key: str | None = None
    rerank_model: str | None = None
    rerank_min_score: float | None = None

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS:
                shown = "'***'" if value else "None"
            else:
                shown = repr(value)
            parts.append(f"{f.name}={shown}")
        return f"Settings({', '.join(parts)})"

    __str__ = __repr__

    @property
    def socket_mode(self) -> bool:
        """True when ``SLACK_APP_TOKEN`` is set: Socket Mode instead of HTTP."""
        return bool(self.slack_app_token)

    def is_admin(self, user_id: str | None) -> bool:
        """Whether ``user_id`` is listed in ``ADMIN_USER_IDS``."""
        return bool(user_id) and user_id in self.admin_user_ids

    def embeddings_env(self) -> dict[str, str]:
        """The ``EMBEDDINGS*`` variables that are set, as a mapping for ``rag.providers.embeddings.provider_from_env``."""
        env = {
            "EMBEDDINGS": self.embeddings,
            "EMBEDDINGS_URL": self.embeddings_url,
            "EMBEDDINGS_API_KEY": self.embeddings_api_key,
            "EMBEDDINGS_MODEL": self.embeddings_model,
            "EMBEDDINGS_LOCAL_PATH": str(self.embeddings_local_path) if self.embeddings_local_path else None,
        }
        return {k: v for k, v in env.items() if v}

    def rerank_env(self) -> dict[str, str]:
        """The ``RERANK_*`` variables that are set, as a mapping for ``rag.providers.rerank.reranker_from_env``
        (empty → no reranker: reranking is off by default)."""
        env = {"RERANK_URL": self.rerank_url, "RERANK_API_KEY": self.rerank_api_key,
               "RERANK_MODEL": self.rerank_model,
               "RERANK_MIN_SCORE": None if self.rerank_min_score is None else repr(self.rerank_min_score)}
        return {k: v for k, v in env.items() if v}

    def ai_env(self) -> dict[str, str]:
        """The ``AI_*`` variables that are set, as a mapping for ``ModelConfig.from_env``."""
        env = {
            "AI_URL": self.ai_url,
            "AI_API_KEY": self.ai_api_key,
            "AI_MODEL": self.ai_model,
            "AI_TIMEOUT_S": str(self.ai_timeout_s),
        }
        return {k: v for k, v in env.items() if v}

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        dotenv_path: str | Path | None = DEFAULT_DOTENV,
        require_slack: bool = True,
    ) -> "Settings":
        """Read and validate the settings.

        Args:
            environ: the variables (default ``os.environ``); they win over ``.env``.
            dotenv_path: a ``.env`` file read if it exists (relative to the current
                directory); ``None`` reads none.
            require_slack: require the Slack credentials (``serve`` does; ``manifest``
                and tests of the HTTP API may not).

        Raises:
            SettingsError: listing every missing or malformed value.
        """
        values: dict[str, str] = {}
        if dotenv_path is not None and Path(dotenv_path).is_file():
            values.update({k: v for k, v in dotenv_values(dotenv_path).items() if v is not None})
        values.update(os.environ if environ is None else environ)
        return _parse(values, require_slack=require_slack)


def _parse(env: Mapping[str, str], *, require_slack: bool) -> Settings:
    problems: list[str] = []

    def get(name: str) -> str | None:
        raw = env.get(name)
        if raw is None:
            return None
        raw = raw.strip()
        return raw or None

    def convert(name: str, default, parse: Callable[[str], object]):
        raw = get(name)
        if raw is None:
            return default
        try:
            return parse(raw)
        except ValueError as err:
            problems.append(f"{name}: {err}")
            return default

    app_token = convert("SLACK_APP_TOKEN", None, _prefixed("xapp-", "an app-level token"))
    bot_token = convert("SLACK_BOT_TOKEN", None, _prefixed("xoxb-", "a bot token"))
    signing_secret = get("SLACK_SIGNING_SECRET")
    if require_slack and bot_token is None and get("SLACK_BOT_TOKEN") is None:
        problems.append("SLACK_BOT_TOKEN: missing (OAuth & Permissions > Bot User OAuth Token, xoxb-…)")
    if require_slack and app_token is None and signing_secret is None:
        problems.append("SLACK_SIGNING_SECRET: missing (Basic Information > App Credentials > Signing Secret)")
    if get("SLACK_CLIENT_ID") and get("SLACK_CLIENT_SECRET"):
        problems.append(
            "SLACK_CLIENT_ID/SLACK_CLIENT_SECRET: set in the environment; Slackzilla is a single-workspace "
            "app and Bolt would switch to its OAuth flow: unset them"
        )

    repo_path = convert("REPO_PATH", Path.cwd(), _existing_dir)
    index_path = convert("RAG_INDEX_PATH", None, lambda raw: Path(raw).expanduser())
    local_path = convert("EMBEDDINGS_LOCAL_PATH", None, _existing_dir)
    admin_token = get("ADMIN_API_TOKEN")
    if admin_token is not None and len(admin_token) < MIN_ADMIN_API_TOKEN_LENGTH:
        problems.append(f"ADMIN_API_TOKEN: too short, use at least {MIN_ADMIN_API_TOKEN_LENGTH} random characters")
        admin_token = None

    settings = Settings(
        slack_bot_token=bot_token,
        slack_signing_secret=signing_secret,
        slack_app_token=app_token,
        host=get("HOST") or DEFAULT_HOST,
        port=convert("PORT", DEFAULT_PORT, _int_range(0, 65535)),
        repo_path=repo_path,
        repo_web_url=convert("REPO_WEB_URL", None, lambda raw: _http_url(raw).rstrip("/")),
        rag_index_path=index_path,
        ai_url=convert("AI_URL", None, _http_url),
        ai_api_key=get("AI_API_KEY"),
        ai_model=get("AI_MODEL"),
        reindex_interval_s=convert("REINDEX_INTERVAL_S", DEFAULT_REINDEX_INTERVAL_S, _int_range(0, 7 * 86400)),
        repo_git_pull=convert("REPO_GIT_PULL", False, _bool),
        admin_user_ids=convert("ADMIN_USER_IDS", frozenset(), _user_ids),
        admin_api_token=admin_token,
        slack_api_url=convert("SLACK_API_URL", DEFAULT_SLACK_API_URL, lambda raw: _http_url(raw).rstrip("/") + "/"),
        ai_timeout_s=convert("AI_TIMEOUT_S", DEFAULT_AI_TIMEOUT_S, _positive_float),
        ask_rate_per_min=convert("ASK_RATE_PER_MIN", DEFAULT_ASK_RATE_PER_MIN, _int_range(0, 10_000)),
        embeddings_url=convert("EMBEDDINGS_URL", None, _http_url),
        embeddings_api_key=get("EMBEDDINGS_API_KEY"),
        embeddings_model=get("EMBEDDINGS_MODEL"),
        embeddings_local_path=local_path,
        embeddings=convert("EMBEDDINGS", "auto", _embeddings_mode),
        rerank_url=convert("RERANK_URL", None, _http_url),
        rerank_api_key=get("RERANK_API_KEY"),
        rerank_model=get("RERANK_MODEL"),
        rerank_min_score=convert("RERANK_MIN_SCORE", None, _finite_float),
    )
    if problems:
        raise SettingsError(problems)
    return settings


def _prefixed(prefix: str, what: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if not raw.startswith(prefix):
            raise ValueError(f"malformed: expected {what} starting with {prefix!r}")
        return raw

    return parse


def _int_range(low: int, high: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"expected a whole number, got {raw!r}") from None
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


def _positive_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"expected a number of seconds, got {raw!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"must be a positive number of seconds, got {raw!r}")
    return value


def _finite_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"expected a number, got {raw[:40]!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"must be a finite number, got {raw[:40]!r}")
    return value


def _embeddings_mode(raw: str) -> str:
    value = raw.strip().lower()
    if value in ("auto", "on", "1", "true", "yes", ""):
        return "auto"
    if value in ("off", "0", "false", "no", "none", "disabled"):
        return "off"
    raise ValueError("expected auto or off")


def _bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"expected 1/0, true/false, yes/no or on/off, got {raw!r}")


def _http_url(raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("expected an http(s) URL such as https://host/path")
    return raw


def _existing_dir(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ValueError(f"{raw!r} is not an existing directory")
    return path.resolve()


def _user_ids(raw: str) -> frozenset[str]:
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    bad = [i for i in ids if not _USER_ID.match(i)]
    if bad:
        raise ValueError(f"expected comma-separated Slack user ids like U012ABCDEF, got {', '.join(map(repr, bad))}")
    return frozenset(ids)
