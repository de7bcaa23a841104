"""Vector BLOB codec, brute-force top-k and the chunk_vectors table helpers (rag.store.vectors)."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from rag.store.vectors import (
    CHUNK_VECTORS_DDL,
    VectorMatrix,
    load_vectors,
    pack_vector,
    plan_embedding,
    prune_vectors,
    store_vectors,
    unpack_vector,
    vector_hashes,
)


def unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture()
def conn(tmp_path):
    db = sqlite3.connect(tmp_path / "index.sqlite")
    db.execute(CHUNK_VECTORS_DDL)
    yield db
    db.close()


def test_pack_unpack_round_trip_is_exact_little_endian_float32():
    vec = np.array([0.1, -2.5, 3.0e-8, 1.0], dtype=np.float64)
    blob = pack_vector(vec)
    assert len(blob) == 16
    assert blob[:4] == np.array([0.1], dtype="<f4").tobytes()
    back = unpack_vector(blob, dim=4)
    assert back.dtype == np.float32
    assert np.array_equal(back, vec.astype(np.float32))


@pytest.mark.parametrize("bad", [np.zeros((2, 2)), np.zeros(0), 3.0])
def test_pack_rejects_non_vectors(bad):
    with pytest.raises(ValueError, match="non-empty 1-D vector"):
        pack_vector(bad)


def test_unpack_rejects_wrong_length():
    with pytest.raises(ValueError, match="expected 12 for dim 3"):
        unpack_vector(b"\0" * 8, dim=3)


def test_top_k_matches_full_sort():
    matrix = unit_rows(500, 16, seed=1)
    ids = tuple(f"h{i}" for i in range(500))
    vm = VectorMatrix(ids, matrix)
    query = unit_rows(1, 16, seed=2)[0]
    sims = matrix @ query
    expected = [f"h{i}" for i in np.argsort(-sims)[:10]]
    got = vm.top_k(query, k=10)
    assert [ident for ident, _ in got] == expected
    assert [score for _, score in got] == pytest.approx(sorted(sims, reverse=True)[:10], abs=1e-6)


def test_top_k_normalises_the_query_and_handles_k_bounds():
    vm = VectorMatrix.from_pairs([("a", [1.0, 0.0]), ("b", [0.0, 1.0]), ("c", [0.6, 0.8])])
    got = vm.top_k(np.array([3.0, 4.0]), k=10)      # |q| = 5, so cosines are exact
    assert got == [("c", pytest.approx(1.0)), ("b", pytest.approx(0.8)), ("a", pytest.approx(0.6))]
    assert vm.top_k(np.array([3.0, 4.0]), k=0) == []
    assert vm.top_k(np.array([3.0, 4.0]), k=1) == [("c", pytest.approx(1.0))]
    assert [i for i, _ in vm.top_k(np.array([3.0, 4.0]), k=3, min_score=0.7)] == ["c", "b"]


def test_top_k_ties_break_by_row_order():
    vm = VectorMatrix.from_pairs([("z", [1.0, 0.0]), ("y", [1.0, 0.0]), ("x", [0.0, 1.0]), ("w", [1.0, 0.0])])
    assert [i for i, _ in vm.top_k(np.array([1.0, 0.0]), k=2)] == ["z", "y"]
    assert [i for i, _ in vm.top_k(np.array([1.0, 0.0]), k=4)] == ["z", "y", "w", "x"]


def test_similarities_of_reads_only_the_named_rows():
    matrix = unit_rows(2000, 16, seed=3)   # past SCREEN_MIN_ROWS: the int8 codes exist too
    vm = VectorMatrix(tuple(f"h{i}" for i in range(2000)), matrix)
    query = 3.0 * unit_rows(1, 16, seed=4)[0]   # normalised inside, as top_k does
    got = vm.similarities_of(query, ["h7", "nope", "h1999", "h7"])
    assert list(got) == ["h7", "h1999"]                               # unknown ids left out, duplicates once
    assert got["h7"] == pytest.approx(float(matrix[7] @ (query / 3.0)), abs=1e-6)
    assert got["h1999"] == pytest.approx(float(matrix[1999] @ (query / 3.0)), abs=1e-6)
    assert dict(vm.top_k(query, k=2000))["h7"] == pytest.approx(got["h7"], abs=1e-9)
    assert vm.similarities_of(query, []) == {} and VectorMatrix.empty(16).similarities_of(query, ["h1"]) == {}
    with pytest.raises(ValueError, match="query has dimension 3, vectors have 16"):
        vm.similarities_of(np.ones(3), ["h1"])


def test_empty_matrix_and_dimension_mismatch():
    assert VectorMatrix.empty(4).top_k(np.ones(4), k=5) == []
    assert VectorMatrix.from_pairs([]).top_k(np.ones(3), k=5) == []
    vm = VectorMatrix.from_pairs([("a", [1.0, 0.0])])
    with pytest.raises(ValueError, match="query has dimension 3, vectors have 2"):
        vm.top_k(np.ones(3), k=1)
    with pytest.raises(ValueError, match="different dimensions"):
        VectorMatrix.from_pairs([("a", [1.0]), ("b", [1.0, 0.0])])
    with pytest.raises(ValueError, match="does not match 1 ids"):
        VectorMatrix(("a",), np.zeros((2, 3), dtype=np.float32))


def test_store_and_load_round_trip_through_sqlite(conn):
    matrix = unit_rows(50, 24, seed=3)
    pairs = [(f"hash{i:02d}", matrix[i]) for i in range(50)]
    assert store_vectors(conn, model="m1", pairs=pairs) == 50
    conn.commit()
    assert conn.execute("SELECT DISTINCT dim FROM chunk_vectors").fetchall() == [(24,)]
    vm = load_vectors(conn, model="m1")
    assert vm.ids == tuple(sorted(h for h, _ in pairs))
    for i, ident in enumerate(vm.ids):
        assert np.array_equal(vm.matrix[i], matrix[int(ident[4:])])
    # search over the loaded matrix finds a stored vector as its own best match
    assert vm.top_k(matrix[17], k=1)[0][0] == "hash17"
    assert load_vectors(conn, model="other").ids == ()
    assert len(load_vectors(conn, model="m1", only={"hash03", "hash40", "nope"})) == 2


def test_store_replaces_and_models_are_separate(conn):
    store_vectors(conn, model="m1", pairs=[("h", np.array([1.0, 0.0]))])
    store_vectors(conn, model="m1", pairs=[("h", np.array([0.0, 1.0]))])
    store_vectors(conn, model="m2", pairs=[("h", np.array([1.0, 0.0, 0.0]))])
    assert conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone() == (2,)
    assert np.array_equal(load_vectors(conn, model="m1").matrix, [[0.0, 1.0]])
    assert load_vectors(conn, model="m2").dim == 3
    assert vector_hashes(conn, model="m1") == {"h"}


def test_load_skips_malformed_rows(conn, caplog):
    store_vectors(conn, model="m", pairs=[("a", np.ones(4)), ("b", np.ones(4)), ("c", np.ones(2))])
    conn.execute("INSERT INTO chunk_vectors VALUES ('d', 'm', 4, ?)", (b"\0" * 5,))
    vm = load_vectors(conn, model="m")
    assert vm.ids == ("a", "b")
    assert "skipped 2 malformed rows" in caplog.text
    assert vm.matrix.flags.c_contiguous and vm.matrix.dtype == np.float32 and vm.matrix.shape == (2, 4)


def test_load_takes_the_most_common_dimension_and_the_smaller_on_a_tie(conn):
    store_vectors(conn, model="m", pairs=[("a", np.ones(3)), ("b", np.ones(2)), ("c", np.ones(3)), ("d", np.ones(2))])
    assert load_vectors(conn, model="m").ids == ("b", "d")
    store_vectors(conn, model="m", pairs=[("e", np.ones(3))])
    assert load_vectors(conn, model="m").ids == ("a", "c", "e")
    assert load_vectors(conn, model="m", only={"b", "d", "a"}).ids == ("b", "d")  # the most common among those


def test_prune_vectors(conn):
    store_vectors(conn, model="old", pairs=[("a", np.ones(2)), ("b", np.ones(2))])
    store_vectors(conn, model="new", pairs=[("a", np.ones(3)), ("b", np.ones(3)), ("gone", np.ones(3))])
    assert prune_vectors(conn, keep_model="new", live_hashes={"a", "b", "c"}) == 3
    assert conn.execute("SELECT chunk_hash, model FROM chunk_vectors ORDER BY 1").fetchall() == [
        ("a", "new"), ("b", "new")]
    assert prune_vectors(conn, keep_model="new") == 0


def test_plan_embedding_dedupes_and_skips_known():
    assert plan_embedding(["c", "a", "b", "a", "c", "d"], {"b"}) == ["c", "a", "d"]
    assert plan_embedding([], {"x"}) == []
    assert plan_embedding(["x"], ["x"]) == []
