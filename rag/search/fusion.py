"""Fusion: merge ranked lists from several retrieval streams (RRF, and z-score fusion of scores).

:func:`rag.search.lexical.fuse_streams` fuses the streams' *file* scores with
:func:`zscore_fusion` (issue 15: the shape of each stream's scores counts, not only
their order) and orders the chunks inside a file with :func:`reciprocal_rank_fusion`.

Each stream (BM25, vectors, structure …) ranks its own candidates; their raw
scores are not comparable (BM25 is unbounded, cosine lies in [-1, 1]), but
their ranks are. RRF scores an item by

    score(d) = Σ_s  weight_s / (k + rank_s(d) + 1)

over the streams ``s`` that returned ``d``, with ``rank_s`` 0-based (so the
top item of a stream contributes ``weight / (k + 1)``). ``k`` damps the
advantage of the very first ranks; ``k = 60`` is the value of the original
paper, G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank Fusion
outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009. The
per-stream weights are this project's addition (issue 7: BM25 0.6, vectors 0.4;
issue 15: adapted to the question by :func:`adaptive_weights`).

Fusion only reorders; it never invents candidates, so each stream should pass
a pool deeper than the final cut (``DEFAULT_CANDIDATE_POOL``).

Measured on the three eval sets with MiniLM (issue 15), RRF's constants hardly matter
here: k from 0 to 60, a vector pool of 20 to 200 chunks and the cosine floor moved R@5
by at most one question per set; with 10–50 files per stream, any file both streams list
at middling ranks outranks one stream's clear first, which :func:`zscore_fusion` avoids.
"""
from __future__ import annotations

import math
from typing import Hashable, Mapping, Sequence

__all__ = [
    "DEFAULT_RRF_K",
    "DEFAULT_WEIGHTS",
    "DEFAULT_CANDIDATE_POOL",
    "DEFAULT_LEXICAL_BASE",
    "DEFAULT_LEXICAL_SLOPE",
    "DEFAULT_ZSCORE_DEPTH",
    "adaptive_weights",
    "reciprocal_rank_fusion",
    "zscore_fusion",
]

DEFAULT_RRF_K = 60                                    # Cormack, Clarke & Büttcher 2009
DEFAULT_WEIGHTS: Mapping[str, float] = {"bm25": 0.6, "vectors": 0.4}   # issue 7
DEFAULT_CANDIDATE_POOL = 20                           # candidates per stream before fusion (issue 7: ≥ 20)
DEFAULT_LEXICAL_BASE = 0.45
"""Lexical weight of a question the lexical stream does not cover at all (see :func:`adaptive_weights`)."""
DEFAULT_LEXICAL_SLOPE = 0.3
"""Added lexical weight per unit of coverage (see :func:`adaptive_weights`)."""
DEFAULT_ZSCORE_DEPTH = 10
"""Items of each stream whose scores set its mean and spread in :func:`zscore_fusion` (the top ten: the
results a user sees; measured on the three eval sets with MiniLM, 10, 20 and 50 differ by at most one
question's rank per set)."""


