"""Named read queries on the index: every ``SELECT`` the other stages run, in one room.

Each function takes a :class:`sqlite3.Connection` (normally one inside
:meth:`rag.store.index.Index.read`, so every statement of a question sees one
generation) and runs one statement, written exactly as it was where it used to
live, so plans and results are unchanged. Writes and migrations stay in
:mod:`rag.store.index`; the vector table's own statements in :mod:`rag.store.vectors`.

Candidate rows (:func:`bm25_candidates`, :func:`chunks_by_id`, :func:`first_chunks_of`)
share one column order, :data:`CANDIDATE_COLUMNS`, which is the field order of
:class:`rag.search.lexical.Candidate`; ``bm25`` is ``0.0`` for rows not found by BM25.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

__all__ = [
    "CANDIDATE_COLUMNS", "MAX_IDS_PER_STATEMENT",
    "count_chunks", "count_fts_matches", "bm25_candidates", "bm25_top_ids", "scored_chunks", "chunks_by_id", "chunk_ids_of_paths", "first_chunks_of",
    "file_paths", "stored_structures", "image_paths", "chunk_lines", "joined_lines", "has_file",
    "chunk_embedding_rows", "has_model_vectors", "content_versions",
    "files_by_size", "chunk_symbols", "bm25_chunks_of", "stored_chunks_of", "file_copies", "all_file_rows", "all_chunk_rows",
]

CANDIDATE_COLUMNS = ("id", "path", "start", "end", "file_type", "kind", "heading", "text", "bm25", "stems",
                     "symbol")
"""Column order of a candidate row (the fields of ``rag.search.lexical.Candidate``, in order)."""

MAX_IDS_PER_STATEMENT = 500
"""Ids bound in one ``IN (...)`` list (SQLite's default host-parameter limit is 999 on old builds)."""

CandidateRow = tuple  # (id, path, start, end, file_type, kind, heading, text, bm25, stems, symbol)


# -- chunks: counts and lexical candidates -------------------------------------------------------

def count_chunks(conn: sqlite3.Connection) -> int:
    """Number of chunks in the index."""
    return conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


def count_fts_matches(conn: sqlite3.Connection, expression: str) -> int:
    """Number of chunks matching the FTS5 ``expression`` (a term's chunk document frequency)."""
    return conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)).fetchone()[0]


def bm25_candidates(conn: sqlite3.Connection, expression: str, *, weights: Sequence[float], limit: int,
                    kind: str | None = None) -> list[CandidateRow]:
    """The top ``limit`` chunks by FTS5 BM25 for ``expression``, best first (:data:`CANDIDATE_COLUMNS` rows).

    Ranks inside FTS5 first (``-bm25(chunks_fts, body, path, heading, symbols)`` with the
    four column ``weights``; SQLite's BM25 constants k1 = 1.2, b = 0.75), then joins
    ``chunks``: SQLite would otherwise join every match. With ``kind`` only chunks of that
    kind are kept (after the limit; callers read deeper to compensate). The score column
    is the negated ``bm25()``, so larger is better.
    """
    w = weights
    kind_filter = "AND c.kind = ? " if kind else ""
    sql = (
        "SELECT c.id, c.path, c.start, c.end, c.file_type, c.kind, c.heading, c.text, t.s, c.stems, c.symbol FROM ("
        f"SELECT rowid AS id, -bm25(chunks_fts, {w[0]}, {w[1]}, {w[2]}, {w[3]}) AS s FROM chunks_fts "
        "WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT ?) t JOIN chunks c ON c.id = t.id "
        f"WHERE 1 {kind_filter}ORDER BY t.s DESC"
    )
    params: list = [expression, limit]
    if kind:
        params.append(kind)
    return conn.execute(sql, params).fetchall()


def bm25_top_ids(conn: sqlite3.Connection, expression: str, *, weights: Sequence[float],
                 limit: int) -> list[tuple[int, float]]:
    """``(chunk id, score)`` of the top ``limit`` chunks by FTS5 BM25 for ``expression``, best first
    (the inner query of :func:`bm25_candidates`, without the join; score = negated ``bm25()``)."""
    w = weights
    return conn.execute(
        f"SELECT rowid, -bm25(chunks_fts, {w[0]}, {w[1]}, {w[2]}, {w[3]}) AS s FROM chunks_fts "
        "WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT ?", (expression, limit)).fetchall()


def scored_chunks(conn: sqlite3.Connection, scored: Sequence[tuple[int, float]], *,
                  kind: str | None = None) -> list[CandidateRow]:
    """Candidate rows of the chunks ``scored`` (``(id, bm25 score)``, e.g. from
    :func:`rag.search.bm25_topk.top_bm25`) with their scores, in the order given; with ``kind``
    only chunks of that kind are kept."""
    score = dict(scored)
    rows: dict[int, CandidateRow] = {}
    ids = list(score)
    for i in range(0, len(ids), MAX_IDS_PER_STATEMENT):
        part = ids[i : i + MAX_IDS_PER_STATEMENT]
        for row in conn.execute(
                "SELECT id, path, start, end, file_type, kind, heading, text, 0.0, stems, symbol FROM chunks "
                f"WHERE id IN ({','.join('?' * len(part))}) AND (? IS NULL OR kind=?)", (*part, kind, kind)):
            rows[row[0]] = (*row[:8], score[row[0]], *row[9:])
    return [rows[i] for i in ids if i in rows]


