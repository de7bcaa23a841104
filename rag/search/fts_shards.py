"""FTS5's BM25 top ``k`` of one expression ranked in two halves at once, on two cores.

FTS5 scores every row an expression matches before it keeps the best ``k``
(:mod:`rag.search.bm25_topk` leaves out the phrases that cannot change them, but a question
whose words are all common still matches tens of thousands of rows of a 100k-chunk index),
about 0.65 µs a row here: a query matching 35,000 rows takes 20-30 ms. That work is split:

- the chunk ids are cut into two ranges of as many chunks each (``[first, median)``,
  ``[median, last]``: :func:`rag.store.queries.chunk_id_halves`, once per generation);
- the caller's thread ranks the first range inside its own read transaction while a worker
  thread ranks the second on its own connection (:class:`rag.store.index.Index` keeps one per
  thread); SQLite runs both outside the GIL. The worker uses its rows only when its read
  transaction sees the same snapshot as the caller's (:func:`rag.store.queries.snapshot_stamp`:
  the generation and the time of the last content write, which every content write changes),
  else the caller ranks that range too;
- the two lists are merged by ``(score desc, rowid asc)``.

The result is the whole query's, row for row: FTS5's ``bm25()`` takes its idf and average
column lengths from the whole table whatever rowid range is scanned (``fts5Bm25GetData`` in
``sqlite/ext/fts5/fts5_aux.c`` counts each phrase with ``xQueryPhrase`` over the table), so a row
scores the same in its range; and ``ORDER BY s DESC LIMIT k`` keeps, among equal scores, the rows
met first, i.e. the smallest rowids (FTS5 yields rows in rowid order, SQLite's sorter breaks ties
by insertion order). Checked on the synthetic 102k-chunk index, whose 36 copies of every chunk
tie: merged halves equal the whole query for every expression tried, at k = 300 and 1,200.

Expressions matching fewer than :data:`SHARD_MIN_ROWS` rows run whole in the caller's thread
(handing work to a thread costs ~0.1 ms).
"""
from __future__ import annotations

import heapq
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from rag.store import queries
from rag.store.index import Index

__all__ = ["FtsHalves", "SHARD_MIN_ROWS", "SHARD_THREADS"]

SHARD_MIN_ROWS = 4000
"""An expression matching fewer rows (counted with repeats over its phrases) is ranked whole: at
~0.65 µs a row, below this the second thread would save under 1.3 ms."""
SHARD_THREADS = 2
"""Worker threads ranking second halves, shared by every index of the process."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=SHARD_THREADS, thread_name_prefix="sz-fts-half")
        return _pool


class FtsHalves:
    """BM25 top ``k`` of one index's FTS5 table, ranked in two halves (module docstring). Thread-safe.

    Args:
        index: the index; its worker-thread connections are opened on first use.
    """

    def __init__(self, index: Index) -> None:
        self.index = index

    def top(self, conn: sqlite3.Connection, expression: str, *, weights: Sequence[float], limit: int, rows: int,
            cache: dict) -> list[tuple[int, float]]:
        """``(chunk id, score)`` of the top ``limit`` chunks for ``expression``, best first, as
        :func:`rag.store.queries.bm25_top_ids` returns them.

        Args:
            conn: the caller's connection, inside its read transaction.
            expression: an FTS5 MATCH expression.
            weights: BM25 column weights (body, path, heading, symbols).
            limit: ``k``.
            rows: how many rows the expression matches at most (the sum of its phrases' counts).
            cache: a per-generation cache (mutated): the id halves and the snapshot stamp.
        """
        if rows < SHARD_MIN_ROWS:
            return queries.bm25_top_ids(conn, expression, weights=weights, limit=limit)
        key = ("__fts_halves__",)
        if key not in cache:
            cache[key] = (queries.chunk_id_halves(conn), queries.snapshot_stamp(conn))
        halves, stamp = cache[key]
        if halves is None:
            return queries.bm25_top_ids(conn, expression, weights=weights, limit=limit)
        first, median, end = halves
        theirs = _workers().submit(self._rank, stamp, expression, weights, limit, median, end)
        mine = queries.bm25_top_ids_between(conn, expression, weights=weights, limit=limit,
                                            first_id=first, end_id=median)
        second = theirs.result()
        if second is None:  # the worker saw another snapshot: rank that half here
            second = queries.bm25_top_ids_between(conn, expression, weights=weights, limit=limit,
                                                  first_id=median, end_id=end)
        return heapq.nsmallest(limit, mine + second, key=lambda row: (-row[1], row[0]))

    def _rank(self, stamp: tuple, expression: str, weights: Sequence[float], limit: int, first_id: int,
              end_id: int) -> list[tuple[int, float]] | None:
        """One half in a worker thread, on its connection; ``None`` when its snapshot is not ``stamp``."""
        with self.index.read() as conn:
            if queries.snapshot_stamp(conn) != stamp:
                return None
            return queries.bm25_top_ids_between(conn, expression, weights=weights, limit=limit,
                                                first_id=first_id, end_id=end_id)