def adaptive_weights(coverage: float, *, base: float = DEFAULT_LEXICAL_BASE,
                     slope: float = DEFAULT_LEXICAL_SLOPE) -> dict[str, float]:
    """RRF weights of the lexical and vector streams for one question, from how well BM25 covers it.

    ``coverage`` is the lexical stream's own evidence (:class:`rag.search.lexical.Evidence`):
    the share of the question's topical IDF mass its best chunk matches (0..1). A question
    written in the code's words (identifiers, paths, exact phrases) is covered and BM25
    ranks it best; a paraphrase shares few words with the code and the vectors rank it
    better. So ``w_lexical = clamp(base + slope × coverage, 0, 1)`` and ``w_vectors = 1 −
    w_lexical``: 0.45 with no coverage, 0.6 (issue 7's fixed weight) at coverage 0.5, 0.75
    when the best chunk matches every topical word.

    Why coverage: measured on the three eval sets with MiniLM vectors (questions where
    one stream ranks the gold file better than the other), lexical wins have mean coverage
    0.67, vector wins 0.43; the vector margin and stream agreement did not separate them.
    Base and slope were chosen so that at typical coverage the weights equal issue 7's,
    then checked on ``dev-hard``, ``dev`` and the held-out set together (R@5 0.750 → 0.773,
    0.981 → 0.981 and 1.000 → 1.000 in the offline replay of fused rankings).

    Example::

        adaptive_weights(0.5)  # {"bm25": 0.6, "vectors": 0.4}

    Raises:
        ValueError: ``coverage`` is not a finite number.
    """
    if not math.isfinite(coverage):
        raise ValueError(f"coverage must be a finite number, got {coverage}")
    lexical = min(1.0, max(0.0, base + slope * min(1.0, max(0.0, coverage))))
    return {"bm25": lexical, "vectors": 1.0 - lexical}


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[Hashable]],
    *,
    weights: Mapping[str, float],
    k: int = DEFAULT_RRF_K,
    limit: int | None = None,
) -> list[tuple[Hashable, float]]:
    """Fuse ranked lists into one, best first.

    Example::

        reciprocal_rank_fusion({"bm25": ["a", "b"], "vectors": ["b", "c"]},
                               weights={"bm25": 0.6, "vectors": 0.4})
        # b: 0.6/62 + 0.4/61,  a: 0.6/61,  c: 0.4/62
        # → [("b", 0.01623…), ("a", 0.00984…), ("c", 0.00645…)]

    Args:
        rankings: stream name → its items, best first. An item listed twice in
            one stream counts once, at its best rank. Empty streams are fine.
        weights: stream name → weight (finite, ≥ 0). Every stream in
            ``rankings`` needs one; extra names are ignored, so
            ``DEFAULT_WEIGHTS`` works when a stream is absent.
        k: the RRF constant (≥ 0).
        limit: keep only the first ``limit`` results (``None`` → all).

    Returns:
        ``[(item, score)]`` sorted by score descending; equal scores keep the
        order in which items were first met (streams in ``rankings`` order,
        each from its top), so the result is deterministic.

    Raises:
        ValueError: a stream without a weight, a negative or non-finite
            weight, or a negative ``k``.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    missing = [name for name in rankings if name not in weights]
    if missing:
        raise ValueError(f"no fusion weight for stream(s): {', '.join(map(str, missing))}")
    for name in rankings:
        weight = weights[name]
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"fusion weight for {name!r} must be a finite number >= 0, got {weight}")

    scores: dict[Hashable, float] = {}
    for name, items in rankings.items():
        weight = weights[name]
        seen: set[Hashable] = set()
        for rank, item in enumerate(items):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank + 1)
    fused = sorted(scores.items(), key=lambda pair: -pair[1])   # stable: ties keep first-met order
    return fused if limit is None else fused[: max(0, limit)]


def zscore_fusion(
    streams: Mapping[str, Mapping[Hashable, float]],
    *,
    weights: Mapping[str, float],
    depth: int = DEFAULT_ZSCORE_DEPTH,
) -> dict[Hashable, float]:
    """Fuse scored streams by the weighted sum of their z-normalised scores (CombSUM with z-scores).

    Each stream's scores are put on one scale, ``z = (score − mean) / std`` with the mean and
    standard deviation of the stream's ``depth`` best scores, then summed with ``weights``:
    ``fused(d) = Σ_s weight_s × z_s(d)``. An item a stream did not score gets the ``z`` of that
    stream's ``n``-th best item, ``n`` the **common depth**: the number of items of the shortest stream
    that has a scale (the stream ranked the item below its ``n`` best). Not the stream's lowest ``z``:
    that depends on how long its list happens to be (on the five eval sets the lexical stream lists
    10-64 files, median 33, the vectors 4-23, median 11), so an item the longer list missed was punished
    more; with two streams of equal length the two are the same.
    Measured with MiniLM on the eval sets (issue 15; ``slackzilla eval``): ``dev-hard`` R@5 0.841 → 0.864,
    MRR@10 0.600 → 0.619 (paraphrase R@5 0.783 → 0.826), held-out Python MRR@10 0.859 → 0.864; ``dev``,
    held-out JavaScript and TypeScript unchanged; context line recall unchanged on all five; a floor at
    the 10th, 15th or 25th item instead moved one kind down somewhere.
    Unlike RRF, the scores' shape counts:
    a stream whose best item stands far above its others moves the fused order more than one
    whose top is flat, so each question leans on the stream that is sure of itself. Z-score
    normalisation for fusing result lists is from M. Montague and J. A. Aslam, "Relevance Score
    Normalization for Metasearch", CIKM 2001; score fusion by a weighted sum of normalised scores
    outranking RRF, from S. Bruch, S. Gai and A. Ingber, "An Analysis of Fusion Functions for
    Hybrid Retrieval", ACM TOIS 2023.

    Example::

        zscore_fusion({"bm25": {"a": 3.0, "b": 1.0, "c": 1.0}, "vectors": {"b": 0.5, "c": 0.4, "d": 0.1}},
                      weights={"bm25": 0.5, "vectors": 0.5})
        # bm25 z: a 1.41, b −0.71, c −0.71; vectors z: b 0.98, c 0.39, d −1.37
        # → a 0.02, b 0.14, c −0.16, d −1.04

    Args:
        streams: stream name → {item → score} (larger is better; any finite scale).
        weights: stream name → weight (finite, ≥ 0); every stream in ``streams`` needs one.
        depth: how many of each stream's best scores set its mean and spread (≥ 1).

    Returns:
        item → fused score (any sign), for every item of any stream. A stream with fewer than
        two items, or whose top scores are all equal, contributes 0 to every item.

    Raises:
        ValueError: a stream without a weight, a negative or non-finite weight or score, or
            ``depth < 1``.
    """
    if depth < 1:
        raise ValueError(f"z-score depth must be >= 1, got {depth}")
    missing = [name for name in streams if name not in weights]
    if missing:
        raise ValueError(f"no fusion weight for stream(s): {', '.join(map(str, missing))}")
    fused: dict[Hashable, float] = {}
    for name in streams:
        for item in streams[name]:
            fused.setdefault(item, 0.0)
    scaled: list[tuple[float, list[float], float, float, Mapping[Hashable, float]]] = []
    for name, scores in streams.items():
        weight = weights[name]
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"fusion weight for {name!r} must be a finite number >= 0, got {weight}")
        if any(not math.isfinite(v) for v in scores.values()):
            raise ValueError(f"scores of stream {name!r} must be finite")
        ranked = sorted(scores.values(), reverse=True)
        top = ranked[:depth]
        if len(top) < 2:
            continue
        mean = sum(top) / len(top)
        std = math.sqrt(sum((v - mean) ** 2 for v in top) / len(top))
        if std > 0.0:
            scaled.append((weight, ranked, mean, std, scores))
    common = min((len(ranked) for _, ranked, _, _, _ in scaled), default=0)
    for weight, ranked, mean, std, scores in scaled:
        floor = (ranked[common - 1] - mean) / std   # the z of the stream's common-depth item
        for item in fused:
            value = scores.get(item)
            fused[item] += weight * (floor if value is None else (value - mean) / std)
    return fused
