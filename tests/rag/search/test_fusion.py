"""Fusion on hand-computed ranks and scores (rag.search.fusion): RRF, adaptive weights, z-score fusion."""
from __future__ import annotations

import re

import pytest

from rag.search.fusion import (DEFAULT_CANDIDATE_POOL, DEFAULT_LEXICAL_BASE, DEFAULT_LEXICAL_SLOPE, DEFAULT_RRF_K,
                               DEFAULT_WEIGHTS, adaptive_weights, reciprocal_rank_fusion, zscore_fusion)
from rag.search.vector_stream import DEFAULT_MIN_VECTOR_Z, VectorHit, top_zscore
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY, Evidence


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


# --------------------------------------------------------------------------- 8. z-score fusion (issue 15)


def test_zscore_fusion_docstring_example_by_hand():
    fused = zscore_fusion({"bm25": {"a": 3.0, "b": 1.0, "c": 1.0}, "vectors": {"b": 0.5, "c": 0.4, "d": 0.1}},
                          weights={"bm25": 0.5, "vectors": 0.5})
    m1, s1 = 5 / 3, (((3 - 5 / 3) ** 2 + 2 * (1 - 5 / 3) ** 2) / 3) ** 0.5
    m2 = 1.0 / 3
    s2 = (((0.5 - m2) ** 2 + (0.4 - m2) ** 2 + (0.1 - m2) ** 2) / 3) ** 0.5
    z1 = {"a": (3 - m1) / s1, "b": (1 - m1) / s1, "c": (1 - m1) / s1}
    z2 = {"b": (0.5 - m2) / s2, "c": (0.4 - m2) / s2, "d": (0.1 - m2) / s2}
    expected = {
        "a": 0.5 * z1["a"] + 0.5 * z2["d"],      # absent from vectors: its z at the common depth (3: d's)
        "b": 0.5 * z1["b"] + 0.5 * z2["b"],
        "c": 0.5 * z1["c"] + 0.5 * z2["c"],
        "d": 0.5 * z1["b"] + 0.5 * z2["d"],      # absent from bm25: its z at the common depth (3: c's = b's)
    }
    assert fused == pytest.approx(expected, abs=1e-12)
    assert [round(fused[k], 2) for k in "abcd"] == [0.02, 0.14, -0.16, -1.04]


def test_zscore_fusion_a_stream_sure_of_its_best_moves_the_order_more():
    # Both streams rank two files in opposite orders; the vectors' first stands far above its others.
    flat = {"x": 0.52, "y": 0.50, "p": 0.49, "q": 0.48}
    peaked = {"y": 0.90, "x": 0.40, "p": 0.39, "q": 0.38}
    fused = zscore_fusion({"bm25": flat, "vectors": peaked}, weights={"bm25": 0.5, "vectors": 0.5})
    assert max(fused, key=fused.get) == "y"
    # RRF with the same weights cannot tell them apart: x and y tie.
    rrf = dict(reciprocal_rank_fusion({"bm25": sorted(flat, key=lambda k: -flat[k]),
                                       "vectors": sorted(peaked, key=lambda k: -peaked[k])},
                                      weights={"bm25": 0.5, "vectors": 0.5}))
    assert rrf["x"] == pytest.approx(rrf["y"])


def test_zscore_fusion_an_absent_item_scores_at_the_common_depth_not_the_longer_lists_end():
    # BM25 lists five files, the vectors three: a file only the vectors found is put at BM25's third
    # (the shortest stream's length), however long BM25's list happens to be.
    bm25 = {"a": 4.0, "b": 3.0, "c": 2.0, "x": 1.0, "y": 0.0}
    vectors = {"d": 0.9, "a": 0.5, "b": 0.4}
    fused = zscore_fusion({"bm25": bm25, "vectors": vectors}, weights={"bm25": 0.5, "vectors": 0.5})
    m1 = sum(bm25.values()) / 5
    s1 = (sum((v - m1) ** 2 for v in bm25.values()) / 5) ** 0.5
    m2 = sum(vectors.values()) / 3
    s2 = (sum((v - m2) ** 2 for v in vectors.values()) / 3) ** 0.5
    assert fused["d"] == pytest.approx(0.5 * (2.0 - m1) / s1 + 0.5 * (0.9 - m2) / s2)
    assert fused["x"] == pytest.approx(0.5 * (1.0 - m1) / s1 + 0.5 * (0.4 - m2) / s2)   # vectors' 3rd = its last
    longer = zscore_fusion({"bm25": {**bm25, "z1": -5.0, "z2": -9.0}, "vectors": vectors},
                           weights={"bm25": 0.5, "vectors": 0.5}, depth=5)   # same reference (top 5)
    assert longer["d"] == pytest.approx(fused["d"])


