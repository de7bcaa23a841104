"""Which repository a question in Slack is about: ``in:NAME``, the thread, the channel's binding, the default.

    scoping = Scoping(repos, state)                                   # bot.compose builds it
    choice = await scoping.choose("in:web how is the cart saved?", channel_id="C1", thread_ts=None)
    choice.repo, choice.question, choice.source                       # "web", "how is the cart saved?", "question"
    await scoping.bind("C1", "api", user_id="U0ADMIN")                # /sz-repo set api (admins)

The order, first match wins:

1. ``in:NAME`` (or ``in:all``) at the start of the question: this question only;
2. in a thread, the repository of the thread's first question (follow-ups keep it);
3. the channel's binding (``/sz-repo set NAME``);
4. the default repository (``default = true``, else the first): DMs and unbound channels.

Bindings live in the state store's ``repo_bindings`` table (SQLite or PostgreSQL, so they
survive restarts and are shared by replicas): ``channel:<id>`` until changed,
``thread:<channel>:<ts>`` for as long as the thread's turns are kept (a week). While the
store is unavailable this process's own bindings are used and the writes are queued
(:class:`bot.state.resilient.ResilientState`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from bot.repos import ALL, RepositorySet
from bot.state.resilient import ResilientState
from bot.state.store import DEFAULT_TURN_TTL_S

__all__ = ["Choice", "Scoping", "parse_scope", "channel_scope", "thread_scope"]

_IN = re.compile(r"^\s*in:([A-Za-z0-9][A-Za-z0-9_.-]{0,59})(?:\s+|$)", re.IGNORECASE)


def parse_scope(question: str) -> tuple[str | None, str]:
    """``"in:api how …"`` → ``("api", "how …")``; a question without a leading ``in:NAME`` → ``(None, question)``."""
    match = _IN.match(question or "")
    if match is None:
        return None, question
    return match.group(1), question[match.end():].strip()


def channel_scope(channel_id: str) -> str:
    """The binding key of a channel: ``channel:<id>``."""
    return f"channel:{channel_id}"


def thread_scope(channel_id: str | None, thread_ts: str) -> str:
    """The binding key of a thread: ``thread:<channel>:<ts>``."""
    return f"thread:{channel_id or '-'}:{thread_ts}"


@dataclass(frozen=True)
class Choice:
    """The repository a question is answered from.

    Attributes:
        repo: a configured name, or ``"all"``.
        question: the question without its ``in:NAME``.
        source: why: ``question`` (``in:NAME``), ``thread``, ``channel`` or ``default``.
    """

    repo: str
    question: str
    source: str


class Scoping:
    """Channel and thread bindings over the bot's repositories (module docstring).

    Args:
        repos: the served repositories.
        state: the state store handle (memory only: bindings last for this process).
        thread_ttl_s: how long a thread's repository is remembered (as long as its turns).
    """

    def __init__(self, repos: RepositorySet, state: ResilientState, *,
                 thread_ttl_s: float = DEFAULT_TURN_TTL_S) -> None:
        self.repos = repos
        self.state = state
        self.thread_ttl_s = thread_ttl_s
        self._local: dict[str, str] = {}

    async def _bound(self, scope: str) -> str | None:
        if self.state.enabled:
            ok, found = await self.state.acall("repo_bindings", lambda s: s.bound_repo(scope))
            if ok:
                return found
        return self._local.get(scope)

    async def _bind(self, scope: str, repo: str | None, *, set_by: str | None, ttl_s: float | None) -> None:
        if repo is None:
            self._local.pop(scope, None)
        else:
            self._local[scope] = repo
        if self.state.enabled:
            await self.state.awrite("repo_bindings", lambda s: s.bind_repo(scope, repo, set_by=set_by, ttl_s=ttl_s))

    def _known(self, name: str | None) -> str | None:
        """The configured spelling of ``name`` (``all`` included), or ``None`` for a name no longer configured."""
        if name is None:
            return None
        if name.lower() == ALL:
            return ALL
        repo = self.repos.find(name)
        return repo.name if repo is not None else None

    async def channel_repo(self, channel_id: str | None) -> tuple[str, str]:
        """``(repository, "channel" | "default")`` of a channel (DMs, ``D…``, always use the default)."""
        if channel_id and not channel_id.startswith("D"):
            bound = self._known(await self._bound(channel_scope(channel_id)))
            if bound is not None:
                return bound, "channel"
        return self.repos.default.name, "default"

    async def choose(self, question: str, *, channel_id: str | None, thread_ts: str | None) -> Choice:
        """The repository for ``question`` asked in ``channel_id`` (in ``thread_ts`` for a follow-up)."""
        named, rest = parse_scope(question)
        if named is not None:
            return Choice(self._known(named) or named, rest, "question")
        if thread_ts:
            bound = self._known(await self._bound(thread_scope(channel_id, thread_ts)))
            if bound is not None:
                return Choice(bound, question, "thread")
        repo, source = await self.channel_repo(channel_id)
        return Choice(repo, question, source)

    async def remember_thread(self, channel_id: str | None, thread_ts: str, repo: str) -> None:
        """Remember the repository of a thread's first question (a later call for the same thread keeps it)."""
        scope = thread_scope(channel_id, thread_ts)
        if await self._bound(scope) is None:
            await self._bind(scope, repo, set_by=None, ttl_s=self.thread_ttl_s)

    async def describe(self, channel_id: str | None) -> dict:
        """``{"current", "source", "default", "repositories": [{"name", "default", "ok", "error", "web_url"}]}``
        for ``/sz-repo`` (see :class:`commands.registry.RepoScoping`)."""
        current, source = await self.channel_repo(channel_id)
        return {
            "current": current, "source": source, "default": self.repos.default.name,
            "repositories": [{"name": r.name, "default": r is self.repos.default, "ok": r.ok, "error": r.error,
                              "web_url": r.config.web_url} for r in self.repos],
        }

    async def bind(self, channel_id: str | None, name: str, *, user_id: str | None) -> dict:
        """Bind the channel to ``name`` (``all`` allowed; ``default`` removes the binding).

        Returns:
            ``{"ok": True, "repo", "previous"}``, or ``{"ok": False, "error": sentence}`` for a DM, an
            unknown name or a repository that cannot serve (nothing is changed then).
        """
        if not channel_id or channel_id.startswith("D"):
            return {"ok": False, "error": "Direct messages always use the default repository; bind a channel instead."}
        previous, _ = await self.channel_repo(channel_id)
        if name.lower() == "default":
            await self._bind(channel_scope(channel_id), None, set_by=user_id, ttl_s=None)
            return {"ok": True, "repo": self.repos.default.name, "previous": previous, "cleared": True}
        known = self._known(name)
        if known is None:
            return {"ok": False, "error": f"There is no repository called {name[:60]!r}; choose one of "
                                          f"{', '.join(self.repos.names)} (or all)."}
        repo = self.repos.find(known)
        if repo is not None and not repo.ok:
            return {"ok": False, "error": f"The repository {repo.name} cannot be searched right now: {repo.error}"}
        await self._bind(channel_scope(channel_id), known, set_by=user_id, ttl_s=None)
        return {"ok": True, "repo": known, "previous": previous, "cleared": False}
