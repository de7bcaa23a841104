"""The engine's configuration: the one place that reads ``REPO_PATH``, ``RAG_INDEX_PATH``,
``AI_*``, ``EMBEDDINGS*``, ``RERANK_*`` and ``INDEX_WORKERS`` (DESIGN.md section 5).

One parser, :func:`parse_engine_config`, turns a mapping of variables (default
``os.environ``) into typed frozen records and reports every bad variable at once,
one line each (``VARIABLE: what is wrong``), in a :class:`ConfigError`::

    EngineConfig                 repo, index_path
    ├── model: ModelConfig       AI_URL, AI_API_KEY, AI_MODEL, AI_TIMEOUT_S
    ├── embeddings: EmbeddingsConfig   EMBEDDINGS, EMBEDDINGS_URL, _API_KEY, _MODEL, _LOCAL_PATH,
    │                                  _QUERY_PREFIX, _PASSAGE_PREFIX, _BATCH_SIZE, _TIMEOUT_S,
    │                                  _LOCAL_THREADS
    ├── rerank: RerankConfig     RERANK_URL, RERANK_API_KEY, RERANK_MODEL, RERANK_MIN_SCORE
    ├── indexing: IndexingConfig INDEX_WORKERS
    └── github: GitHubConfig     GITHUB_REPOSITORY, GITHUB_TOKEN, GITHUB_API_URL, GITHUB_ITEMS, GITHUB_COMMENTS

Each section also parses alone (``ModelConfig.from_env``, ``EmbeddingsConfig.from_env``,
``RerankConfig.from_env``, ``IndexingConfig.from_env``), for callers that turn one bad section off instead of
refusing to start (the CLI: a bad ``RERANK_URL`` disables reranking with a warning).
:func:`engine_paths` reads ``REPO_PATH``/``RAG_INDEX_PATH`` without checking them,
for the CLI's ``--repo``/``--index`` defaults (``Engine.open`` then checks the repository).

``bot.settings`` embeds these records and uses the same :class:`EnvReader` for its own
Slack/HTTP/admin variables. The providers are built from the records by
``rag.providers.embeddings.build_embeddings`` and ``rag.providers.rerank.build_reranker``.

This module imports no SDK (no openai, numpy or Bolt), so the CLI starts light.
Values are stripped; an empty value counts as unset. API keys never appear in
``repr()`` or in error messages (only whether they are set).
"""
from __future__ import annotations

import math
import re
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from rag.errors import UserError

__all__ = [
    "ConfigError", "EnvReader", "EngineConfig", "ModelConfig", "EmbeddingsConfig", "RerankConfig", "IndexingConfig",
    "GitHubConfig", "parse_engine_config", "read_engine_config", "engine_paths", "normalize_base_url",
    "DEFAULT_AI_URL", "DEFAULT_AI_MODEL", "DEFAULT_AI_TIMEOUT_S", "DEFAULT_MAX_RETRIES",
    "http_url", "existing_dir", "positive_seconds", "finite_float", "embeddings_mode", "index_workers",
    "cpu_threads", "github_repository", "DEFAULT_EMBEDDINGS_BATCH_SIZE", "DEFAULT_EMBEDDINGS_TIMEOUT_S",
    "MAX_INDEX_WORKERS", "MAX_LOCAL_THREADS",
    "DEFAULT_GITHUB_API_URL", "DEFAULT_GITHUB_ITEMS", "DEFAULT_GITHUB_COMMENTS",
]

DEFAULT_AI_URL = "https://api.openai.com/v1"
"""Base URL used when ``AI_URL`` is unset (OpenAI's public API)."""
DEFAULT_AI_MODEL = "gpt-4o-mini"
"""Model used when ``AI_MODEL`` is unset: cheap, fast, supports streamed tool calls."""
DEFAULT_AI_TIMEOUT_S = 60.0
"""Overall deadline for one answer, all rounds included (``AI_TIMEOUT_S``, DESIGN.md section 5)."""
DEFAULT_MAX_RETRIES = 1
"""SDK retries per request (connection errors, 408/409/429/5xx), bounded by the overall deadline."""
DEFAULT_TOOL_ROUNDS = 3
"""Model rounds with tools per answer (``AI_TOOL_ROUNDS``; the seed's limit)."""
DEFAULT_TOOL_CALLS_PER_ROUND = 8
"""Tool calls run per round (``AI_TOOL_CALLS_PER_ROUND``)."""
DEFAULT_TOOL_READ_TOKENS = 12_000
"""Estimated tokens the repository tools may return per answer (``AI_TOOL_READ_TOKENS``)."""

