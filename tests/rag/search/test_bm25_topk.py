"""rag.search.bm25_topk: MaxScore pruning of the FTS5 OR query, against the unpruned query on a real index."""
from __future__ import annotations

import math

from repo_helpers import indexed_engine

from rag.search import lexical
from rag.search.bm25_topk import BM25_K1, DIRECT_ROWS_FACTOR, fts5_idf, phrase_bound, top_bm25
from rag.search.query import analyze, fts_phrases
from rag.store import queries

WEIGHTS = (1.0, 3.0, 2.0, 6.0)


def _files() -> dict[str, str]:
    """60 notes that all say "widget" (a phrase in every chunk: idf floored), 20 of them "gadget",
    a few "sprocket", and one "flywheel"."""
    files = {}
    for i in range(60):
        words = ["widget notes", f"entry {i}"]
        if i % 3 == 0:
            words.append("gadget " * (1 + i % 4))
        if i % 12 == 0:
            words.append("sprocket assembly")
        if i == 7:
            words.append("flywheel")
        files[f"notes/n{i:02d}.md"] = f"# Note {i}\n\n" + "\n".join(words) + "\n"
    return files


def _full(conn, phrases, limit):
    return conn.execute(
        "SELECT rowid, -bm25(chunks_fts, 1.0, 3.0, 2.0, 6.0) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY s DESC LIMIT ?", (" OR ".join(phrases), limit)).fetchall()


def _df(conn):
    return lambda phrase: queries.count_fts_matches(conn, phrase)


def test_the_bound_is_fts5s_idf_times_k1_plus_one():
    assert fts5_idf(10, 100) == math.log((100 - 10 + 0.5) / (10 + 0.5))
    assert fts5_idf(60, 100) == 1e-6  # in more than half the rows: floored as FTS5 does
    assert phrase_bound(10, 100) == fts5_idf(10, 100) * (BM25_K1 + 1)


def test_a_phrase_in_every_chunk_is_left_out_and_the_top_k_is_the_full_querys(tmp_path):
    with indexed_engine(tmp_path, _files()) as engine, engine.index.read() as conn:
        total = queries.count_chunks(conn)
        phrases = ['"widget"', '"gadget"', '"sprocket"']
        rows, kept = top_bm25(conn, phrases, weights=WEIGHTS, limit=5, df=_df(conn), total=total)
        assert '"widget"' not in kept  # 60 of 60 chunks: it can add at most 2.2e-6 to a score
        full = _full(conn, phrases, 5)
        assert [r[0] for r in rows] == [r[0] for r in full]
        left_out = sum(phrase_bound(queries.count_fts_matches(conn, p), total) for p in phrases if p not in kept)
        for (_, pruned), (_, exact) in zip(rows, full):
            assert 0.0 <= exact - pruned <= left_out


def test_the_candidate_set_is_the_full_querys_whenever_phrases_are_left_out(tmp_path):
    with indexed_engine(tmp_path, _files()) as engine, engine.index.read() as conn:
        total = queries.count_chunks(conn)
        phrases = ['"flywheel"', '"sprocket"', '"gadget"', '"widget"', '"absent"']
        for limit in (1, 3, 5, 10, 25, 60, 100):
            rows, kept = top_bm25(conn, phrases, weights=WEIGHTS, limit=limit, df=_df(conn), total=total)
            full = _full(conn, phrases, limit)
            assert '"absent"' not in kept  # matches nothing: dropped at no cost
            assert len(rows) == len(full), limit
            if len(kept) == 4:  # nothing that matches was left out: the very query
                assert rows == full
            else:  # no row outside the kept phrases' matches can score above the k-th kept row
                scores = dict(full)
                assert min(scores[i] for i, _ in rows) >= full[-1][1] - 1e-9, limit


def test_fewer_rare_matches_than_k_bring_the_common_phrases_back(tmp_path):
    with indexed_engine(tmp_path, _files()) as engine, engine.index.read() as conn:
        assert 61 > DIRECT_ROWS_FACTOR * 6  # 1 + 60 rows: probed, not run whole at once
        rows, kept = top_bm25(conn, ['"flywheel"', '"widget"'], weights=WEIGHTS, limit=6, df=_df(conn),
                              total=queries.count_chunks(conn))
        assert sorted(kept) == ['"flywheel"', '"widget"']  # one flywheel chunk cannot fill six places
        assert rows == _full(conn, ['"flywheel"', '"widget"'], 6)
        assert top_bm25(conn, ['"absent"'], weights=WEIGHTS, limit=10, df=_df(conn), total=10) == ([], [])


def test_rank_chunks_finds_the_same_chunks_as_the_unpruned_query(tmp_path):
    with indexed_engine(tmp_path, _files()) as engine, engine.index.read() as conn:
        query = analyze("Which widget notes mention the sprocket assembly?")
        cands, evidence = lexical.rank_chunks(conn, query, policy=lexical.RetrievalPolicy(candidate_chunks=6))
        full = _full(conn, fts_phrases(query.terms), 6)
        assert {c.id for c in cands} == {i for i, _ in full}
        assert cands[0].path in {"notes/n00.md", "notes/n12.md", "notes/n24.md", "notes/n36.md", "notes/n48.md"}
        assert evidence.matched_terms >= 2


def test_scored_chunks_keeps_the_given_order_and_scores_and_filters_kind(tmp_path):
    files = {**_files(), "src/widget.js": "export function widget() { return 'widget'; }\n"}
    with indexed_engine(tmp_path, files) as engine, engine.index.read() as conn:
        scored = _full(conn, ['"widget"'], 80)
        rows = queries.scored_chunks(conn, scored)
        assert [(r[0], r[8]) for r in rows] == [tuple(s) for s in scored]
        assert len(rows[0]) == len(queries.CANDIDATE_COLUMNS)
        assert [r[1] for r in queries.scored_chunks(conn, scored, kind="source")] == ["src/widget.js"]
