"""What ``--repo`` means for every command: a path, a repository named in ``slackzilla.toml``, or ``all``.

:func:`select_repositories` is the one reading of ``--repo``/``--index``: a configured name
first (case-insensitive), then a path (a configured repository with that root keeps its name,
web URL and include/exclude patterns). Without ``--repo`` and ``$REPO_PATH`` it is the
configured default repository, else the current directory.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from bot.config_file import DocumentsConfig, RepoConfig, find_config_file, read_config_file, resolve_github
from rag.config import ConfigError, GitHubConfig, engine_paths
from rag.federation import ALL

from bot.cli.environment import environment

__all__ = ["configured_documents", "configured_repositories", "select_repositories"]


def configured_documents() -> DocumentsConfig:
    """The ``[documents]`` options of the configuration file (defaults without one).

    Raises:
        ConfigError: the file is unusable.
    """
    file = find_config_file(environment())
    if file is None:
        return DocumentsConfig()
    problems: list[str] = []
    _, documents = read_config_file(file, problem=problems.append, default_interval_s=0)
    if problems:
        raise ConfigError(problems)
    return documents


def configured_repositories() -> list[RepoConfig]:
    """The repositories of ``$SLACKZILLA_CONFIG`` or ``./slackzilla.toml`` (``[]`` without a file).

    Raises:
        ConfigError: the file is unusable (every problem listed).
    """
    file = find_config_file(environment())
    if file is None:
        return []
    problems: list[str] = []
    repos, _ = read_config_file(file, problem=problems.append, default_interval_s=0)
    if not problems:
        repos = resolve_github(repos, base=GitHubConfig.from_env(environment()), env=environment(), problem=problems.append)
    if problems:
        raise ConfigError(problems)
    return repos


def _unconfigured(path: Path, index_path: Path | None) -> RepoConfig:
    """A repository given by path, outside ``slackzilla.toml``: ``GITHUB_REPOSITORY`` names its GitHub repository."""
    github = GitHubConfig.from_env(environment())
    source = github if github.enabled else None
    return RepoConfig(name=path.name or str(path), path=path, index_path=index_path, default=True,
                      github=source.repository if source else None, github_source=source)


def select_repositories(repo: Path | str | None, index_path: Path | None) -> list[RepoConfig]:
    """What ``--repo``/``--index`` select: one repository, or every configured one for ``all``.

    ``--index`` applies to a single repository only (with ``all`` it is refused). Without ``--repo``
    (``repo`` None), ``$REPO_PATH`` and ``$RAG_INDEX_PATH`` apply, then the configured default, then the
    current directory.

    Raises:
        click.UsageError: ``--index`` with ``all``.
        ConfigError: an unusable ``slackzilla.toml``.
    """
    if repo is None:  # no --repo (docs, repos): $REPO_PATH and $RAG_INDEX_PATH, as every other command
        env_repo, env_index = engine_paths(environment())
        repo, index_path = env_repo, index_path if index_path is not None else env_index
    configured = configured_repositories()
    text = str(repo) if repo is not None else None
    if text is not None and text.lower() == ALL:
        if index_path is not None:
            raise click.UsageError("--index names one index; it cannot be used with --repo all")
        if configured:
            return configured
        text = None  # without a configuration file "all" is the one repository
    if text is None:
        if configured:
            chosen = next((c for c in configured if c.default), configured[0])
            return [_with_index(chosen, index_path)]
        return [_unconfigured(Path.cwd(), index_path)]
    named = next((c for c in configured if c.name.lower() == text.lower()), None)
    if named is not None:
        return [_with_index(named, index_path)]
    path = Path(text).expanduser()
    resolved = path.resolve() if path.exists() else path
    same = next((c for c in configured if c.path == resolved), None)
    if same is not None:
        return [_with_index(same, index_path)]
    return [replace(_unconfigured(resolved, index_path), path=path)]


def _with_index(config: RepoConfig, index_path: Path | None) -> RepoConfig:
    from dataclasses import replace

    return replace(config, index_path=index_path) if index_path is not None else config
