"""The implementation among the leading files (rag.search.source_lead)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from rag.search.query import analyze
from rag.search.source_lead import is_implementation, lead_with_sources

BEHAVIOUR = analyze("Why is a large body written in slices?")


@dataclass
class Cand:
    id: int
    path: str
    kind: str
    score: float


def ranking(*files: str, chunks: int = 1) -> list[Cand]:
    """One candidate per file and chunk, scores falling by 0.1 per file (0.01 per chunk), kinds by extension."""
    out, next_id = [], 0
    for i, path in enumerate(files):
        kind = "documentation" if path.endswith(".md") else "test" if ".test." in path else "source"
        for j in range(chunks):
            out.append(Cand(next_id, path, kind, round(1.0 - 0.1 * i - 0.01 * j, 4)))
            next_id += 1
    return out


def files_of(cands) -> list[str]:
    return list(dict.fromkeys(c.path for c in cands))


def test_sources_take_the_places_the_quota_needs_and_documentation_keeps_the_rest():
    cands = ranking("a.md", "b.md", "c.md", "x.js", "d.md", "y.js", "z.js")
    out = lead_with_sources(cands, BEHAVIOUR, lead=4, min_source=3)
    assert files_of(out) == ["a.md", "x.js", "y.js", "z.js", "b.md", "c.md", "d.md"]


def test_with_fewer_sources_than_the_quota_all_of_them_come_as_late_as_the_quota_allows():
    cands = ranking("a.md", "b.md", "c.md", "x.js", "d.md", "y.js")
    out = lead_with_sources(cands, BEHAVIOUR, lead=4, min_source=3)
    assert files_of(out) == ["a.md", "b.md", "x.js", "y.js", "c.md", "d.md"]


def test_scores_are_dealt_out_again_so_they_still_fall_along_the_list():
    cands = ranking("a.md", "b.md", "c.md", "x.js", "d.md", "y.js", "z.js", chunks=2)
    out = lead_with_sources(cands, BEHAVIOUR, lead=4, min_source=3)
    firsts = [next(c for c in out if c.path == p) for p in files_of(out)]
    assert [round(c.score, 4) for c in firsts] == [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    x = [c for c in out if c.path == "x.js"]   # the file's second chunk moved by as much as its first
    assert [round(c.score, 4) for c in x] == [0.9, 0.89]
    assert sorted(c.id for c in out) == list(range(14))   # nothing lost, nothing added


def test_a_ranking_that_meets_the_quota_is_unchanged():
    cands = ranking("x.js", "a.md", "y.js", "z.js", "b.md")
    out = lead_with_sources(cands, BEHAVIOUR, lead=4, min_source=3)
    assert out == cands and [c.score for c in out] == [c.score for c in ranking("x.js", "a.md", "y.js", "z.js", "b.md")]


@pytest.mark.parametrize("question", [
    "How do I configure the body limit?",            # docs intent: the answer is prose
    "What changed about body limits in 4.0?",        # release intent
    "Which tests cover the body limit?",             # tests asked for
    "What does lib/limits.js do with a large body?",  # a file named
])
def test_questions_for_prose_history_tests_or_a_named_file_keep_the_fused_order(question):
    cands = ranking("a.md", "b.md", "c.md", "x.js", "y.js", "z.js")
    assert files_of(lead_with_sources(cands, analyze(question), lead=4, min_source=3)) == files_of(cands)


def test_pinned_files_keep_their_places_and_do_not_count():
    cands = ranking("named.md", "a.md", "b.md", "x.js", "c.md", "y.js")
    pinned = {cands[0].id}
    out = lead_with_sources(cands, BEHAVIOUR, lead=3, min_source=2, pinned=pinned)
    assert files_of(out) == ["named.md", "a.md", "x.js", "y.js", "b.md", "c.md"]
    assert out[0].score == 1.0


def test_a_source_below_the_ranking_s_threshold_is_not_promoted():
    cands = ranking("a.md", "b.md", "c.md", "x.js", "d.md", "y.js")  # y.js scores 0.5
    out = lead_with_sources(cands, BEHAVIOUR, lead=4, min_source=3, min_score=0.55)
    assert files_of(out) == ["a.md", "b.md", "c.md", "x.js", "d.md", "y.js"]


def test_tests_declarations_benchmarks_and_examples_are_not_implementation():
    assert is_implementation("lib/reply.js", "source")
    assert not is_implementation("types/index.d.ts", "source")
    assert not is_implementation("index.d.cts", "source") and not is_implementation("dist/index.D.MTS", "source")
    assert not is_implementation("benchmarks/utils/run.js", "source")
    assert not is_implementation("examples/hello.js", "source")
    assert not is_implementation("test/reply.test.js", "test")
    assert not is_implementation("docs/Reply.md", "documentation")
    cands = ranking("a.md", "b.md", "c.md", "bench/x.js", "types.d.ts", "x.js")
    out = lead_with_sources(cands, BEHAVIOUR, lead=3, min_source=1)
    assert files_of(out) == ["a.md", "b.md", "x.js", "c.md", "bench/x.js", "types.d.ts"]


def test_off_when_the_quota_is_zero():
    cands = ranking("a.md", "b.md", "x.js")
    assert files_of(lead_with_sources(cands, BEHAVIOUR, lead=4, min_source=0)) == ["a.md", "b.md", "x.js"]
    assert files_of(lead_with_sources(cands, BEHAVIOUR, lead=0, min_source=3)) == ["a.md", "b.md", "x.js"]