DEFAULT_GITHUB_API_URL = "https://api.github.com"
"""GitHub's REST API (``GITHUB_API_URL``; GitHub Enterprise Server is ``https://HOST/api/v3``)."""
DEFAULT_GITHUB_ITEMS = 100
"""Most recently updated issues, and as many pull requests, kept per repository (``GITHUB_ITEMS``; issue #19)."""
DEFAULT_GITHUB_COMMENTS = 0
"""Comments fetched per issue or pull request (``GITHUB_COMMENTS``): none unless asked."""
DEFAULT_EMBEDDINGS_BATCH_SIZE = 64
"""Texts per request to an OpenAI-compatible ``/embeddings`` endpoint (``EMBEDDINGS_BATCH_SIZE``)."""
DEFAULT_EMBEDDINGS_TIMEOUT_S = 30.0
"""Timeout of one ``/embeddings`` HTTP attempt in seconds (``EMBEDDINGS_TIMEOUT_S``)."""
MAX_INDEX_WORKERS = 64
"""Largest ``INDEX_WORKERS`` accepted."""
MAX_LOCAL_THREADS = 256
"""Largest ``EMBEDDINGS_LOCAL_THREADS`` accepted."""

T = TypeVar("T")


class ConfigError(UserError):
    """The configuration is invalid; ``problems`` lists one line per bad variable (``NAME: reason``).

    ``str(err)`` is ``"Invalid configuration:\\n- <problem>\\n- …"``, with no secret values.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("Invalid configuration:\n" + "\n".join(f"- {p}" for p in self.problems))


class EnvReader:
    """Reads variables from ``env`` and collects one problem line per bad variable.

    Example::

        reader = EnvReader({"PORT": "http"})
        port = reader.convert("PORT", 3000, int)   # → 3000; reader.problems == ["PORT: …"]
        reader.raise_problems(ConfigError)          # raises, listing every problem

    Args:
        env: the variables (any string mapping; ``os.environ`` or a merged ``.env``).
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def get(self, name: str) -> str | None:
        """The value of ``name`` stripped of white space, or ``None`` when unset or blank."""
        raw = self.env.get(name)
        if raw is None:
            return None
        return raw.strip() or None

    def convert(self, name: str, default: T, parse: Callable[[str], Any]) -> Any:
        """``parse(value)``, or ``default`` when unset; a ``ValueError`` from ``parse`` is recorded as
        the problem ``"NAME: <message>"`` and ``default`` returned."""
        raw = self.get(name)
        if raw is None:
            return default
        try:
            return parse(raw)
        except ValueError as err:
            self.problems.append(f"{name}: {err}")
            return default

    def problem(self, line: str) -> None:
        """Record one problem line (``"NAME: reason"``)."""
        self.problems.append(line)

    def raise_problems(self, error: Callable[[list[str]], Exception] = ConfigError) -> None:
        """Raise ``error(problems)`` if any problem was recorded (``ConfigError`` by default)."""
        if self.problems:
            raise error(list(self.problems))


# --------------------------------------------------------------------------- value checks
# Each takes the stripped text and returns the value, or raises ValueError(reason).


def http_url(raw: str) -> str:
    """``raw`` if it is an ``http(s)://host…`` URL. Raises ``ValueError``."""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("expected an http(s) URL such as https://host/path")
    return raw


def existing_dir(raw: str) -> Path:
    """``raw`` (``~`` expanded) resolved to an absolute path. Raises ``ValueError`` if not a directory."""
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ValueError(f"{raw!r} is not an existing directory")
    return path.resolve()


