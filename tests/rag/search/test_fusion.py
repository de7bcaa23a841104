"""Reciprocal Rank Fusion on hand-computed ranks (rag.search.fusion)."""
from __future__ import annotations

import pytest

from rag.search.fusion import DEFAULT_CANDIDATE_POOL, DEFAULT_RRF_K, DEFAULT_WEIGHTS, reciprocal_rank_fusion
from rag.search.vector_stream import VectorHit, top_margin
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY


def test_defaults_are_the_issue_values():
    assert DEFAULT_RRF_K == 60
    assert dict(DEFAULT_WEIGHTS) == {"bm25": 0.6, "vectors": 0.4}
    assert DEFAULT_CANDIDATE_POOL >= 20


def test_hand_computed_scores_and_order():
    # bm25:    a (rank 0), b (1), c (2)
    # vectors: c (rank 0), d (1), a (2)
    fused = reciprocal_rank_fusion(
        {"bm25": ["a", "b", "c"], "vectors": ["c", "d", "a"]},
        weights={"bm25": 0.6, "vectors": 0.4},
    )
    expected = {
        "a": 0.6 / 61 + 0.4 / 63,
        "b": 0.6 / 62,
        "c": 0.6 / 63 + 0.4 / 61,
        "d": 0.4 / 62,
    }
    assert [item for item, _ in fused] == ["a", "c", "b", "d"]
    for item, score in fused:
        assert score == pytest.approx(expected[item], abs=1e-12)


def test_docstring_example():
    fused = reciprocal_rank_fusion({"bm25": ["a", "b"], "vectors": ["b", "c"]}, weights=DEFAULT_WEIGHTS)
    assert [item for item, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(0.6 / 62 + 0.4 / 61)


def test_k_changes_the_balance_between_streams():
    # "x" is first in bm25 only; "y" is second in both streams.
    rankings = {"bm25": ["x", "y"], "vectors": ["z", "y"]}
    weights = {"bm25": 1.0, "vectors": 1.0}
    # k = 0: x = 1/1, y = 1/2 + 1/2, z = 1/1: a three-way tie, first-met order decides
    top_k0 = reciprocal_rank_fusion(rankings, weights=weights, k=0)
    assert [item for item, _ in top_k0] == ["x", "y", "z"]
    assert [score for _, score in top_k0] == pytest.approx([1.0, 1.0, 1.0])
    # k = 60: agreement wins, y = 2/62 > x = 1/61
    assert reciprocal_rank_fusion(rankings, weights=weights, k=60)[0][0] == "y"


def test_duplicate_in_one_stream_counts_once_at_best_rank():
    fused = dict(reciprocal_rank_fusion({"bm25": ["a", "b", "a"]}, weights={"bm25": 1.0}, k=0))
    assert fused == {"a": pytest.approx(1.0), "b": pytest.approx(0.5)}


def test_ties_keep_first_met_order_and_limit():
    fused = reciprocal_rank_fusion({"bm25": ["p", "q"], "vectors": ["r", "s"]},
                                   weights={"bm25": 1.0, "vectors": 1.0})
    assert [item for item, _ in fused] == ["p", "r", "q", "s"]
    assert [item for item, _ in reciprocal_rank_fusion(
        {"bm25": ["p", "q"], "vectors": ["r", "s"]}, weights={"bm25": 1.0, "vectors": 1.0}, limit=2)] == ["p", "r"]


def test_zero_weight_stream_only_adds_nothing():
    fused = dict(reciprocal_rank_fusion({"bm25": ["a"], "vectors": ["b"]}, weights={"bm25": 0.6, "vectors": 0.0}))
    assert fused["b"] == 0.0
    assert fused["a"] == pytest.approx(0.6 / 61)


def test_empty_and_missing_streams():
    assert reciprocal_rank_fusion({}, weights=DEFAULT_WEIGHTS) == []
    assert reciprocal_rank_fusion({"bm25": [], "vectors": []}, weights=DEFAULT_WEIGHTS) == []
    # a stream absent from rankings is fine (extra weights are ignored)
    assert reciprocal_rank_fusion({"bm25": ["a"]}, weights=DEFAULT_WEIGHTS)[0][0] == "a"


def test_tuples_as_items():
    fused = reciprocal_rank_fusion({"bm25": [("lib/a.js", 1)], "vectors": [("lib/a.js", 1)]}, weights=DEFAULT_WEIGHTS)
    assert fused == [(("lib/a.js", 1), pytest.approx(1.0 / 61))]


@pytest.mark.parametrize(
    "weights, k, message",
    [
        ({"bm25": 1.0}, 60, "no fusion weight for stream(s): vectors"),
        ({"bm25": -0.1, "vectors": 1.0}, 60, "must be a finite number >= 0"),
        ({"bm25": float("nan"), "vectors": 1.0}, 60, "must be a finite number >= 0"),
        ({"bm25": 1.0, "vectors": 1.0}, -1, "RRF k must be >= 0"),
    ],
)
def test_bad_arguments_are_rejected(weights, k, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        reciprocal_rank_fusion({"bm25": ["a"], "vectors": ["b"]}, weights=weights, k=k)


# --------------------------------------------------------------------------- 6. top_margin


def hits(*similarities: float) -> list[VectorHit]:
    return [VectorHit(i, s) for i, s in enumerate(similarities)]


def test_top_margin_on_hand_made_hits():
    eleven = [0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2]
    assert top_margin([]) == 0.0
    assert top_margin(hits(*eleven[:10])) == pytest.approx(0.9 - 0.25)  # few values: the last is the reference
    assert top_margin(hits(0.9, 0.1)) == 0.0                            # fewer than 3: no signal
    assert top_margin(hits(*eleven)) == pytest.approx(0.9 - 0.2)
    assert top_margin(hits(*eleven, 0.1, 0.05)) == pytest.approx(0.9 - 0.2)   # the 11th best, not the worst
    assert top_margin(hits(*reversed(eleven))) == pytest.approx(0.9 - 0.2)   # order does not matter
    # Equal similarities (identical chunks share a vector) count once: 12 hits, 10 distinct → no signal;
    # one more distinct value and the 11th distinct one is the reference.
    assert top_margin(hits(0.9, 0.9, 0.9, *eleven[1:10])) == pytest.approx(0.9 - 0.25)
    assert top_margin(hits(0.9, 0.9, 0.9, *eleven[1:10], 0.1)) == pytest.approx(0.9 - 0.1)
    assert top_margin(hits(0.5, 0.3, 0.2), depth=2) == pytest.approx(0.5 - 0.2)
    assert top_margin(hits(0.5, 0.3), depth=2) == 0.0  # fewer than 3 values
    # A flat list (nothing stands out) is below the engine's default margin; a clear winner is above it.
    flat = [0.50 - 0.005 * i for i in range(12)]
    assert top_margin(hits(*flat)) < DEFAULT_RETRIEVAL_POLICY.min_vector_margin
    assert top_margin(hits(0.8, *flat[1:])) > DEFAULT_RETRIEVAL_POLICY.min_vector_margin
