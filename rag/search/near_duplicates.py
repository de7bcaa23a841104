"""Near-duplicate chunks of other files after the first: one of a family of variants stands for it.

Repositories keep families of near-identical files that no build made, so the index records no
copy relation between them (:mod:`rag.ingest.copies` keeps two equally hand-written siblings as
sources, since a question may be about the line where they differ): a tutorial in one variant per
Python version (FastAPI's ``docs_src/background_tasks/tutorial002.py``, ``tutorial002_py310.py``,
``tutorial002_an.py`` …), versioned copies of a module, templates. Both streams rank such chunks
together: same words, same vector. Measured on FastAPI 0.115.0, "How are background tasks run after
the response is sent?" got ``fastapi/background.py`` and then five variants of one tutorial in the
first six places.

:func:`demote_near_duplicates` keeps the best-ranked file of such a family in its place and moves
the others' chunks to the end of the ranking (below every distinct candidate, so they
are shown only when too little else matches): a search engine's "similar results omitted". Two
chunks are near-duplicates when their informative lines (stripped, at least
:data:`~rag.ingest.copies.MIN_LINE_CHARS` characters) have a Jaccard similarity of at least
:data:`NEAR_DUPLICATE_JACCARD` (Broder 1997, "On the resemblance and containment of documents", with
single-line shingles, as the copy detection, whose whitespace collapsing and hashing would cost about
five times as much per question). The variants above share 65-81% of their lines; two distinct
modules of one package rarely share a third.
"""
from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Protocol, TypeVar

from rag.ingest.copies import MIN_LINE_CHARS

__all__ = ["NEAR_DUPLICATE_JACCARD", "MIN_SHARED_LINES", "WINDOW", "demote_near_duplicates"]

NEAR_DUPLICATE_JACCARD = 0.6
"""Chunks of two files sharing at least this Jaccard share of their informative lines are variants of
one text (module docstring: the per-version variants of one tutorial share 0.65-0.81)."""
MIN_SHARED_LINES = 5
"""Chunks with fewer informative lines than this are never called near-duplicates (a few import lines
or a short stub say nothing about a family)."""
WINDOW = 16
"""Only the best chunk of each of the first this many files is compared: the sources shown (8, at most
2 a file) come from them, and a comparison costs about 15 µs a chunk (eslint 9.39.5's bench
questions: 0.54 ms a question when the first 32 chunks were compared)."""


class _Chunk(Protocol):
    id: int
    path: str
    text: str
    score: float


C = TypeVar("C", bound=_Chunk)


def demote_near_duplicates(ranked: Sequence[C], *, pinned: Set[int] = frozenset(),
                           threshold: float = NEAR_DUPLICATE_JACCARD, min_lines: int = MIN_SHARED_LINES,
                           window: int = WINDOW) -> list[C]:
    """``ranked`` (best first) with the files whose best chunk is a near-duplicate of a better-ranked
    file's moved to the end, all their chunks (module docstring).

    Args:
        ranked: candidates sorted by score, best first (``id``, ``path``, ``text``, ``score``).
        pinned: ids of the candidates a hard structural boost pinned (a file the question names):
            never demoted, however like another they are.
        threshold: the line Jaccard from which two chunks are near-duplicates (0..1].
        min_lines: informative lines both chunks need.
        window: how many of the first files are compared (each by its best chunk); later files keep
            their places.

    Returns:
        A new list: the distinct candidates in their order, then the demoted ones in theirs, each
        demoted candidate's ``score`` lowered to the last distinct candidate's when above it (so
        scores still fall along the list). The same objects; ``ranked`` itself is not reordered.
    """
    kept: list[C] = []
    demoted: list[C] = []
    verdict: dict[str, bool] = {}  # path → demoted, decided on its best (first) chunk
    seen: list[int] = []  # informative lines of each distinct file's best chunk compared
    holders: dict[str, list[int]] = {}  # informative line → indices in ``seen`` of the chunks holding it
    for candidate in ranked:
        if candidate.path not in verdict:
            verdict[candidate.path] = len(verdict) < window and candidate.id not in pinned and _is_variant(
                candidate, seen, holders, threshold=threshold, min_lines=min_lines)
        (demoted if verdict[candidate.path] and candidate.id not in pinned else kept).append(candidate)
    if demoted and kept:
        floor = kept[-1].score
        for candidate in demoted:
            candidate.score = min(candidate.score, floor)
    return kept + demoted


def _is_variant(candidate: _Chunk, seen: list[int], holders: dict[str, list[int]], *,
                threshold: float, min_lines: int) -> bool:
    """Whether ``candidate`` is a near-duplicate of a chunk in ``seen``; when not (and it has
    ``min_lines`` informative lines), it joins ``seen`` and ``holders``."""
    lines = {line for line in map(str.strip, candidate.text.split("\n")) if len(line) >= MIN_LINE_CHARS}
    if len(lines) < min_lines:
        return False
    shared: dict[int, int] = {}
    for line in lines:
        for index in holders.get(line, ()):
            shared[index] = shared.get(index, 0) + 1
    if any(common >= threshold * (len(lines) + seen[index] - common)  # |A ∩ B| ≥ t·|A ∪ B|
           for index, common in shared.items()):
        return True
    for line in lines:
        holders.setdefault(line, []).append(len(seen))
    seen.append(len(lines))
    return False