def test_zscore_fusion_depth_sets_the_reference_and_degenerate_streams_add_nothing():
    scores = {"a": 5.0, "b": 4.0, "c": 0.0}
    deep = zscore_fusion({"s": scores}, weights={"s": 1.0}, depth=3)
    top2 = zscore_fusion({"s": scores}, weights={"s": 1.0}, depth=2)       # mean 4.5, std 0.5
    assert top2 == pytest.approx({"a": 1.0, "b": -1.0, "c": -9.0})
    assert deep["a"] < top2["a"]
    assert zscore_fusion({"s": {"a": 1.0}}, weights={"s": 1.0}) == {"a": 0.0}          # one item: no scale
    assert zscore_fusion({"s": {"a": 1.0, "b": 1.0}, "t": {"b": 2.0, "a": 1.0}},
                         weights={"s": 1.0, "t": 1.0}) == pytest.approx({"a": -1.0, "b": 1.0})   # s is flat
    assert zscore_fusion({}, weights={}) == {}


@pytest.mark.parametrize(
    "streams, weights, depth, message",
    [
        ({"bm25": {"a": 1.0}}, {}, 10, "no fusion weight for stream(s): bm25"),
        ({"bm25": {"a": 1.0}}, {"bm25": -1.0}, 10, "must be a finite number >= 0"),
        ({"bm25": {"a": float("inf")}}, {"bm25": 1.0}, 10, "must be finite"),
        ({"bm25": {"a": 1.0}}, {"bm25": 1.0}, 0, "depth must be >= 1"),
    ],
)
def test_zscore_fusion_rejects_bad_arguments(streams, weights, depth, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        zscore_fusion(streams, weights=weights, depth=depth)


# --------------------------------------------------------------------------- 9. abstention with vectors (issue 15)


def test_vectors_overrule_weak_lexical_evidence_only_for_a_long_description():
    policy = DEFAULT_RETRIEVAL_POLICY
    z = policy.min_vector_z
    short = Evidence(coverage=0.3, absent_share=0.25, matched_terms=2, topical_terms=4)   # names its topic
    long = Evidence(coverage=0.15, absent_share=0.4, matched_terms=2, topical_terms=policy.vector_override_min_terms)
    none_matched = Evidence(coverage=0.0, absent_share=1.0, matched_terms=0, topical_terms=9)
    assert short.abstain(policy) and long.abstain(policy) and none_matched.abstain(policy)
    assert short.abstain(policy, vector_z=z + 2)            # a standing-out chunk is the closest topic, not an answer
    assert not long.abstain(policy, vector_z=z)             # a description worded unlike the code
    assert long.abstain(policy, vector_z=z - 0.01)
    # Answerable descriptions measured z 2.28-2.98 (issue 15); an evenly spread neighbourhood (√3) stays below.
    assert not long.abstain(policy, vector_z=2.28)
    assert long.abstain(policy, vector_z=top_zscore(hits(*(0.50 - 0.005 * i for i in range(50)))))
    assert not none_matched.abstain(policy, vector_z=z)
    covered = Evidence(coverage=0.8, absent_share=0.0, matched_terms=5, topical_terms=6)
    assert not covered.abstain(policy, vector_z=0.0)        # vectors never veto real lexical evidence
    assert not Evidence(0.0, 1.0, explicit_path=True).abstain(policy, vector_z=0.0)
