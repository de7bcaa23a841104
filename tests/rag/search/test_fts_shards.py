"""rag.search.fts_shards: BM25 top k ranked in two rowid halves equals the whole query, ties included."""
from __future__ import annotations

import threading

from repo_helpers import indexed_engine

from rag.search import fts_shards
from rag.search.fts_shards import FtsHalves
from rag.store import queries

WEIGHTS = (1.0, 3.0, 2.0, 6.0)


def _files() -> dict[str, str]:
    """40 notes on widgets, every fifth one a copy of another (equal scores: ties), some on gadgets."""
    files = {}
    for i in range(40):
        body = f"widget notes {i % 8}\n" + ("gadget gadget assembly\n" if i % 3 == 0 else "sprocket\n")
        files[f"notes/n{i:02d}.md"] = f"# Note {i % 8}\n\n{body}"
    return files


def test_two_halves_give_the_whole_querys_rows_in_its_order(tmp_path, monkeypatch):
    monkeypatch.setattr(fts_shards, "SHARD_MIN_ROWS", 0)
    with indexed_engine(tmp_path, _files()) as engine, engine.index.read() as conn:
        halves = FtsHalves(engine.index)
        cache: dict = {}
        for expression in ('"widget"', '"gadget"', '"widget" OR "gadget"', '"sprocket" OR "assembly"', '"nothing"'):
            for limit in (1, 5, 17, 200):
                whole = queries.bm25_top_ids(conn, expression, weights=WEIGHTS, limit=limit)
                assert halves.top(conn, expression, weights=WEIGHTS, limit=limit, rows=10**6, cache=cache) == whole
        assert len({s for _, s in queries.bm25_top_ids(conn, '"widget"', weights=WEIGHTS, limit=40)}) < 40  # ties


def test_a_worker_that_sees_another_snapshot_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(fts_shards, "SHARD_MIN_ROWS", 0)
    with indexed_engine(tmp_path, _files()) as engine, engine.index.read() as conn:
        halves = FtsHalves(engine.index)
        used: list[str] = []
        real = queries.bm25_top_ids_between

        def spy(c, *args, **kwargs):
            used.append("caller" if threading.current_thread() is threading.main_thread() else "worker")
            return real(c, *args, **kwargs)

        monkeypatch.setattr(queries, "bm25_top_ids_between", spy)
        whole = queries.bm25_top_ids(conn, '"widget"', weights=WEIGHTS, limit=30)
        stale = {("__fts_halves__",): (queries.chunk_id_halves(conn), ("0", "never"))}
        assert halves.top(conn, '"widget"', weights=WEIGHTS, limit=30, rows=10**6, cache=stale) == whole
        assert used == ["caller", "caller"]  # the worker returned nothing: both halves ranked here
        used.clear()
        assert halves.top(conn, '"widget"', weights=WEIGHTS, limit=30, rows=10**6, cache={}) == whole
        assert sorted(used) == ["caller", "worker"]


def test_retrieval_is_the_same_with_and_without_halves(tmp_path, monkeypatch):
    with indexed_engine(tmp_path, _files()) as engine:
        questions = ["widget gadget assembly", "notes on sprocket", "which note has gadget widget"]
        plain = [[(s.path, s.start, s.score) for s in engine.retrieve(q)] for q in questions]
        monkeypatch.setattr(fts_shards, "SHARD_MIN_ROWS", 0)
        engine.retriever._cache.idf.clear()
        halved = [[(s.path, s.start, s.score) for s in engine.retrieve(q)] for q in questions]
        assert halved == plain and any(plain)
