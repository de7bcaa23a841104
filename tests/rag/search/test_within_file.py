"""The chunk order inside the best files (issue 15, :mod:`rag.search.within_file`), computed by hand.

The retriever's end-to-end behaviour (a file's best chunk by cosine reaches its sources though no
stream listed it first) is tested with a real embeddings server in ``test_vector_stream.py``.
"""
from __future__ import annotations

import pytest

from rag.search.lexical import Candidate
from rag.search.within_file import CHUNK_TERM_SCALE, vector_picks, within_file_order

WEIGHTS = {"bm25": 0.6, "vectors": 0.4}


def cand(ident: int, path: str, file_score: float, *, lexical: bool = True, score: float | None = None) -> Candidate:
    c = Candidate(ident, path, ident * 10, ident * 10 + 9, "js", "source", None, f"chunk {ident}", bm25=1.0,
                  lexical=lexical)
    c.file_score = file_score
    c.score = file_score if score is None else score
    return c


def test_chunks_are_ordered_by_their_ranks_within_the_file():
    # a.js: lexical order 1, 2, 3 (4 only found by the vectors); cosines rank 4, 3, 1, 2.
    cands = [cand(1, "a.js", 0.9), cand(2, "a.js", 0.9), cand(3, "a.js", 0.9), cand(4, "a.js", 0.9, lexical=False)]
    sims = {"a.js": {1: 0.30, 2: 0.20, 3: 0.35, 4: 0.50}}
    out = within_file_order(cands, lexical_order=[1, 9, 2, 3], similarity=sims, weights=WEIGHTS, k=2)
    # RRF inside the file, k = 2 (chunk 9 is of another file: not counted in a.js's ranks).
    term = {1: 0.6 / 3 + 0.4 / 5, 2: 0.6 / 4 + 0.4 / 6, 3: 0.6 / 5 + 0.4 / 4, 4: 0.4 / 3}
    assert [c.id for c in out] == sorted(term, key=lambda i: -term[i]) == [1, 3, 2, 4]
    for c in out:
        assert c.score == pytest.approx(0.9 + CHUNK_TERM_SCALE * term[c.id], rel=1e-12)


def test_the_file_s_best_chunk_by_cosine_passes_the_lexical_stream_s_weaker_chunks():
    # The repository-wide order put chunk 4 last (no lexical rank); inside the file it is the vectors' first.
    # k = 2 (the default): .55/3 for chunk 4 against .45/5 + .55/6 for the lexical third.
    cands = [cand(1, "a.js", 0.9), cand(2, "a.js", 0.9), cand(3, "a.js", 0.9), cand(4, "a.js", 0.9, lexical=False)]
    sims = {"a.js": {1: 0.30, 2: 0.20, 3: 0.10, 4: 0.50}}
    out = within_file_order(cands, lexical_order=[1, 2, 3], similarity=sims, weights={"bm25": 0.45, "vectors": 0.55})
    assert [c.id for c in out] == [1, 2, 4, 3]


def test_files_keep_their_order_and_other_files_their_scores():
    cands = [cand(1, "a.js", 0.9), cand(2, "a.js", 0.9), cand(5, "b.js", 0.8999), cand(6, "c.js", 0.7, score=0.7003)]
    sims = {"a.js": {1: 0.1, 2: 0.9}, "b.js": {5: 0.5}}
    out = within_file_order(cands, lexical_order=[1, 2, 5, 6], similarity=sims, weights=WEIGHTS, k=0)
    assert [c.path for c in out] == ["a.js", "a.js", "b.js", "c.js"]
    assert out[-1].score == 0.7003                                   # c.js is not re-scored
    assert all(c.score - c.file_score <= CHUNK_TERM_SCALE for c in out[:3])


def test_a_negative_k_is_refused():
    with pytest.raises(ValueError, match="RRF k must be >= 0"):
        within_file_order([], lexical_order=[], similarity={}, weights=WEIGHTS, k=-1)


def test_vector_picks_are_the_best_by_cosine_not_yet_candidates():
    assert vector_picks({7: 0.2, 8: 0.5, 9: 0.4}, {8}, per_file=2) == [9]
    assert vector_picks({7: 0.2, 8: 0.5, 9: 0.4}, set(), per_file=2) == [8, 9]
    assert vector_picks({3: 0.4, 2: 0.4}, set(), per_file=1) == [2]      # ties by id
    assert vector_picks({}, set()) == []
