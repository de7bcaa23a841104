"""The bot's configuration file, ``slackzilla.toml``: the repositories one bot serves, and document options.

Read once by :meth:`bot.settings.Settings.from_env` (standard library ``tomllib``), from
``SLACKZILLA_CONFIG`` or else ``slackzilla.toml`` in the working directory::

    [[repositories]]
    name = "api"                      # letters, digits, . _ - (1-40); "all" is reserved
    path = "/srv/api"                 # relative paths are relative to this file
    web_url = "https://github.com/acme/api"   # source links (blob/<commit>/path#Lx-Ly)
    index_path = "/var/lib/slackzilla/api.sqlite"   # default <path>/.rag/index.sqlite
    git_pull = true                   # git pull --ff-only before each scheduled reindex
    include = ["src/**", "docs/**"]   # git wildmatch patterns (default: everything)
    exclude = ["**/*.snap"]
    reindex_interval_s = 600          # default REINDEX_INTERVAL_S; 0 = no schedule
    default = true                    # DMs and unbound channels (default: the first)
    github = "acme/api"               # index its issues and pull requests (rag.sources.github)
    github_token_env = "API_GITHUB_TOKEN"   # the variable holding its token (default GITHUB_TOKEN)

    [[repositories]]
    name = "web"
    path = "../web"

    [documents]
    max_chars = 200000                # a longer document is refused
    savers = ["U0123ABCD", "S0456EFGH"]   # may use "Save to Slackzilla" besides admins (users, user groups)

Without the file, ``REPO_PATH`` (+ ``REPO_WEB_URL``, ``RAG_INDEX_PATH``, ``REPO_GIT_PULL``,
``REINDEX_INTERVAL_S``, ``GITHUB_REPOSITORY``) is one repository named after its folder, exactly as before.
A repository's GitHub token is read from the environment once, by :func:`resolve_github`
(``github_token_env``, else ``GITHUB_TOKEN``), never from the file.

What is wrong in the file (unreadable, not TOML, an unknown key, a value of the wrong
type, a duplicate name, two repositories with one index file) is a configuration error, reported with everything else wrong in
one :class:`bot.settings.SettingsError`. A repository whose *path* is missing or not a
directory is not: it is reported and skipped when the engines are opened
(:func:`bot.repos.open_repositories`), and the others serve.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from rag.config import EngineConfig, GitHubConfig, github_repository, http_url
from rag.engine import default_index_path
from rag.ingest.scope import PathScope

__all__ = ["RepoConfig", "DocumentsConfig", "CONFIG_VARIABLE", "DEFAULT_CONFIG_FILE", "DEFAULT_MAX_DOCUMENT_CHARS",
           "find_config_file", "read_config_file", "resolve_github", "single_repository", "REPO_NAME"]

CONFIG_VARIABLE = "SLACKZILLA_CONFIG"
DEFAULT_CONFIG_FILE = "slackzilla.toml"
DEFAULT_MAX_DOCUMENT_CHARS = 200_000
"""Largest document accepted (characters, after decoding): about 50,000 tokens, a long runbook."""
REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
"""A configured repository's name (it is typed in ``in:NAME`` and ``/sz-repo set NAME``)."""
_RESERVED = {"all"}
_SLACK_ID = re.compile(r"^[USW][A-Z0-9]{2,}$")
_REPO_KEYS = {"name", "path", "web_url", "index_path", "git_pull", "include", "exclude", "reindex_interval_s",
              "default", "github", "github_token_env"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_DOC_KEYS = {"max_chars", "savers"}


@dataclass(frozen=True)
class RepoConfig:
    """One repository the bot serves.

    Attributes:
        name: how people and the CLI name it (``in:api``, ``--repo api``).
        path: its root (resolved; existence is checked when it is opened).
        web_url: base web URL for source links, or ``None``.
        index_path: its index file, or ``None`` for ``<path>/.rag/index.sqlite``.
        git_pull: ``git pull --ff-only`` before each scheduled reindex.
        scope: include/exclude patterns (:class:`rag.ingest.scope.PathScope`).
        reindex_interval_s: its schedule (seconds; 0 = none).
        default: the repository of DMs and unbound channels.
        github: its GitHub repository (``owner/name``) whose issues and pull requests are indexed, or ``None``.
        github_token_env: the environment variable holding its token (``None``: ``GITHUB_TOKEN``).
        github_source: the resolved :class:`rag.config.GitHubConfig` (token included, never shown), set by
            :func:`resolve_github`; ``None``: no issues and pull requests.
    """

    name: str
    path: Path
    web_url: str | None = None
    index_path: Path | None = None
    git_pull: bool = False
    scope: PathScope = field(default_factory=PathScope)
    reindex_interval_s: int = 300
    default: bool = False
    github: str | None = None
    github_token_env: str | None = None
    github_source: GitHubConfig | None = None

    def engine_config(self, base: EngineConfig) -> EngineConfig:
        """``base`` (the ``AI_*``, ``EMBEDDINGS*``, ``RERANK_*`` sections) for this repository's path and index."""
        return replace(base, repo=self.path, index_path=self.index_path)


@dataclass(frozen=True)
class DocumentsConfig:
    """Document options: ``max_chars`` (a longer document is refused) and ``savers`` (Slack user or user
    group ids who may save messages as documents, besides ``ADMIN_USER_IDS``)."""

    max_chars: int = DEFAULT_MAX_DOCUMENT_CHARS
    savers: frozenset[str] = frozenset()


def find_config_file(env: Mapping[str, str], *, default: str | Path | None = DEFAULT_CONFIG_FILE) -> Path | None:
    """``SLACKZILLA_CONFIG`` (even when missing: reading it then reports it), else ``default`` when it exists."""
    explicit = (env.get(CONFIG_VARIABLE) or "").strip()
    if explicit:
        return Path(explicit).expanduser()
    if default is not None and Path(default).is_file():
        return Path(default)
    return None


def single_repository(engine: EngineConfig, *, web_url: str | None, git_pull: bool,
                      reindex_interval_s: int) -> RepoConfig:
    """The one repository of a bot without a configuration file: ``REPO_PATH``, named after its folder
    (with ``GITHUB_REPOSITORY``, its issues and pull requests)."""
    github = engine.github if engine.github.enabled else None
    return RepoConfig(name=engine.repo.name or "repo", path=engine.repo, web_url=web_url,
                      index_path=engine.index_path, git_pull=git_pull, reindex_interval_s=reindex_interval_s,
                      default=True, github=github.repository if github else None, github_source=github)


def resolve_github(repos: list[RepoConfig] | tuple[RepoConfig, ...], *, base: GitHubConfig, env: Mapping[str, str],
                   problem: Callable[[str], None]) -> list[RepoConfig]:
    """``repos`` with ``github_source`` set for those naming ``github``: ``base`` (``GITHUB_API_URL``,
    ``GITHUB_ITEMS``, ``GITHUB_COMMENTS``) for that repository, with the token of ``github_token_env``
    (else ``GITHUB_TOKEN``). A ``github_token_env`` naming an unset variable is a problem."""
    resolved = []
    for repo in repos:
        if repo.github is None:
            resolved.append(repo)
            continue
        token = base.token
        if repo.github_token_env:
            token = (env.get(repo.github_token_env) or "").strip() or None
            if token is None:
                problem(f"{CONFIG_VARIABLE} ({repo.name}): github_token_env names {repo.github_token_env}, "
                        "which is not set")
        resolved.append(replace(repo, github_source=replace(base, repository=repo.github, token=token)))
    return resolved


def read_config_file(path: Path, *, problem: Callable[[str], None], default_interval_s: int,
                     default_git_pull: bool = False) -> tuple[list[RepoConfig], DocumentsConfig]:
    """Read ``path``; every problem is handed to ``problem`` as one line (``slackzilla.toml: …``).

    Returns:
        ``(repositories, documents)``; the repositories in file order, exactly one with
        ``default`` set (the one marked, else the first). Empty when the file is unusable.
    """
    where = str(path)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        problem(f"{CONFIG_VARIABLE}: {where} does not exist")
        return [], DocumentsConfig()
    except OSError as exc:
        problem(f"{where}: cannot be read ({exc.strerror or type(exc).__name__})")
        return [], DocumentsConfig()
    except tomllib.TOMLDecodeError as exc:
        problem(f"{where}: not valid TOML ({exc})")
        return [], DocumentsConfig()
    base = path.resolve().parent
    unknown = sorted(set(data) - {"repositories", "documents"})
    if unknown:
        problem(f"{where}: unknown section(s) {', '.join(unknown)} (expected [[repositories]] and [documents])")
    entries = data.get("repositories")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        problem(f"{where}: needs at least one [[repositories]] table with a name and a path")
        entries = []
    repos: list[RepoConfig] = []
    seen: set[str] = set()
    index_owner: dict[Path, str] = {}
    for number, entry in enumerate(entries, 1):
        repo = _repository(entry, f"{where}: repositories[{number}]", base, problem, default_interval_s,
                           default_git_pull)
        if repo is None:
            continue
        if repo.name.lower() in seen:
            problem(f"{where}: repositories[{number}]: the name {repo.name!r} is used twice")
            continue
        index_file = (repo.index_path or default_index_path(repo.path)).resolve()
        if index_file in index_owner:  # each update would replace the other's files
            problem(f"{where}: repositories[{number}] ({repo.name}): its index {index_file} is also "
                    f"{index_owner[index_file]}'s; give each repository its own index_path")
            continue
        index_owner[index_file] = repo.name
        seen.add(repo.name.lower())
        repos.append(repo)
    marked = [r for r in repos if r.default]
    if len(marked) > 1:
        problem(f"{where}: more than one repository has default = true ({', '.join(r.name for r in marked)})")
    if repos:
        chosen = marked[0] if marked else repos[0]
        repos = [replace(r, default=r is chosen) for r in repos]
    return repos, _documents(data.get("documents", {}), f"{where}: [documents]", problem)


def _repository(entry: dict, where: str, base: Path, problem: Callable[[str], None], default_interval_s: int,
                default_git_pull: bool) -> RepoConfig | None:
    for key in sorted(set(entry) - _REPO_KEYS):
        problem(f"{where}: unknown key {key!r} (expected {', '.join(sorted(_REPO_KEYS))})")
    name, raw_path = entry.get("name"), entry.get("path")
    if not isinstance(name, str) or not REPO_NAME.match(name) or name.lower() in _RESERVED:
        problem(f"{where}: name must be 1-40 letters, digits, '.', '_' or '-' (and not 'all'), got {name!r}")
        return None
    where = f"{where} ({name})"
    if not isinstance(raw_path, str) or not raw_path.strip():
        problem(f"{where}: path must be a non-empty string")
        return None
    path = _resolve(raw_path, base)
    web_url = _typed(entry, "web_url", str, None, where, problem)
    if web_url is not None:
        try:
            web_url = http_url(web_url.strip()).rstrip("/")
        except ValueError as exc:
            problem(f"{where}: web_url: {exc}")
            web_url = None
    index_path = _typed(entry, "index_path", str, None, where, problem)
    git_pull = _typed(entry, "git_pull", bool, default_git_pull, where, problem)
    interval = _typed(entry, "reindex_interval_s", int, default_interval_s, where, problem)
    if isinstance(interval, int) and not 0 <= interval <= 7 * 86400:
        problem(f"{where}: reindex_interval_s must be between 0 and 604800, got {interval}")
        interval = default_interval_s
    default = _typed(entry, "default", bool, False, where, problem)
    github = _typed(entry, "github", str, None, where, problem)
    if github is not None:
        try:
            github = github_repository(github)
        except ValueError as exc:
            problem(f"{where}: github: {exc}")
            github = None
    token_env = _typed(entry, "github_token_env", str, None, where, problem)
    if token_env is not None and not _ENV_NAME.match(token_env):
        problem(f"{where}: github_token_env must be an environment variable name such as API_GITHUB_TOKEN")
        token_env = None
    include = _patterns(entry, "include", where, problem)
    exclude = _patterns(entry, "exclude", where, problem)
    try:
        scope = PathScope(include=include, exclude=exclude)
    except ValueError as exc:
        problem(f"{where}: {exc}")
        scope = PathScope()
    return RepoConfig(name=name, path=path, web_url=web_url,
                      index_path=_resolve(index_path, base) if index_path else None, git_pull=git_pull,
                      scope=scope, reindex_interval_s=interval, default=default, github=github,
                      github_token_env=token_env)


def _resolve(raw: str, base: Path) -> Path:
    path = Path(os.path.expandvars(raw.strip())).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def _typed(entry: dict, key: str, kind: type, default: Any, where: str, problem: Callable[[str], None]) -> Any:
    if key not in entry:
        return default
    value = entry[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        problem(f"{where}: {key} must be a {kind.__name__}, got {value!r}")
        return default
    return value


def _patterns(entry: dict, key: str, where: str, problem: Callable[[str], None]) -> tuple[str, ...]:
    value = entry.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problem(f"{where}: {key} must be a list of patterns such as [\"src/**\"]")
        return ()
    return tuple(value)


def _documents(section: Any, where: str, problem: Callable[[str], None]) -> DocumentsConfig:
    if not isinstance(section, dict):
        problem(f"{where}: must be a table")
        return DocumentsConfig()
    for key in sorted(set(section) - _DOC_KEYS):
        problem(f"{where}: unknown key {key!r} (expected {', '.join(sorted(_DOC_KEYS))})")
    max_chars = _typed(section, "max_chars", int, DEFAULT_MAX_DOCUMENT_CHARS, where, problem)
    if not 1 <= max_chars <= 10_000_000:
        problem(f"{where}: max_chars must be between 1 and 10000000, got {max_chars}")
        max_chars = DEFAULT_MAX_DOCUMENT_CHARS
    savers = section.get("savers", [])
    if not isinstance(savers, list) or not all(isinstance(s, str) and _SLACK_ID.match(s) for s in savers):
        problem(f"{where}: savers must be a list of Slack user or user group ids such as [\"U012ABCDEF\"]")
        savers = []
    return DocumentsConfig(max_chars=max_chars, savers=frozenset(savers))