def positive_seconds(raw: str) -> float:
    """A finite number of seconds above 0. Raises ``ValueError``."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"expected a number of seconds, got {raw!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"must be a positive number of seconds, got {raw!r}")
    return value


def cpu_threads(raw: str) -> int:
    """A thread count: ``auto`` (one per CPU this process may run on,
    :func:`rag.ingest.pool.usable_cpus`) or a whole number from 1 to :data:`MAX_LOCAL_THREADS`.
    Raises ``ValueError``."""
    if raw.strip().lower() == "auto":
        from rag.ingest.pool import usable_cpus

        return usable_cpus()
    try:
        return int_range(1, MAX_LOCAL_THREADS)(raw)
    except ValueError:
        raise ValueError(f"expected auto or a whole number from 1 to {MAX_LOCAL_THREADS}, got {raw[:40]!r}") from None


def int_range(low: int, high: int) -> Callable[[str], int]:
    """A parser for a whole number in ``[low, high]`` (for :meth:`EnvReader.convert`); it raises
    ``ValueError`` naming the range. Used for the engine's and the bot's integer variables."""

    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError(f"expected a whole number from {low} to {high}, got {raw[:40]!r}") from None
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


_GITHUB_REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")


def github_repository(raw: str) -> str:
    """``owner/name`` as GitHub spells a repository (``GITHUB_REPOSITORY``, ``github = …``). Raises ``ValueError``."""
    value = raw.strip().removesuffix(".git")
    if not _GITHUB_REPOSITORY.match(value) or value.split("/")[1] in (".", ".."):
        raise ValueError(f"expected owner/name such as acme/api, got {raw[:60]!r}")
    return value


def finite_float(raw: str) -> float:
    """A finite number (no NaN or infinity). Raises ``ValueError`` quoting at most 40 characters."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"expected a number, got {raw[:40]!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {raw[:40]!r}")
    return value


def embeddings_mode(raw: str) -> str:
    """``"auto"`` (also ``on``/``1``/``true``/``yes``) or ``"off"`` (also ``0``/``false``/``no``/``none``/
    ``disabled``), case-insensitive. Raises ``ValueError``."""
    value = raw.strip().lower()
    if value in ("auto", "on", "1", "true", "yes", ""):
        return "auto"
    if value in ("off", "0", "false", "no", "none", "disabled"):
        return "off"
    raise ValueError("expected auto or off")


def index_workers(raw: str) -> int | None:
    """``auto`` → ``None`` (one worker per usable CPU, capped: :mod:`rag.ingest.pool`), else a whole
    number from 1 (prepare files in the indexing process) to :data:`MAX_INDEX_WORKERS`.
    Raises ``ValueError``."""
    if raw.strip().lower() == "auto":
        return None
    try:
        return int_range(1, MAX_INDEX_WORKERS)(raw)
    except ValueError:
        raise ValueError(f"expected auto or a whole number from 1 to {MAX_INDEX_WORKERS}, got {raw[:40]!r}") from None


def normalize_base_url(url: str | None) -> str:
    """Apply the seed's ``AI_URL`` normalisation.

    Strips white space, trailing ``/`` and a ``/chat/completions`` suffix, so
    both ``https://host/v1/`` and ``https://host/v1/chat/completions`` become
    ``https://host/v1`` (the SDK appends ``/chat/completions`` itself); ``None``
    or blank gives :data:`DEFAULT_AI_URL`.

    Raises:
        UserError: the URL is not ``http(s)://host…``.
    """
    text = (url or "").strip() or DEFAULT_AI_URL
    text = text.rstrip("/")
    if text.lower().endswith("/chat/completions"):
        text = text[: -len("/chat/completions")].rstrip("/")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UserError(f"AI_URL must be an http(s) URL such as {DEFAULT_AI_URL}, got {text!r}.")
    return text


def _masked(value: str | None) -> str:
    return "'***'" if value else "None"


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ModelConfig:
    """Where and how to reach the model (``AI_*``).

    Example::

        config = ModelConfig.from_env(os.environ)
        if config.enabled: ...

    Attributes:
        base_url: OpenAI-compatible base URL, normalised (see :func:`normalize_base_url`).
        api_key: the provider key; ``None`` means "no model" (the no-AI answer).
            Never printed: excluded from ``repr`` and :meth:`to_json`.
        model: model name sent with each request.
        timeout_s: overall deadline for one answer in seconds (also the SDK's
            per-request timeout).
        max_retries: SDK retries per request.
        tool_rounds: model rounds with tools before a final answer without them (``AI_TOOL_ROUNDS``).
        tool_calls_per_round: tool calls run per round, more refused (``AI_TOOL_CALLS_PER_ROUND``).
        tool_read_tokens: estimated tokens the repository tools (``searchCode``, ``readFile`` …)
            may return in one answer, all calls together (``AI_TOOL_READ_TOKENS``).
    """

    base_url: str = DEFAULT_AI_URL
    api_key: str | None = field(default=None, repr=False)
    model: str = DEFAULT_AI_MODEL
    timeout_s: float = DEFAULT_AI_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    tool_rounds: int = DEFAULT_TOOL_ROUNDS
    tool_calls_per_round: int = DEFAULT_TOOL_CALLS_PER_ROUND
    tool_read_tokens: int = DEFAULT_TOOL_READ_TOKENS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelConfig:
        """Read ``AI_URL``, ``AI_API_KEY``, ``AI_MODEL`` and ``AI_TIMEOUT_S`` alone.

        Args:
            env: the variables (default ``os.environ``). Empty values count as unset.

        Raises:
            ConfigError: (a ``UserError``) ``AI_URL`` is not an http(s) URL or ``AI_TIMEOUT_S``
                is not a positive number of seconds; one line per bad variable.
        """
        reader = EnvReader(os.environ if env is None else env)
        config = _model(reader)
        reader.raise_problems()
        return config

    @property
    def enabled(self) -> bool:
        """True when a key is configured, i.e. a model answer can be attempted."""
        return bool(self.api_key)

    def to_json(self) -> dict:
        """Safe metadata (no key): ``{"base_url", "model", "timeout_s"}``."""
        return {"base_url": self.base_url, "model": self.model, "timeout_s": self.timeout_s}

    @property
    def tool_budget(self) -> tuple[int, int, int]:
        """``(tool_rounds, tool_calls_per_round, tool_read_tokens)``, for ``rag.answer.loop.ToolBudget``."""
        return self.tool_rounds, self.tool_calls_per_round, self.tool_read_tokens


@dataclass(frozen=True)
class EmbeddingsConfig:
    """Which embeddings provider to use (``EMBEDDINGS*``); built by
    ``rag.providers.embeddings.build_embeddings``.

    Attributes:
        mode: ``"auto"`` (a provider when one is configured or installed) or ``"off"``.
        url: OpenAI-compatible endpoint root (``EMBEDDINGS_URL``), or ``None``.
        api_key: bearer key for ``url`` (never shown: ``repr`` says ``'***'``).
        model: model name for ``url``; ``None`` → the provider's default.
        local_path: a local model directory (resolved): a sentence-embedding ONNX export with its
            ``tokenizer.json``, or a sentence-transformers model; ``None`` → the packaged model.
        query_prefix, passage_prefix: text put before every question / every chunk before it is
            embedded (``EMBEDDINGS_QUERY_PREFIX``, ``EMBEDDINGS_PASSAGE_PREFIX``; e5-style models want
            ``"query: "`` and ``"passage: "``). Read as given, spaces included; ``""`` → none.
        batch_size: texts per ``/embeddings`` request (``EMBEDDINGS_BATCH_SIZE``).
        timeout_s: timeout of one ``/embeddings`` HTTP attempt (``EMBEDDINGS_TIMEOUT_S``).
        local_threads: onnxruntime intra-op threads of a local ONNX model (``EMBEDDINGS_LOCAL_THREADS``:
            a number, or ``auto`` for one per usable CPU, resolved when parsed); ``None`` (unset): the
            caller's default (:func:`rag.providers.embeddings.build_embeddings`: one for the bot, whose
            answers share the machine, one per CPU for ``slackzilla index`` and ``eval``).
    """

    mode: str = "auto"
    url: str | None = None
    api_key: str | None = None
    model: str | None = None
    local_path: Path | None = None
    query_prefix: str = ""
    passage_prefix: str = ""
    batch_size: int = DEFAULT_EMBEDDINGS_BATCH_SIZE
    timeout_s: float = DEFAULT_EMBEDDINGS_TIMEOUT_S
    local_threads: int | None = None

    def __repr__(self) -> str:
        return (f"EmbeddingsConfig(mode={self.mode!r}, url={self.url!r}, api_key={_masked(self.api_key)}, "
                f"model={self.model!r}, local_path={self.local_path!r}, query_prefix={self.query_prefix!r}, "
                f"passage_prefix={self.passage_prefix!r}, batch_size={self.batch_size!r}, "
                f"timeout_s={self.timeout_s!r}, local_threads={self.local_threads!r})")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EmbeddingsConfig:
        """Read the ``EMBEDDINGS*`` variables alone (default ``os.environ``).

        Raises:
            ConfigError: a bad ``EMBEDDINGS``, ``EMBEDDINGS_URL``, ``EMBEDDINGS_LOCAL_PATH``,
                ``EMBEDDINGS_BATCH_SIZE``, ``EMBEDDINGS_TIMEOUT_S`` or ``EMBEDDINGS_LOCAL_THREADS``, one
                line each.
        """
        reader = EnvReader(os.environ if env is None else env)
        config = _embeddings(reader)
        reader.raise_problems()
        return config


@dataclass(frozen=True)
class RerankConfig:
    """The optional reranker (``RERANK_*``; off unless ``url`` is set); built by
    ``rag.providers.rerank.build_reranker``.

    Attributes:
        url: ``POST {url}/rerank`` endpoint root, or ``None`` (no reranking).
        api_key: bearer key (never shown: ``repr`` says ``'***'``).
        model: model name sent with each request, or ``None`` (the server's).
        min_score: relevance floor on the service's scale, or ``None`` (never abstain).
    """

    url: str | None = None
    api_key: str | None = None
    model: str | None = None
    min_score: float | None = None

    def __repr__(self) -> str:
        return (f"RerankConfig(url={self.url!r}, api_key={_masked(self.api_key)}, model={self.model!r}, "
                f"min_score={self.min_score!r})")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RerankConfig:
        """Read the ``RERANK_*`` variables alone (default ``os.environ``).

        Raises:
            ConfigError: a bad ``RERANK_URL`` or ``RERANK_MIN_SCORE``, one line each.
        """
        reader = EnvReader(os.environ if env is None else env)
        config = _rerank(reader)
        reader.raise_problems()
        return config


@dataclass(frozen=True)
class GitHubConfig:
    """Issues and pull requests as sources (``GITHUB_*``); fetched by :mod:`rag.sources.github`.

    Example::

        config = GitHubConfig.from_env({"GITHUB_REPOSITORY": "acme/api", "GITHUB_TOKEN": "ghp_…"})
        config.enabled     # True: a repository is named
        repr(config)       # … token='***' …

    Attributes:
        repository: ``owner/name``, or ``None`` (no enrichment). ``GITHUB_REPOSITORY`` names the one
            repository of a bot without ``slackzilla.toml``; with the file each repository says ``github = …``.
        token: a token with read access to issues and pull requests (``GITHUB_TOKEN``, or the variable a
            repository's ``github_token_env`` names); never shown (``repr`` says ``'***'``); ``None``: anonymous
            (GitHub allows 60 requests an hour).
        api_url: the REST API root (``GITHUB_API_URL``).
        items: issues kept, and pull requests kept (``GITHUB_ITEMS``, 0-1000).
        comments: comments fetched per item (``GITHUB_COMMENTS``, 0-100).
    """

    repository: str | None = None
    token: str | None = None
    api_url: str = DEFAULT_GITHUB_API_URL
    items: int = DEFAULT_GITHUB_ITEMS
    comments: int = DEFAULT_GITHUB_COMMENTS

    def __repr__(self) -> str:
        return (f"GitHubConfig(repository={self.repository!r}, token={_masked(self.token)}, "
                f"api_url={self.api_url!r}, items={self.items!r}, comments={self.comments!r})")

    __str__ = __repr__

    @property
    def enabled(self) -> bool:
        """Whether a repository is named (and items are wanted)."""
        return bool(self.repository) and self.items > 0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GitHubConfig:
        """Read the ``GITHUB_*`` variables alone (default ``os.environ``).

        Raises:
            ConfigError: a bad ``GITHUB_REPOSITORY``, ``GITHUB_API_URL``, ``GITHUB_ITEMS`` or ``GITHUB_COMMENTS``.
        """
        reader = EnvReader(os.environ if env is None else env)
        config = _github(reader)
        reader.raise_problems()
        return config


@dataclass(frozen=True)
class IndexingConfig:
    """How updates prepare files (``INDEX_WORKERS``); turned into a
    :class:`rag.ingest.pool.PoolPolicy` by the caller.

    Attributes:
        workers: worker processes for large updates; ``None`` (``auto``, the default): one per
            usable CPU, at most 8; ``1``: everything in the indexing process.
    """

    workers: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IndexingConfig:
        """Read ``INDEX_WORKERS`` alone (default ``os.environ``).

        Raises:
            ConfigError: ``INDEX_WORKERS`` is neither ``auto`` nor a whole number from 1 to 64.
        """
        reader = EnvReader(os.environ if env is None else env)
        config = _indexing(reader)
        reader.raise_problems()
        return config


@dataclass(frozen=True)
class EngineConfig:
    """Everything the engine reads from the environment.

    Attributes:
        repo: repository root, an existing directory, resolved (``REPO_PATH``, default the
            current directory).
        index_path: index file (``RAG_INDEX_PATH``, ``~`` expanded), or ``None`` for
            ``<repo>/.rag/index.sqlite``.
        model, embeddings, rerank: the provider sections.
        github: the issues and pull requests section (:class:`GitHubConfig`).
        indexing: how updates prepare files.
    """

    repo: Path = field(default_factory=Path.cwd)
    index_path: Path | None = None
    model: ModelConfig = field(default_factory=ModelConfig)
    embeddings: EmbeddingsConfig = field(default_factory=EmbeddingsConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    github: GitHubConfig = field(default_factory=GitHubConfig)
    indexing: IndexingConfig = field(default_factory=IndexingConfig)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EngineConfig:
        """:func:`parse_engine_config` (default ``os.environ``)."""
        return parse_engine_config(env)


def _model(reader: EnvReader) -> ModelConfig:
    url = reader.convert("AI_URL", None, http_url)
    return ModelConfig(
        base_url=normalize_base_url(url),
        api_key=reader.get("AI_API_KEY"),
        model=reader.get("AI_MODEL") or DEFAULT_AI_MODEL,
        timeout_s=reader.convert("AI_TIMEOUT_S", DEFAULT_AI_TIMEOUT_S, positive_seconds),
        tool_rounds=reader.convert("AI_TOOL_ROUNDS", DEFAULT_TOOL_ROUNDS, int_range(0, 10)),
        tool_calls_per_round=reader.convert("AI_TOOL_CALLS_PER_ROUND", DEFAULT_TOOL_CALLS_PER_ROUND,
                                            int_range(1, 32)),
        tool_read_tokens=reader.convert("AI_TOOL_READ_TOKENS", DEFAULT_TOOL_READ_TOKENS, int_range(0, 200_000)),
    )


def _embeddings(reader: EnvReader) -> EmbeddingsConfig:
    return EmbeddingsConfig(
        mode=reader.convert("EMBEDDINGS", "auto", embeddings_mode),
        url=reader.convert("EMBEDDINGS_URL", None, http_url),
        api_key=reader.get("EMBEDDINGS_API_KEY"),
        model=reader.get("EMBEDDINGS_MODEL"),
        local_path=reader.convert("EMBEDDINGS_LOCAL_PATH", None, existing_dir),
        query_prefix=_raw(reader, "EMBEDDINGS_QUERY_PREFIX"),
        passage_prefix=_raw(reader, "EMBEDDINGS_PASSAGE_PREFIX"),
        batch_size=reader.convert("EMBEDDINGS_BATCH_SIZE", DEFAULT_EMBEDDINGS_BATCH_SIZE, int_range(1, 2048)),
        timeout_s=reader.convert("EMBEDDINGS_TIMEOUT_S", DEFAULT_EMBEDDINGS_TIMEOUT_S, positive_seconds),
        local_threads=reader.convert("EMBEDDINGS_LOCAL_THREADS", None, cpu_threads),
    )


def _raw(reader: EnvReader, name: str) -> str:
    """A prefix variable as given: not stripped (``"query: "`` keeps its space); unset → ``""``."""
    return reader.env.get(name) or ""


def _indexing(reader: EnvReader) -> IndexingConfig:
    return IndexingConfig(workers=reader.convert("INDEX_WORKERS", None, index_workers))


def _rerank(reader: EnvReader) -> RerankConfig:
    return RerankConfig(
        url=reader.convert("RERANK_URL", None, http_url),
        api_key=reader.get("RERANK_API_KEY"),
        model=reader.get("RERANK_MODEL"),
        min_score=reader.convert("RERANK_MIN_SCORE", None, finite_float),
    )


def _github(reader: EnvReader) -> GitHubConfig:
    return GitHubConfig(
        repository=reader.convert("GITHUB_REPOSITORY", None, github_repository),
        token=reader.get("GITHUB_TOKEN"),
        api_url=reader.convert("GITHUB_API_URL", DEFAULT_GITHUB_API_URL, lambda raw: http_url(raw).rstrip("/")),
        items=reader.convert("GITHUB_ITEMS", DEFAULT_GITHUB_ITEMS, int_range(0, 1000)),
        comments=reader.convert("GITHUB_COMMENTS", DEFAULT_GITHUB_COMMENTS, int_range(0, 100)),
    )


def read_engine_config(reader: EnvReader) -> EngineConfig:
    """The :class:`EngineConfig` from ``reader``; bad variables are added to ``reader.problems``
    (and their defaults used), so a caller with more variables (``bot.settings``) reports all at once."""
    return EngineConfig(
        repo=reader.convert("REPO_PATH", Path.cwd(), existing_dir),
        index_path=reader.convert("RAG_INDEX_PATH", None, lambda raw: Path(raw).expanduser()),
        model=_model(reader),
        embeddings=_embeddings(reader),
        rerank=_rerank(reader),
        github=_github(reader),
        indexing=_indexing(reader),
    )


def parse_engine_config(env: Mapping[str, str] | None = None) -> EngineConfig:
    """Read and check every engine variable.

    Args:
        env: the variables (default ``os.environ``); blank values count as unset.

    Returns:
        An :class:`EngineConfig`.

    Raises:
        ConfigError: listing every bad variable, one line each (``"REPO_PATH: '/x' is not an
            existing directory"``, ``"AI_URL: expected an http(s) URL such as https://host/path"`` …).
    """
    reader = EnvReader(os.environ if env is None else env)
    config = read_engine_config(reader)
    reader.raise_problems()
    return config


def engine_paths(env: Mapping[str, str] | None = None) -> tuple[Path | None, Path | None]:
    """``(REPO_PATH, RAG_INDEX_PATH)`` as given (stripped, unchecked, ``None`` when unset or blank).

    The CLI's ``--repo``/``--index`` defaults: ``Engine.open`` checks the repository
    (``RepoNotFoundError``) and applies ``.`` and ``<repo>/.rag/index.sqlite`` for ``None``.
    """
    reader = EnvReader(os.environ if env is None else env)
    repo, index = reader.get("REPO_PATH"), reader.get("RAG_INDEX_PATH")
    return (Path(repo) if repo else None), (Path(index) if index else None)
