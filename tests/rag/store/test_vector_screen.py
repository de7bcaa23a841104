"""Exact top-k through the int8 screen (rag.store.vector_screen): the same rows as scoring every row."""
from __future__ import annotations

import numpy as np
import pytest

from rag.store import vector_screen
from rag.store.vector_screen import SCREEN_MIN_ROWS, QuantizedRows, exact_top_k
from rag.store.vectors import VectorMatrix


def unit_rows(n: int, dim: int, seed: int, *, skewed: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dim))
    if skewed:  # most energy in a few dimensions plus a shared direction, as sentence embeddings have
        rows = rows * np.linspace(3.0, 0.05, dim) ** 2 + 2.0 * rng.standard_normal(dim)
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def reference(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix.astype(np.float64) @ (query / np.linalg.norm(query))
    return sorted(range(len(matrix)), key=lambda i: (-scores[i], i))[:k]


@pytest.mark.parametrize("skewed", [False, True])
def test_screen_returns_the_exact_top_k(skewed):
    matrix = unit_rows(6000, 48, seed=1, skewed=skewed)
    rows = QuantizedRows(matrix)
    rng = np.random.default_rng(2)
    for trial in range(20):
        # half the queries near a stored row (a clear winner), half anywhere
        near = matrix[rng.integers(len(matrix))] + 0.2 * rng.standard_normal(48)
        query = near if trial % 2 else rng.standard_normal(48)
        query = query / np.linalg.norm(query)
        for k in (1, 10, 50):
            picked, scores = exact_top_k(matrix, rows, query, k)
            assert picked.tolist() == reference(matrix, query, k)
            assert np.allclose(scores, matrix[picked].astype(np.float64) @ query, rtol=0, atol=1e-12)


def test_screen_bounds_hold_for_every_row():
    matrix = unit_rows(3000, 32, seed=3, skewed=True)
    rows = QuantizedRows(matrix)
    query = unit_rows(1, 32, seed=4)[0].astype(np.float64)
    approx, bound = rows.bounds(matrix, query)
    exact = matrix.astype(np.float64) @ query
    assert np.all(np.abs(exact - approx) <= bound)
    assert np.median(bound) < 0.05  # tight enough to leave few rows to rescore


def test_ties_go_to_the_earlier_row():
    base = unit_rows(SCREEN_MIN_ROWS + 100, 8, seed=5)
    base[[7, 900, 2100]] = base[3]  # four equal rows
    picked, _ = exact_top_k(base, QuantizedRows(base), base[3].astype(np.float64), 3)
    assert picked.tolist() == [3, 7, 900]


def test_without_numkong_the_float32_screen_gives_the_same_rows(monkeypatch):
    matrix = unit_rows(5000, 24, seed=6)
    query = unit_rows(1, 24, seed=7)[0].astype(np.float64)
    with_codes = exact_top_k(matrix, QuantizedRows(matrix), query, 25)[0]
    monkeypatch.setattr(vector_screen, "_numkong", None)
    plain = QuantizedRows(matrix)
    assert plain.codes is None
    assert exact_top_k(matrix, plain, query, 25)[0].tolist() == with_codes.tolist() == reference(matrix, query, 25)


def test_vector_matrix_uses_the_screen_above_its_threshold():
    matrix = unit_rows(SCREEN_MIN_ROWS + 1, 16, seed=8)
    vm = VectorMatrix(tuple(f"h{i}" for i in range(len(matrix))), matrix)
    assert vm._codes is not None and VectorMatrix(("a",), matrix[:1])._codes is None
    query = unit_rows(1, 16, seed=9)[0]
    assert [key for key, _ in vm.top_k(query, k=30)] == [f"h{i}" for i in reference(matrix, query, 30)]


def test_kth_largest_is_the_full_partitions_value_for_any_order():
    # the sampled threshold finds the same value whether the top is spread out, sorted to the end or
    # the start (where a strided sample misses it), or heavily tied
    from rag.store.vector_screen import kth_largest

    rng = np.random.default_rng(5)
    for trial in range(400):
        n = int(rng.integers(1, 4000))
        k = int(rng.integers(1, n + 1))
        values = rng.standard_normal(n)
        values = [values, np.sort(values), np.sort(values)[::-1].copy(), np.round(values, 1)][trial % 4]
        assert kth_largest(values, k) == np.partition(values, n - k)[n - k]


def test_kth_largest_partitions_only_the_values_above_the_sampled_threshold(monkeypatch):
    from rag.store.vector_screen import kth_largest

    values = np.random.default_rng(6).standard_normal(100_000)
    sizes: list[int] = []
    partition = np.partition
    monkeypatch.setattr(vector_screen.np, "partition", lambda a, kth: (sizes.append(len(a)), partition(a, kth))[1])
    assert kth_largest(values, 50) == partition(values, len(values) - 50)[len(values) - 50]
    assert max(sizes) < 5_000   # a 3,125-value sample, then the few hundred values above its threshold
