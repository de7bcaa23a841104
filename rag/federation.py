"""Questions over several repositories at once: per-repository retrieval, then one ranking.

    engine = FederatedEngine({"api": api_engine, "web": web_engine})
    sources = engine.retrieve("how are sessions stored?", limit=8)   # each with .repo, path "api/src/…"
    packed = engine.pack_context(question, sources=sources)            # as Engine.pack_context

:class:`FederatedEngine` has the query surface :func:`rag.answer.orchestrator.answer_question`
uses (``retrieve``, ``retrieve_images``, ``pack_context``, ``read_lines``, ``secret_redactor``),
so an ``in:all`` question takes the same path as a question about one repository.

Paths. Two repositories may both have ``README.md``; in a fused list every path is
qualified as ``<repo>/<path>`` (documents keep their globally unique ``doc:<id>``), which
the model sees, cites and the citation check matches; :attr:`rag.types.Source.repo`
and :attr:`~rag.types.Source.repo_path` keep the repository and the path inside it, for
links and JSON.

Fusion (:func:`fuse_lists`). Each repository's retriever ranks its own chunks with its
own index statistics; the lists are disjoint (a chunk lives in one index). Reciprocal
Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009), which the retriever uses to merge
streams over *one* collection, degenerates here to a round-robin: with disjoint lists
each item's RRF score is ``1/(k + its rank)``, so the second repository's fifth hit ties
the first's fifth hit however weak it is. Scores are instead normalised per list by the
list's best score (max normalisation, the CombSUM/CombMAX family of Fox & Shaw, TREC-2
1994, as compared by Lee, SIGIR 1997) and merged by that value: every list's best hit
scores 1.0, so each repository that really matches is represented at the top, and the
rest keep the shape of their own list (a repository with one strong hit and a weak tail
contributes the one). A list the retriever returned empty (it abstains when nothing
really matches) contributes nothing. Duplicates (a global document indexed in every
repository) keep their best entry.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rag.documents import DOC_PREFIX  # document paths are never qualified: their ids are unique across indexes
from rag.engine import DEFAULT_BUDGET_TOKENS
from rag.types import ImageHit, Source

if TYPE_CHECKING:  # the packer is imported when a context is packed (bot.cli.selection only needs ALL)
    from rag.context.packer import CodeEntry, PackedContext

__all__ = ["FederatedEngine", "fuse_lists", "qualify", "split_qualified", "ALL", "DOC_PREFIX"]

log = logging.getLogger(__name__)

ALL = "all"
"""The name that selects every repository (``in:all``, ``--repo all``)."""


def qualify(repo: str, path: str) -> str:
    """``"api", "src/a.js"`` → ``"api/src/a.js"``; a document path stays as it is."""
    return path if path.startswith(DOC_PREFIX) else f"{repo}/{path}"


def split_qualified(path: str, names: Iterable[str]) -> tuple[str | None, str]:
    """``"api/src/a.js"`` → ``("api", "src/a.js")`` when ``api`` is one of ``names``; else ``(None, path)``."""
    head, sep, rest = path.partition("/")
    if sep and head in set(names):
        return head, rest
    return None, path


def fuse_lists(lists: Sequence[Sequence[Source]], *, limit: int) -> list[Source]:
    """One ranking of several repositories' result lists, best first (module docstring).

    Args:
        lists: each list best first, with the scores its retriever gave (higher is better).
        limit: sources kept (≥ 1).

    Returns:
        New :class:`Source` objects whose ``score`` is the normalised score in (0, 1];
        ties go to the higher rank in its own list, then to the earlier list.
    """
    scored: list[tuple[float, int, int, Source]] = []
    for order, items in enumerate(lists):
        if not items:
            continue
        top = max(s.score for s in items)
        for rank, source in enumerate(items):
            value = source.score / top if top > 0 else 1.0 / (rank + 1)
            scored.append((value, rank, order, source))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    fused: list[Source] = []
    seen: set[tuple[str, int, int]] = set()
    for value, _rank, _order, source in scored:
        key = (source.path, source.start, source.end)
        if key in seen:
            continue
        seen.add(key)
        fused.append(replace(source, score=value))
        if len(fused) >= limit:
            break
    return fused


class _Redactors:
    """Applies several repositories' secret-value redactors in turn (``redact(text) -> (text, n)``)."""

    def __init__(self, redactors: Sequence) -> None:
        self._redactors = [r for r in redactors if r is not None]
        self.digest = ":".join(getattr(r, "digest", "") for r in self._redactors)

    def redact(self, text: str) -> tuple[str, int]:
        total = 0
        for redactor in self._redactors:
            text, count = redactor.redact(text)
            total += count
        return text, total


