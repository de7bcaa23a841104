"""Reciprocal Rank Fusion on hand-computed ranks (rag.search.fusion)."""
from __future__ import annotations

import pytest

from rag.search.fusion import (DEFAULT_CANDIDATE_POOL, DEFAULT_LEXICAL_BASE, DEFAULT_LEXICAL_SLOPE, DEFAULT_RRF_K,
                               DEFAULT_WEIGHTS, adaptive_weights, reciprocal_rank_fusion)
from rag.search.vector_stream import DEFAULT_MIN_VECTOR_Z, VectorHit, top_zscore
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


# --------------------------------------------------------------------------- 6. top_zscore


def hits(*similarities: float) -> list[VectorHit]:
    return [VectorHit(i, s) for i, s in enumerate(similarities)]


def test_top_zscore_on_hand_made_hits():
    assert top_zscore([]) == 0.0
    assert top_zscore(hits(0.9, 0.1)) == 0.0                   # fewer than 3 distinct values: no signal
    assert top_zscore(hits(0.5, 0.5, 0.5, 0.5)) == 0.0         # one distinct value: no signal
    sims = [0.9, 0.5, 0.4, 0.3]
    mean, std = sum(sims) / 4, (sum((x - sum(sims) / 4) ** 2 for x in sims) / 4) ** 0.5
    assert top_zscore(hits(*sims)) == pytest.approx((0.9 - mean) / std)
    assert top_zscore(hits(*reversed(sims))) == pytest.approx((0.9 - mean) / std)   # order does not matter
    # Equal similarities (identical chunks share a vector) count once.
    assert top_zscore(hits(0.9, 0.9, 0.5, 0.4, 0.3, 0.3)) == pytest.approx((0.9 - mean) / std)


def test_a_flat_neighbourhood_is_below_the_floor_and_an_outlier_above_it():
    flat = [0.50 - 0.005 * i for i in range(50)]
    assert top_zscore(hits(*flat)) < DEFAULT_RETRIEVAL_POLICY.min_vector_z == DEFAULT_MIN_VECTOR_Z
    assert top_zscore(hits(0.8, *flat[1:])) > DEFAULT_RETRIEVAL_POLICY.min_vector_z
    # The floor is relative: the same outlier on a lower scale (another model, another corpus) still stands out.
    assert top_zscore(hits(*(x / 2 for x in (0.8, *flat[1:])))) == pytest.approx(top_zscore(hits(0.8, *flat[1:])))


# --------------------------------------------------------------------------- 7. adaptive weights


def test_adaptive_weights_follow_lexical_coverage():
    assert adaptive_weights(0.5) == pytest.approx({"bm25": 0.6, "vectors": 0.4})     # issue 7's fixed weights
    assert adaptive_weights(0.0) == pytest.approx({"bm25": DEFAULT_LEXICAL_BASE, "vectors": 1 - DEFAULT_LEXICAL_BASE})
    assert adaptive_weights(1.0)["bm25"] == pytest.approx(DEFAULT_LEXICAL_BASE + DEFAULT_LEXICAL_SLOPE)
    assert adaptive_weights(1.7) == adaptive_weights(1.0)        # coverage is a share: clamped
    assert adaptive_weights(-1.0) == adaptive_weights(0.0)
    assert adaptive_weights(0.2, base=0.9, slope=1.0) == {"bm25": 1.0, "vectors": 0.0}   # weights stay in [0, 1]
    for c in (0.0, 0.3, 0.8):
        w = adaptive_weights(c)
        assert w["bm25"] + w["vectors"] == pytest.approx(1.0)
    assert adaptive_weights(0.9)["bm25"] > adaptive_weights(0.1)["bm25"]
    with pytest.raises(ValueError, match="finite"):
        adaptive_weights(float("nan"))