def stored_chunks_of(conn: sqlite3.Connection, path: str) -> list[tuple]:
    """``(id, start, end, hash, header, heading, symbol, file_type, kind, stems, FTS body, FTS heading,
    FTS symbols)`` of every chunk of ``path``, by start line: what :func:`rag.store.index.chunk_terms`
    computed when the file was written, and what a rewrite of the file compares its chunks with."""
    return conn.execute(
        "SELECT c.id, c.start, c.end, c.hash, c.header, c.heading, c.symbol, c.file_type, c.kind, c.stems, "
        "f.body, f.heading, f.symbols FROM chunks c JOIN chunks_fts f ON f.rowid = c.id WHERE c.path = ? "
        "ORDER BY c.start, c.id", (path,)).fetchall()


def bm25_chunks_of(conn: sqlite3.Connection, expression: str, path: str, *, weights: Sequence[float],
                   limit: int = 3, kind: str | None = None) -> list[CandidateRow]:
    """The best ``limit`` chunks of one file ``path`` by FTS5 BM25 for ``expression`` (as
    :func:`bm25_candidates`, restricted to the file: used to bring in the source of a copy)."""
    w = weights
    return conn.execute(
        "SELECT c.id, c.path, c.start, c.end, c.file_type, c.kind, c.heading, c.text, t.s, c.stems FROM ("
        f"SELECT rowid AS id, -bm25(chunks_fts, {w[0]}, {w[1]}, {w[2]}, {w[3]}) AS s FROM chunks_fts "
        "WHERE chunks_fts MATCH ? AND rowid IN (SELECT id FROM chunks WHERE path = ?)) t "
        "JOIN chunks c ON c.id = t.id WHERE (? IS NULL OR c.kind = ?) ORDER BY t.s DESC LIMIT ?",
        (expression, path, kind, kind, limit),
    ).fetchall()


