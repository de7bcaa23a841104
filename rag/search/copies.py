"""Sources over copies in a ranking: build output never stands beside (or above) its source.

The index records which files are copies of which indexed sources
(:mod:`rag.ingest.copies`: compiled JavaScript and declarations of TypeScript, source-mapped
bundles, ``PKG-INFO``, near-identical files). A copy matches a question for the same words
(or meaning) as its source, so without care an npm package that ships ``src/*.ts`` and
``dist/*.js``/``*.cjs``/``*.d.ts`` fills the top of a result list with one module several
times. :func:`prefer_sources` rewrites a ranked candidate list so that:

- a copy whose source has a candidate anywhere in the pool is replaced, at the copy's
  rank, by that source's best candidate (the copy's score is evidence for its source);
- a copy whose sources were all met earlier is dropped;
- a copy whose sources are not indexed stays: it is the best we have (the index only
  records copies of indexed files in the first place).

So a source and its copy never appear in one answer, and the source ranks at least where
its copy did.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

__all__ = ["prefer_sources"]


class _Ranked(Protocol):
    id: int
    path: str
    score: float


C = TypeVar("C", bound=_Ranked)


def prefer_sources(ranked: Sequence[C], copies: Mapping[str, Sequence[str]], *,
                   pool: Sequence[C] = ()) -> list[C]:
    """``ranked`` (best first) with copies replaced by their sources (module docstring).

    Args:
        ranked: candidates sorted by score, best first (``id``, ``path``, ``score``).
        copies: copy path → its indexed source paths, best source first.
        pool: further candidates a source may be taken from when it is not in ``ranked``
            (e.g. the lexical candidates before fusion dropped them); ``ranked`` first.

    Returns:
        A new list sorted by score (stable): sources lifted to their copy's score keep the
        copy's place. Candidates are the same objects; a lifted source's ``score`` is raised.
    """
    if not copies or not any(c.path in copies for c in ranked):
        return list(ranked)
    best_of: dict[str, C] = {}
    for candidate in (*ranked, *pool):
        best_of.setdefault(candidate.path, candidate)
    out: list[C] = []
    used: set[int] = set()
    for candidate in ranked:
        sources = copies.get(candidate.path)
        if not sources:
            if candidate.id not in used:
                used.add(candidate.id)
                out.append(candidate)
            continue
        alternative = next((best_of[s] for s in sources if s in best_of), None)
        if alternative is None:
            used.add(candidate.id)
            out.append(candidate)  # the source is indexed but nothing of it matched: keep the copy
            continue
        if alternative.id in used:
            continue  # its source already ranks above
        alternative.score = max(alternative.score, candidate.score)
        used.add(alternative.id)
        out.append(alternative)
    out.sort(key=lambda c: c.score, reverse=True)
    return out
