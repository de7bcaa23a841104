"""The repositories one bot serves: their engines, updaters and schedule leases, and how a question picks one.

    opened = open_repositories(settings.repository_configs, embeddings=…, reranker=…)   # never raises per repo
    repos = RepositorySet.build(opened, state=handle, clock=runtime.clock, …)            # bot.compose does this
    repos.get("api").engine          # a Repository: config, engine, reindexer, lease (or error)
    repos.target("all")              # an AnswerTarget: the engine (federated for "all"), tools, readiness

One :class:`rag.engine.Engine` and index per repository, each with its own
:class:`rag.ingest.reindexer.Reindexer` (so its own lock and run history) and, with a
state store and a schedule, its own :class:`bot.scheduler.ScheduleLease`
``reindex:<name>``. A repository whose path is missing, or whose index cannot be
opened, is kept in the set as *broken*: reported in the status and by ``/sz-repo``,
refused with a sentence when a question names it, never fatal to the others.

The default repository (``default = true``, else the first) answers DMs and
channels with no binding (:mod:`bot.scoping`); if it is broken the first serving
repository stands in, and the log says so. With no serving repository at all the
bot cannot start (:class:`NoRepositoryError`).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config_file import RepoConfig
from rag.engine import Engine
from rag.errors import RagError, UserError
from rag.federation import ALL, FederatedEngine

__all__ = ["AnswerTarget", "BrokenRepositoryError", "NoRepositoryError", "OpenedRepository", "Repository",
           "RepositorySet", "UnknownRepositoryError", "extra_sources", "open_repositories", "ALL"]

log = logging.getLogger(__name__)


class UnknownRepositoryError(UserError):
    """A question, command or request named a repository that is not configured; the message lists them."""


class BrokenRepositoryError(UserError):
    """The named repository is configured but cannot serve (missing path, unusable index); the message says why."""


class NoRepositoryError(RagError):
    """No configured repository could be opened: nothing to serve."""


def extra_sources(config: RepoConfig) -> tuple:
    """The sources refreshed with ``config``'s index beside its files (``Reindexer(sources=…)``): its GitHub
    issues and pull requests when it names ``github`` (:class:`rag.sources.github.GitHubFetcher`), else none."""
    if config.github_source is None or not config.github_source.enabled:
        return ()
    from rag.sources.github import GitHubFetcher

    return (GitHubFetcher(config.github_source),)


@dataclass
class OpenedRepository:
    """One configured repository as opened: ``engine`` or, when it could not be opened, ``error`` (one line)."""

    config: RepoConfig
    engine: Engine | None = None
    error: str | None = None


def open_repositories(configs: Iterable[RepoConfig], *, embeddings=None, reranker=None,
                      open_engine: Callable[..., Engine] = Engine.open) -> list[OpenedRepository]:
    """Open every repository's engine; one that fails is logged (warning) and returned with its ``error``.

    Args:
        configs: the repositories (``Settings.repository_configs``).
        embeddings, reranker: the shared providers handed to every engine.
        open_engine: ``Engine.open`` (a test seam).
    """
    opened = []
    for config in configs:
        try:
            engine = open_engine(config.path, index_path=config.index_path, embeddings=embeddings,
                                 reranker=reranker, name=config.name,
                                 scope=None if config.scope.empty else config.scope)
        except (RagError, OSError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning("repository %s is skipped: %s", config.name, reason)
            opened.append(OpenedRepository(config, error=reason))
            continue
        opened.append(OpenedRepository(config, engine=engine))
    return opened


@dataclass
class Repository:
    """One served repository: its configuration and, unless broken, its engine, updater and lease.

    ``tools`` (the model's tools acting on this repository) is set by the composition root once
    the bot context exists (the live tools read it).
    """

    config: RepoConfig
    engine: Engine | None = None
    error: str | None = None
    reindexer: Any = None
    lease: Any = None
    tools: Any = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def ok(self) -> bool:
        """Whether it serves (its engine opened)."""
        return self.engine is not None


@dataclass(frozen=True)
class AnswerTarget:
    """What one question is answered from.

    Attributes:
        name: the repository's name, or ``"all"``.
        engine: an :class:`rag.engine.Engine`, or a :class:`rag.federation.FederatedEngine` for ``all``.
        tools: the model's tools acting on it (``None``: none).
        require_ready: raises ``IndexBuildingError`` while its index has no generation (``None``: no check).
        repositories: the repositories it covers.
    """

    name: str
    engine: Any
    tools: Any = None
    require_ready: Callable[[], None] | None = None
    repositories: tuple[Repository, ...] = field(default=())


class RepositorySet:
    """The bot's repositories, in configuration order (module docstring).

    Args:
        repositories: every configured repository (broken ones included).
        federated_tools: ``(FederatedEngine) -> tools`` for ``all`` answers (set by the composition root).

    Raises:
        NoRepositoryError: none of them serves.
    """

    def __init__(self, repositories: Sequence[Repository]) -> None:
        self._repos = {r.name: r for r in repositories}
        serving = [r for r in repositories if r.ok]
        if not serving:
            reasons = "; ".join(f"{r.name}: {r.error}" for r in repositories) or "none is configured"
            raise NoRepositoryError(f"No repository can be served ({reasons}).")
        marked = next((r for r in repositories if r.config.default), repositories[0])
        if not marked.ok:
            log.warning("the default repository %s cannot serve (%s); %s answers instead",
                        marked.name, marked.error, serving[0].name)
            marked = serving[0]
        self.default = marked
        self.federated_tools: Callable[[FederatedEngine], Any] | None = None
        self._federated: FederatedEngine | None = None

    def __iter__(self):
        return iter(self._repos.values())

    def __len__(self) -> int:
        return len(self._repos)

    @property
    def names(self) -> list[str]:
        """Every configured name, in order."""
        return list(self._repos)

    def serving(self) -> list[Repository]:
        """The repositories that serve, in order."""
        return [r for r in self._repos.values() if r.ok]

    def find(self, name: str | None) -> Repository | None:
        """The repository called ``name`` (case-insensitive), or ``None``."""
        if not name:
            return None
        if name in self._repos:
            return self._repos[name]
        lowered = name.lower()
        return next((r for r in self._repos.values() if r.name.lower() == lowered), None)

    def get(self, name: str | None) -> Repository:
        """The serving repository called ``name`` (``None``: the default).

        Raises:
            UnknownRepositoryError: no repository has that name (the message lists the names).
            BrokenRepositoryError: it is configured but cannot serve.
        """
        if name is None:
            return self.default
        repo = self.find(name)
        if repo is None:
            raise UnknownRepositoryError(f"There is no repository called {name[:60]!r}; "
                                         f"choose one of {', '.join(self.names)} (or all).")
        if not repo.ok:
            raise BrokenRepositoryError(f"The repository {repo.name} cannot be searched right now: {repo.error}")
        return repo

    def federated(self) -> FederatedEngine:
        """Every serving repository as one :class:`FederatedEngine` (built once)."""
        if self._federated is None:
            self._federated = FederatedEngine({r.name: r.engine for r in self.serving()})
        return self._federated

    def target(self, name: str | None) -> AnswerTarget:
        """What a question naming ``name`` (``None``: the default, ``"all"``: every serving repository)
        is answered from. Raises as :meth:`get`."""
        if name is not None and name.lower() == ALL:
            serving = tuple(self.serving())
            if len(serving) == 1:
                return self._single(serving[0])
            federated = self.federated()
            ready = [r.reindexer.require_ready for r in serving if r.reindexer is not None]

            def require_ready() -> None:
                errors = []
                for check in ready:
                    try:
                        check()
                        return  # one repository with an index is enough to answer
                    except UserError as err:
                        errors.append(err)
                if errors:
                    raise errors[0]

            tools = self.federated_tools(federated) if self.federated_tools is not None else None
            return AnswerTarget(ALL, federated, tools, require_ready if ready else None, serving)
        return self._single(self.get(name))

    @staticmethod
    def _single(repo: Repository) -> AnswerTarget:
        return AnswerTarget(repo.name, repo.engine, repo.tools,
                            repo.reindexer.require_ready if repo.reindexer is not None else None, (repo,))
