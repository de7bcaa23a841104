"""Source files in the leading places: the implementation is among the first files a question gets.

    cands = lead_with_sources(cands, query, lead=4, min_source=3)   # after fusion and reranking, before diversify

A question about behaviour ("why is a large body written in 64 KiB slices?") is answered by the
code, but documentation is written in the question's words and ranks above it, in BM25 and in
the vectors alike: measured on ``dev-hard`` with MiniLM (issue 15), hybrid retrieval put three
documentation pages first for most paraphrased questions it missed, with the source file that
answers them at places 4 to 10. So among the first ``lead`` files of a ranking (four,
:attr:`rag.search.lexical.RetrievalPolicy.lead_files`), at least ``min_source`` (three) are
implementation files (:func:`is_implementation`) when the ranking holds that many: the best
remaining source file takes the first place that would otherwise leave too few for the quota.
Documentation keeps the other leading places, in its own order, and every file keeps its chunks and
their order. The context pool does the same for the packed context
(:class:`rag.context.pool.MixPolicy`); this is the list the user is shown, and what the pool starts from.

The retriever applies it to rankings fused with the vectors only. With BM25 alone the source files
it would promote share the question's words but seldom answer it (``slackzilla eval``, BM25 + structure:
``dev-hard`` R@5 0.636 → 0.659 but ``dev`` 0.981 → 0.963, its concept questions 0.944 → 0.889, a
documentation page that answered pushed out of the first five).

Not applied (the ranking is returned unchanged) when the question asks for prose or history (the
``docs`` and ``release`` intents of :func:`rag.search.query.analyze`: "how do I…", "what changed
in 4.0"), asks about tests, or names files (explicit paths are pinned by their hard boost and keep
their places, above the quota).

Scores follow the new order: the files' best scores are dealt out again, best to the first file,
so a promoted file takes the score of the place it took and a file moved down the score of its
new place; within a file every chunk moves by the same amount. A merged ranking that sorts by
score (:mod:`rag.federation`) keeps the order.

Measured with ``slackzilla eval`` (MiniLM hybrid, R@5 / MRR@10; ``lead``/``min_source``):

=============  ===============  ===============  ===============
quota          ``dev-hard``     ``dev``          held-out
=============  ===============  ===============  ===============
none           0.750 / 0.515    0.963 / 0.917    0.976 / 0.878
3 / 2          0.795 / 0.541    0.981 / 0.915    0.976 / 0.878
**4 / 3**      0.841 / 0.549    1.000 / 0.917    0.976 / 0.878
5 / 3          0.841 / 0.532    1.000 / 0.924    0.976 / 0.878
5 / 4          0.818 / 0.548    1.000 / 0.922    0.976 / 0.878
6 / 4          0.841 / 0.531    0.981 / 0.923    0.976 / 0.878
=============  ===============  ===============  ===============

With 4 / 3, ``dev-hard`` paraphrase 0.652 → 0.783, structure 0.900 → 1.000, multi 0.818 → 0.818; and
the packed context holds the gold lines more often (``shared/eval/context_recall.py``, ``dev-hard``
0.614 → 0.659; ``dev`` and held-out unchanged).
"""
from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Protocol, TypeVar

from rag.ingest.walk import DECLARATIONS
from rag.search.lexical import LOW_VALUE_DIRS
from rag.search.query import Query

__all__ = ["EXEMPT_INTENTS", "is_implementation", "lead_with_sources"]

SOURCE_KIND = "source"
EXEMPT_INTENTS = frozenset({"docs", "release", "test"})
"""Question intents (:attr:`rag.search.query.Query.intents`) whose answer is prose, history or tests:
their ranking is left as fused."""


class Ranked(Protocol):
    """What :func:`lead_with_sources` reads and sets of a candidate (:class:`rag.search.lexical.Candidate`)."""

    id: int
    path: str
    kind: str
    score: float


C = TypeVar("C", bound=Ranked)


def is_implementation(path: str, kind: str) -> bool:
    """Whether a file of ``kind`` at ``path`` counts as implementation for the quota: a ``source``
    file, not a type declaration (``.d.ts``, ``.d.mts``, ``.d.cts``) and not in a test, benchmark, fixture or example
    directory (:data:`rag.search.lexical.LOW_VALUE_DIRS`, which the intent prior demotes too)."""
    return kind == SOURCE_KIND and not path.lower().endswith(DECLARATIONS) and not LOW_VALUE_DIRS.search(path)


def lead_with_sources(cands: Sequence[C], query: Query, *, lead: int, min_source: int,
                      pinned: Set[int] = frozenset(),
                      min_score: float = float("-inf")) -> list[C]:
    """``cands`` (best first) with implementation files moved into the leading places (module docstring).

    Args:
        cands: ranked candidates, best first; a file's place is that of its first candidate.
        query: the analysed question (its intents exempt it, see :data:`EXEMPT_INTENTS`).
        lead: the leading file places the quota applies to (0 turns it off).
        min_source: implementation files wanted among them (:func:`is_implementation`; 0 turns it off;
            more than ``lead`` counts as ``lead``).
        pinned: ids of candidates with a hard structural boost (a named file, its dependants; as
            :func:`rag.search.rerank.rerank_candidates` takes them): their files keep their places
            ahead of the others and do not count towards the quota.
        min_score: a source file whose best score is below this is not promoted (the ranking's
            relative threshold: it would not be shown at its own place).

    Returns:
        A new list: the same candidates, files reordered and their scores dealt out again so that
        scores still decrease along the list; within a file the order is unchanged. The input list
        is returned as a new list unchanged when nothing has to move.

    Example::

        # files in order a.md b.md c.md x.js d.md y.js z.js, lead 4, min_source 3:
        # a.md x.js y.js z.js b.md c.md d.md   (a.md keeps the one place the quota leaves)
        # with only x.js and y.js among the sources: a.md b.md x.js y.js c.md d.md
    """
    if lead <= 0 or min_source <= 0 or query.intents & EXEMPT_INTENTS or query.paths:
        return list(cands)
    files: dict[str, list[C]] = {}
    for c in cands:
        files.setdefault(c.path, []).append(c)
    order = list(files)
    held = [p for p in order if any(c.id in pinned for c in files[p])]
    free = [p for p in order if p not in held]
    is_source = {p: is_implementation(p, files[p][0].kind) and files[p][0].score >= min_score for p in free}
    lead = min(lead, len(free))
    wanted = min(min_source, lead, sum(is_source.values()))
    new: list[str] = []
    rest = list(free)
    while rest:
        if len(new) < lead:
            missing = wanted - sum(is_source[p] for p in new)
            if missing >= lead - len(new):   # every remaining leading place must go to a source file
                pick = next(p for p in rest if is_source[p])
                new.append(pick)
                rest.remove(pick)
                continue
        new.append(rest.pop(0))
    if new == free:
        return list(cands)
    slots = sorted((files[p][0].score for p in free), reverse=True)
    for path, slot in zip(new, slots):
        shift = slot - files[path][0].score
        if shift:
            for c in files[path]:
                c.score += shift
    return [c for path in (*held, *new) for c in files[path]]
