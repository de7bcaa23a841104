"""Sources over copies in a ranking: build output never stands beside (or above) its source.

The index records which files are copies of which indexed sources
(:mod:`rag.ingest.copies`: compiled JavaScript and declarations of TypeScript, source-mapped
bundles, ``PKG-INFO``, near-identical files). A copy matches a question for the same words
(or meaning) as its source, so without care an npm package that ships ``src/*.ts`` and
``dist/*.js``/``*.cjs``/``*.d.ts`` fills the top of a result list with one module several
times. :func:`prefer_sources` rewrites a ranked candidate list so that:

- a copy whose source has a candidate anywhere in the pool is replaced, at the copy's
  rank, by that source's best candidate (the copy's score is evidence for its source);
  a bundle (a copy of several sources, by its source map) by the candidate of its sources that
  shares the most names with the copy's chunk (:func:`corresponding`): the bundle's chunk is
  the compiled text of one of them, not of the first source its map lists; a bundle's chunk sharing
  too few names with every candidate of its sources (an inlined dependency) is dropped; only a bundle's
  first chunk lifts its source to its own score (fusion gives every chunk of a file the file's score, which the
  bundle's best chunk earned: async 3.2.6's ``dist/async.js`` lifted ``retry.js`` over ``ensureAsync.js`` with
  a chunk of retry's documentation, for a question about ``ensureAsync``);
- a copy whose sources were all met earlier is dropped;
- a copy whose sources are not indexed stays: it is the best we have (the index only
  records copies of indexed files in the first place).

So a source and its copy never appear in one answer, and the source ranks at least where
its copy did.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Protocol, TypeVar

__all__ = ["prefer_sources", "corresponding", "original_sources", "FOREIGN", "MIN_BUNDLE_NAMES",
           "MIN_BUNDLE_NAME_SHARE"]

_NAME = re.compile(r"[A-Za-z_$][\w$]{3,}")
"""A name of four characters or more: what compiling or bundling keeps of a source's text (identifiers,
property names, string words), while it changes the syntax around them."""


MIN_BUNDLE_NAMES = 12
"""A bundle's chunk with fewer names than this is too small to judge by :data:`MIN_BUNDLE_NAME_SHARE`."""
MIN_BUNDLE_NAME_SHARE = 0.3
"""A bundle's chunk of at least :data:`MIN_BUNDLE_NAMES` names sharing fewer than this share of them with every
candidate of its sources was compiled from none of them: from a dependency the bundle inlines (class-validator
0.14.1's UMD bundle holds validator.js and libphonenumber-js; its source map lists them beside the package's own
modules) or from a part of a source no candidate holds. :func:`corresponding` says so (:data:`FOREIGN`) and
:func:`prefer_sources` drops the chunk, which used to lift the source sharing the most names (a few common ones:
``IsPhoneNumber.js`` for chunks of libphonenumber-js) into the answer. Measured on class-validator's questions of
``eval/heldout-14.jsonl``: a bundle chunk's names shared with the source chunk it maps back to, 0.45-0.99 where
that is the chunk it was compiled from, 0.10-0.25 for inlined dependencies."""
FOREIGN = object()
"""What :func:`corresponding` returns for a bundle's chunk compiled from none of the candidates."""


class _Ranked(Protocol):
    id: int
    path: str
    score: float
    text: str


C = TypeVar("C", bound=_Ranked)


def _names(candidate: _Ranked, cache: dict[int, frozenset[str]]) -> frozenset[str]:
    """The names (:data:`_NAME`) of a candidate's text, found once per candidate id in ``cache``."""
    found = cache.get(candidate.id)
    if found is None:
        found = cache[candidate.id] = frozenset(_NAME.findall(candidate.text))
    return found