def file_copies(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """``(copy path, source path, reason)`` of every recorded copy, by copy path then rank
    (``file_copies`` table, written by :mod:`rag.ingest.copies`)."""
    return conn.execute("SELECT path, source, reason FROM file_copies ORDER BY path, rank").fetchall()


def chunks_by_id(conn: sqlite3.Connection, ids: Sequence[int], *, kind: str | None = None) -> list[CandidateRow]:
    """Candidate rows (``bm25`` 0.0) of the chunks ``ids`` (of ``kind`` if given), in batches of
    :data:`MAX_IDS_PER_STATEMENT`; row order within a batch is SQLite's."""
    rows: list[CandidateRow] = []
    for i in range(0, len(ids), MAX_IDS_PER_STATEMENT):
        part = ids[i : i + MAX_IDS_PER_STATEMENT]
        rows += conn.execute(
            "SELECT id, path, start, end, file_type, kind, heading, text, 0.0, stems, symbol FROM chunks "
            f"WHERE id IN ({','.join('?' * len(part))}) AND (? IS NULL OR kind=?)", (*part, kind, kind),
        ).fetchall()
    return rows


def chunk_ids_of_paths(conn: sqlite3.Connection, paths: Sequence[str], *, kind: str | None = None) -> list[tuple[int, str]]:
    """``(chunk id, path)`` of every chunk of ``paths`` (of ``kind`` if given), by path and start line."""
    rows: list[tuple[int, str]] = []
    for i in range(0, len(paths), MAX_IDS_PER_STATEMENT):
        part = list(paths[i : i + MAX_IDS_PER_STATEMENT])
        rows += conn.execute(
            f"SELECT id, path FROM chunks WHERE path IN ({','.join('?' * len(part))}) AND (? IS NULL OR kind=?) "
            "ORDER BY path, start", (*part, kind, kind),
        ).fetchall()
    return rows


def first_chunks_of(conn: sqlite3.Connection, path: str, *, kind: str | None = None) -> Iterator[CandidateRow]:
    """Candidate rows (``bm25`` 0.0) of the first three chunks of ``path`` (of ``kind`` if given), by start line."""
    return conn.execute(
        "SELECT id, path, start, end, file_type, kind, heading, text, 0.0, stems, symbol FROM chunks "
        "WHERE path=? AND (? IS NULL OR kind=?) ORDER BY start LIMIT 3",
        (path, kind, kind),
    )


# -- files, structures, images, text ------------------------------------------------------------

def file_paths(conn: sqlite3.Connection, *, ordered: bool = True) -> list[str]:
    """Every indexed file path; sorted unless ``ordered=False`` (then in table order, cheaper)."""
    if ordered:
        return [r[0] for r in conn.execute("SELECT path FROM files ORDER BY path")]
    return [r[0] for r in conn.execute("SELECT path FROM files")]


def stored_structures(conn: sqlite3.Connection) -> Iterator[tuple[str, str]]:
    """``(path, structure JSON text)`` of every file with a stored parse structure, in table order.

    Decode the text with :meth:`rag.parse.records.FileStructure.from_json` (after ``json.loads``).
    """
    return conn.execute("SELECT path, structure FROM files WHERE structure IS NOT NULL")


def image_paths(conn: sqlite3.Connection) -> list[str]:
    """Every indexed image path, in table order (:meth:`rag.store.index.Index.image_paths` sorts)."""
    return [path for (path,) in conn.execute("SELECT path FROM images")]


def chunk_lines(conn: sqlite3.Connection, path: str, start: int, end: int) -> list[tuple[int, str]]:
    """``(first line, text)`` of the chunks of ``path`` overlapping lines ``start..end``, by first line."""
    return conn.execute(
        "SELECT start, text FROM chunks WHERE path=? AND end>=? AND start<=? ORDER BY start",
        (path, start, end),
    ).fetchall()


def joined_lines(conn: sqlite3.Connection, path: str, start: int, end: int) -> str | None:
    """Indexed text of ``path`` lines ``start..end`` (1-based, inclusive), joined from its chunks (where
    they overlap, the first chunk's copy of a line wins; lines past the end are absent); ``None`` when no
    chunk of ``path`` overlaps them."""
    rows = chunk_lines(conn, path, start, end)
    if not rows:
        return None
    lines: dict[int, str] = {}
    for first, text in rows:
        for offset, line in enumerate(text.split("\n")):
            lines.setdefault(first + offset, line)
    return "\n".join(lines[n] for n in sorted(lines) if start <= n <= end)


def has_file(conn: sqlite3.Connection, path: str) -> bool:
    """Whether ``path`` is an indexed file."""
    return conn.execute("SELECT 1 FROM files WHERE path=?", (path,)).fetchone() is not None


# -- vectors: what to embed, and the cache key ----------------------------------------------------

def chunk_embedding_rows(conn: sqlite3.Connection) -> Iterator[tuple[int, str, str, str | None, str | None, str | None]]:
    """``(id, path, text, heading, symbol, header)`` of every chunk, in table order: what its
    embedding is made of (:func:`rag.search.vector_stream.embed_text`)."""
    return conn.execute("SELECT id, path, text, heading, symbol, header FROM chunks")


def has_model_vectors(conn: sqlite3.Connection, model: str) -> bool:
    """Whether any vector of embeddings ``model`` is stored."""
    return conn.execute("SELECT 1 FROM chunk_vectors WHERE model=? LIMIT 1", (model,)).fetchone() is not None


def content_versions(conn: sqlite3.Connection) -> tuple[str | None, str | None]:
    """``(meta.generation, meta.vectors_version)`` as stored (text, ``None`` when absent), read in one statement."""
    row = conn.execute("SELECT (SELECT value FROM meta WHERE key='generation'), "
                       "(SELECT value FROM meta WHERE key='vectors_version')").fetchone()
    return row[0], row[1]


# -- benchmark samples ------------------------------------------------------------------------------

def files_by_size(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """``(path, size in bytes)`` of every indexed file, largest first."""
    return conn.execute("SELECT path, size FROM files ORDER BY size DESC").fetchall()


def chunk_symbols(conn: sqlite3.Connection, *, limit: int = 500) -> list[str]:
    """Up to ``limit`` chunk symbol names (chunks that have one), in table order."""
    return [w for (w,) in conn.execute(f"SELECT symbol FROM chunks WHERE symbol IS NOT NULL LIMIT {int(limit)}")]


def all_file_rows(conn: sqlite3.Connection) -> list[tuple]:
    """Every ``files`` row ``(path, size, mtime_ns, hash, file_type, kind, lines, redactions, structure)``,
    by path (to copy an index's files into a synthetic one: ``rag.scale_bench``)."""
    return conn.execute("SELECT path, size, mtime_ns, hash, file_type, kind, lines, redactions, structure "
                        "FROM files ORDER BY path").fetchall()


def all_chunk_rows(conn: sqlite3.Connection) -> list[tuple]:
    """Every chunk with its FTS columns, by path and start line: ``(path, start, end, heading, symbol,
    file_type, kind, text, hash, stems, body, fts_heading, symbols)``."""
    return conn.execute(
        "SELECT c.path, c.start, c.end, c.heading, c.symbol, c.file_type, c.kind, c.text, c.hash, c.stems, "
        "f.body, f.heading, f.symbols FROM chunks c JOIN chunks_fts f ON f.rowid = c.id "
        "ORDER BY c.path, c.start, c.id").fetchall()
