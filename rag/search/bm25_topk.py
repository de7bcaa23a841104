"""The BM25 top ``k`` of an OR query without scoring every chunk that matches one common word.

FTS5 has no top-k pruning: ``ORDER BY bm25(...) LIMIT k`` scores every row the ``MATCH``
expression yields, so the cost of a question grows with the rows its commonest word matches
(``lib``, ``function``, ``source``: most chunks of a 100k-chunk index), while those words add
almost nothing to any score. This module applies **MaxScore** (Turtle & Flood 1995, "Query
evaluation: strategies and optimizations", IP&M 31(6)) at the level of the query expression:

1. Each phrase (a quoted term of :func:`rag.search.query.fts_expression`) has an upper bound
   on what it can add to one row's score: FTS5's BM25 adds, per phrase,
   ``idf × f × (k1 + 1) / (f + k1 × (1 − b + b × D / avgdl))`` (``sqlite/ext/fts5/fts5_aux.c``,
   ``fts5Bm25Function``: k1 = 1.2, b = 0.75, ``f`` the column-weighted count, and
   ``idf = ln((N − n + 0.5) / (n + 0.5))``, floored at 1e-6), which is below
   ``idf × (k1 + 1)`` for every ``f`` and ``D`` (:func:`phrase_bound`). Phrases are scored
   independently of one another, so leaving some out lowers each row's score by at most the
   sum of their bounds.
2. Query only the rarest phrases (together matching at least ``k`` rows; more while they give
   fewer than ``k``), take their top ``k``: its ``k``-th score ``θ`` is a lower bound of the full
   query's ``k``-th score. Every
   row matching none of the kept phrases scores at most the sum ``S`` of the left-out bounds;
   when ``S < θ`` no such row can enter the top ``k``, and the kept phrases' top ``k`` is the
   answer. Otherwise the rarest left-out phrases are put back until ``S < θ`` (``θ`` only grows
   when phrases are added) and the query runs again, at worst with every phrase.

So every chunk of the full query's top ``k`` matches a kept phrase. The returned rows are ranked by
the kept phrases' scores, which leave out the dropped phrases' share (at most ``S``, below the
``k``-th score): chunks whose scores are closer than that may come in another order, so the set can
differ from the full query's near the ``k``-th place. The share is small because the dropped phrases are the commonest (a phrase in
over half the chunks has idf 1e-6). On the synthetic index, where every chunk has 36 copies that
tie, 164 of the 200 bench questions gave identical results, 169 the same first file. Phrases matching no
chunk are dropped at no cost. Document frequencies come from the caller (cached per index
generation), one ``COUNT(*)`` per phrase.

When all the phrases together match few rows (:data:`DIRECT_ROWS_FACTOR`), the query runs whole.
Measured on the synthetic 102k-chunk index of eslint 9.39.5 (``slackzilla bench --scale``), the 200
bench questions, both forms in the same run on a loaded 2-core machine (load 4-6): FTS5 time
p50 67 → 17 ms, p95 251 → 73 ms; on eslint itself (2,766 chunks) most questions run whole.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence

from rag.store import queries

__all__ = ["BM25_K1", "DIRECT_ROWS_FACTOR", "phrase_bound", "fts5_idf", "top_bm25"]

BM25_K1 = 1.2
"""FTS5's ``k1`` (``FTS5_BM25_K1`` in ``fts5_aux.c``); a phrase adds less than ``idf × (k1 + 1)``."""
DIRECT_ROWS_FACTOR = 8
"""When all the phrases together match at most this many times ``k`` rows, the whole query runs at
once (a few milliseconds): probing first would cost more than it saves."""
FTS5_MIN_IDF = 1e-6
"""FTS5's floor for a phrase's idf (a phrase in more than half the rows)."""


def fts5_idf(df: int, total: int) -> float:
    """FTS5's BM25 idf of a phrase found in ``df`` of ``total`` rows: ``ln((N − df + 0.5) / (df + 0.5))``,
    floored at 1e-6 (``fts5Bm25GetData``)."""
    value = math.log((total - df + 0.5) / (df + 0.5)) if total > 0 else 0.0
    return value if value > 0.0 else FTS5_MIN_IDF


def phrase_bound(df: int, total: int) -> float:
    """The most one phrase can add to one row's (negated) ``bm25()`` score: ``idf × (k1 + 1)``."""
    return fts5_idf(df, total) * (BM25_K1 + 1.0)


def top_bm25(conn: sqlite3.Connection, phrases: Sequence[str], *, weights: Sequence[float], limit: int,
             df: Callable[[str], int], total: int) -> tuple[list[tuple[int, float]], list[str]]:
    """The top ``limit`` chunk ids by FTS5 BM25 over the OR of ``phrases``, pruned as the module says.

    Args:
        conn: a connection inside a read transaction.
        phrases: quoted FTS5 phrases (``'"pool"'``), OR-ed by the query.
        weights: BM25 column weights (body, path, heading, symbols).
        limit: ``k``.
        df: a phrase's document frequency (rows it matches), e.g. cached per generation.
        total: rows of the FTS table (chunks).

    Returns:
        ``([(chunk id, score)], kept phrases)``, best first; scores are the negated ``bm25()`` over
        the kept phrases (larger is better). ``([], [])`` when no phrase matches anything.
    """
    counts = {p: df(p) for p in dict.fromkeys(phrases)}
    order = sorted((p for p, n in counts.items() if n > 0), key=lambda p: (counts[p], p))  # rarest first
    if not order or limit < 1:
        return [], []
    if sum(counts.values()) <= DIRECT_ROWS_FACTOR * limit:  # cheap whole: probes would cost more
        return _top(conn, order, weights=weights, limit=limit), list(order)
    bound = {p: phrase_bound(counts[p], total) for p in order}
    kept_n = _grow(order, counts, 0, rows=limit)
    while True:
        rows = _top(conn, order[:kept_n], weights=weights, limit=limit)
        if kept_n == len(order):
            return rows, list(order)
        if len(rows) < limit:  # too few rows yet: bring in more, at least doubling the rows matched
            kept_n = _grow(order, counts, kept_n, rows=max(limit, 2 * sum(counts[p] for p in order[:kept_n])))
            continue
        theta = rows[-1][1]
        if sum(bound[p] for p in order[kept_n:]) < theta:
            return rows, list(order[:kept_n])
        while kept_n < len(order) and sum(bound[p] for p in order[kept_n:]) >= theta:
            kept_n += 1  # the rarest left-out phrase comes back (theta only grows as phrases do)


def _grow(order: Sequence[str], counts: dict[str, int], kept_n: int, *, rows: int) -> int:
    """How many of the rarest phrases ``order`` to keep: at least one more than ``kept_n``, then more
    until together they match at least ``rows`` rows (counted with repeats)."""
    kept_n += 1
    while kept_n < len(order) and sum(counts[p] for p in order[:kept_n]) < rows:
        kept_n += 1
    return kept_n


def _top(conn: sqlite3.Connection, phrases: Sequence[str], *, weights: Sequence[float],
         limit: int) -> list[tuple[int, float]]:
    return queries.bm25_top_ids(conn, " OR ".join(phrases), weights=weights, limit=limit)