def corresponding(copy: C, sources: Sequence[str], by_path: Mapping[str, Sequence[C]], *,
                  cache: dict[int, frozenset[str]] | None = None) -> C | object | None:
    """The candidate of ``sources`` (best source first; ``by_path``: each path's candidates, best first)
    whose text shares the most names (:data:`_NAME`) with the ``copy`` candidate's text: the source
    region a chunk of a bundle was compiled from. Ties go to the earlier source, then the better
    candidate; when no candidate shares a name, the first source's best candidate; ``None`` when no
    source has a candidate. ``cache``: candidate id → its names, shared by the calls of one ranking (a
    bundle's sources have many candidates, each read once).

    Example: a chunk of ``dist/index.js`` holding ``const miniSerializeError = (value) => …`` is
    answered by the chunk of ``src/createAsyncThunk.ts`` defining it, not by ``src/listener.ts``,
    the first source in the bundle's map that has a candidate. :data:`FOREIGN` when the chunk shares too few
    names with every candidate to be compiled from one (:data:`MIN_BUNDLE_NAME_SHARE`)."""
    options = [c for s in sources for c in by_path.get(s, ())]
    if not options:
        return None
    cache = {} if cache is None else cache
    names = _names(copy, cache)
    best, shared = options[0], 0
    for option in options:
        common = len(names & _names(option, cache))
        if common > shared:
            best, shared = option, common
    if len(names) >= MIN_BUNDLE_NAMES and shared < MIN_BUNDLE_NAME_SHARE * len(names):
        return FOREIGN
    return best


def original_sources(copies: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """``copies`` (copy path → its sources, best first) with every source that is itself a copy replaced by its
    own original sources, in order, each once: a copy of a copy stands for the original.

    class-validator 0.14.1's UMD bundle maps its chunks to ``esm5/`` modules, which are copies of ``esm2015/``
    (:mod:`rag.ingest.copies` rule 1b): the bundle's chunks were answered by the ES5 copy, beside its source.
    A cycle (never recorded by the rules; guarded all the same) keeps the sources as recorded.
    """
    def resolve(path: str, trail: frozenset[str]) -> list[str]:
        found: list[str] = []
        for source in copies.get(path, ()):
            if source in trail:
                continue
            found += resolve(source, trail | {source}) if source in copies else [source]
        return found

    out: dict[str, tuple[str, ...]] = {}
    for path, sources in copies.items():
        if any(source in copies for source in sources):
            out[path] = tuple(dict.fromkeys(resolve(path, frozenset((path,))))) or tuple(sources)
        else:
            out[path] = tuple(sources)
    return out


def prefer_sources(ranked: Sequence[C], copies: Mapping[str, Sequence[str]], *,
                   pool: Sequence[C] = (), keep: Collection[str] = ()) -> list[C]:
    """``ranked`` (best first) with copies replaced by their sources (module docstring).

    Args:
        ranked: candidates sorted by score, best first (``id``, ``path``, ``score``).
        copies: copy path → its indexed source paths, best source first.
        pool: further candidates a source may be taken from when it is not in ``ranked``
            (e.g. the lexical candidates before fusion dropped them); ``ranked`` first.
        keep: copies the question names by their exact path ("in ``esm/handler.js``, how …"): they
            stay (their sources are not added beside them).

    Returns:
        A new list sorted by score (stable): sources lifted to their copy's score keep the
        copy's place. Candidates are the same objects; a lifted source's ``score`` is raised.
    """
    if keep:
        copies = {path: sources for path, sources in copies.items() if path not in keep}
    if not copies or not any(c.path in copies for c in ranked):
        return list(ranked)
    by_path: dict[str, list[C]] = {}   # each path's candidates, best first
    names: dict[int, frozenset[str]] = {}
    seen: set[int] = set()
    for candidate in (*ranked, *pool):
        if candidate.id not in seen:
            seen.add(candidate.id)
            by_path.setdefault(candidate.path, []).append(candidate)
    out: list[C] = []
    used: set[int] = set()
    bundles_met: set[str] = set()
    for candidate in ranked:
        sources = copies.get(candidate.path)
        if not sources:
            if candidate.id not in used:
                used.add(candidate.id)
                out.append(candidate)
            continue
        lift = True
        if len(sources) > 1:   # a bundle: the source its chunk was compiled from
            alternative = corresponding(candidate, sources, by_path, cache=names)
            # a fused ranking gives every chunk of a file its file's score: the bundle's best chunk earned it
            lift = candidate.path not in bundles_met
            bundles_met.add(candidate.path)
        else:
            alternative = by_path[sources[0]][0] if sources[0] in by_path else None
        if alternative is FOREIGN:
            continue  # a bundle's chunk of code none of its sources' candidates holds (MIN_BUNDLE_NAME_SHARE)
        if alternative is None:
            used.add(candidate.id)
            out.append(candidate)  # the source is indexed but nothing of it matched: keep the copy
            continue
        if alternative.id in used:
            continue  # its source already ranks above
        if lift:
            alternative.score = max(alternative.score, candidate.score)
        used.add(alternative.id)
        out.append(alternative)
    out.sort(key=lambda c: c.score, reverse=True)
    return out