class FederatedEngine:
    """The query surface of :class:`rag.engine.Engine` over several named engines (module docstring).

    Args:
        members: repository name → opened engine, in the order the repositories are listed.
        name: what the set is called (:data:`ALL`).

    Raises:
        ValueError: no member.
    """

    def __init__(self, members: Mapping[str, object], *, name: str = ALL) -> None:
        if not members:
            raise ValueError("a federated engine needs at least one repository")
        self.members = dict(members)
        self.name = name
        self.repo_root = Path(name)  # a label only: there is no one root

    def close(self) -> None:
        """Close every member engine (for a caller that opened them for this set, as the CLI does)."""
        for engine in self.members.values():
            engine.close()

    # -- retrieval -------------------------------------------------------------------------------

    def retrieve(self, question: str, *, limit: int = 8, kind: str | None = None, depth=None,
                 abstain: bool = True) -> list[Source]:
        """Each repository's top ``limit`` sources, fused (:func:`fuse_lists`) into the best ``limit``,
        paths qualified. A repository whose search fails is logged and left out. ``kind``,
        ``depth`` (:class:`rag.search.lexical.Depth`) and ``abstain=False`` are passed to each
        repository's retrieval (only when set, so a member's plain ``retrieve`` still serves)."""
        lists = []
        extra = {} if abstain else {"abstain": False}
        if depth is not None:
            extra["depth"] = depth
        for name, engine in self.members.items():
            try:
                found = engine.retrieve(question, limit=limit, kind=kind, **extra)
            except Exception as exc:  # noqa: BLE001 - one broken index must not cost the others
                log.warning("retrieval in %s failed (%s); fusing the other repositories", name, type(exc).__name__)
                continue
            lists.append([self._qualified(name, s) for s in found])
        return fuse_lists(lists, limit=limit)

    @staticmethod
    def _qualified(name: str, source: Source) -> Source:
        return replace(source, path=qualify(name, source.path), repo=name,
                       repo_path=None if source.path.startswith(DOC_PREFIX) else source.path)

    def absent_terms(self, question: str) -> list[str]:
        """Words of ``question`` that no repository of the set mentions (each member's
        :meth:`rag.engine.Engine.absent_terms`, in the first one's order). A repository whose index
        cannot be read is logged and left out; when none can be, ``[]``."""
        found: list[list[str]] = []
        for name, engine in self.members.items():
            try:
                found.append(engine.absent_terms(question))
            except Exception as exc:  # noqa: BLE001 - one broken index must not cost the others
                log.warning("absent-word check in %s failed (%s)", name, type(exc).__name__)
        if not found:
            return []
        elsewhere = [{w.lower() for w in words} for words in found[1:]]
        return [w for w in found[0] if all(w.lower() in other for other in elsewhere)]

    def retrieve_images(self, question: str, *, limit: int = 6) -> list[ImageHit]:
        """Images of every repository whose path matches, paths qualified, best score first."""
        hits: list[ImageHit] = []
        for name, engine in self.members.items():
            try:
                found = engine.retrieve_images(question, limit=limit)
            except Exception as exc:  # noqa: BLE001
                log.warning("image search in %s failed (%s)", name, type(exc).__name__)
                continue
            hits += [ImageHit(qualify(name, h.path), h.url, h.score) for h in found]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    # -- context ---------------------------------------------------------------------------------

    def code_context(self, question: str, *, retrieved: list[Source], max_entries: int = 20) -> list[CodeEntry]:
        """Each repository's code context for its own retrieved sources, paths qualified."""
        entries: list[CodeEntry] = []
        for name, engine in self.members.items():
            mine = [replace(s, path=s.repo_path, repo_path=None) for s in retrieved
                    if s.repo == name and s.repo_path is not None]
            try:
                found = engine.code_context(question, retrieved=mine, max_entries=max_entries)
            except Exception as exc:  # noqa: BLE001 - code context is an extra
                log.warning("code context of %s failed (%s)", name, type(exc).__name__)
                continue
            entries += [replace(e, path=qualify(name, e.path) if e.path else None,
                                reason=f"{name}: {e.reason}") for e in found]
        return entries

    def pack_context(self, question: str, *, sources: list[Source], budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                     with_code: bool = True) -> PackedContext:
        """As :meth:`rag.engine.Engine.pack_context`, over the fused sources and every repository's code
        context: the same pool (the shown sources, a deeper retrieval and a source-only one, each
        fused over the repositories; :func:`rag.context.packer.context_sources`) and evidence spans read
        from each repository's files (:meth:`read_lines`)."""
        from rag.context import packer as _packer

        pool = _packer.context_sources(self.retrieve, question, sources)
        entries = self.code_context(question, retrieved=sources) if with_code else []
        return _packer.pack_context(question, sources=pool, code_entries=entries, budget_tokens=budget_tokens,
                                    read_lines=self.read_lines)

    # -- reading ---------------------------------------------------------------------------------

    def read_lines(self, path: str, start: int, end: int) -> str:
        """Lines of a qualified path (or a document, looked up in every repository).

        Raises:
            KeyError: no repository has ``path``.
        """
        repo, rest = split_qualified(path, self.members)
        if repo is not None:
            return self.members[repo].read_lines(rest, start, end)
        for engine in self.members.values():
            try:
                return engine.read_lines(path, start, end)
            except KeyError:
                continue
        raise KeyError(path)

    def indexed_paths(self) -> list[str]:
        """Every repository's indexed paths, qualified, sorted."""
        return sorted(qualify(name, p) for name, engine in self.members.items() for p in engine.indexed_paths())

    def secret_redactor(self) -> _Redactors:
        """Every repository's secret-file values as one redactor."""
        return _Redactors([engine.secret_redactor() for engine in self.members.values()])

    def routes(self) -> list[dict]:
        """Every repository's HTTP routes (``engine.code_graph().routes()``), ``path`` qualified, with ``repo``."""
        found: list[dict] = []
        for name, engine in self.members.items():
            for route in engine.code_graph().routes():
                record = route.to_json()
                record["path"] = qualify(name, str(record.get("path", "")))
                record["repo"] = name
                found.append(record)
        return found
