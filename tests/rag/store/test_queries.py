"""rag.store.queries: the named read statements (row shapes, batching, kind filters)."""
from __future__ import annotations

from repo_helpers import indexed_engine

from rag.search.lexical import Candidate
from rag.search.query import fts_expression
from rag.store import queries

FILES = {f"docs/page{i}.md": f"# Page {i}\n\nThe pool word appears here {i}.\n" for i in range(12)}
FILES["src/pool.js"] = "function pool() { return 1; }\n"


def test_candidate_rows_have_the_candidate_field_order(tmp_path):
    assert queries.CANDIDATE_COLUMNS == tuple(f for f in Candidate.__dataclass_fields__)[: len(queries.CANDIDATE_COLUMNS)]
    with indexed_engine(tmp_path, FILES) as engine, engine.index.read() as conn:
        expr = fts_expression(["pool"])
        rows = queries.bm25_candidates(conn, expr, weights=(1.0, 3.0, 2.0, 6.0), limit=5)
        assert len(rows) == 5 and all(len(r) == len(queries.CANDIDATE_COLUMNS) for r in rows)
        assert [r[8] for r in rows] == sorted((r[8] for r in rows), reverse=True)  # larger is better
        only_source = queries.bm25_candidates(conn, expr, weights=(1.0, 3.0, 2.0, 6.0), limit=50, kind="source")
        assert [r[1] for r in only_source] == ["src/pool.js"]
        assert queries.count_fts_matches(conn, expr) == 13 and queries.count_chunks(conn) == 13


def test_chunks_by_id_batches_long_id_lists_and_filters_kind(tmp_path):
    with indexed_engine(tmp_path, FILES) as engine, engine.index.read() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks")]
        many = ids + list(range(10_000, 10_000 + 2 * queries.MAX_IDS_PER_STATEMENT))  # unknown ids are ignored
        rows = queries.chunks_by_id(conn, many)
        assert sorted(r[0] for r in rows) == sorted(ids) and {r[8] for r in rows} == {0.0}
        assert [r[1] for r in queries.chunks_by_id(conn, ids, kind="source")] == ["src/pool.js"]
        assert [r[1] for r in queries.first_chunks_of(conn, "docs/page3.md")] == ["docs/page3.md"]


def test_file_image_and_text_reads(tmp_path):
    with indexed_engine(tmp_path, FILES) as engine, engine.index.read() as conn:
        assert queries.file_paths(conn) == sorted(FILES)
        assert sorted(queries.file_paths(conn, ordered=False)) == sorted(FILES)
        assert [p for p, _ in queries.stored_structures(conn)] == ["src/pool.js"]
        assert queries.has_file(conn, "src/pool.js") and not queries.has_file(conn, "nope.js")
        assert queries.chunk_lines(conn, "src/pool.js", 1, 1) == [(1, "function pool() { return 1; }")]
        assert queries.image_paths(conn) == []
        assert queries.content_versions(conn)[0] == str(engine.generation)
        assert queries.files_by_size(conn)[0][1] >= queries.files_by_size(conn)[-1][1]
