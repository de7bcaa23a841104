"""rag.answer.citations: reading ``path:start-end`` citations out of answers and checking them against the evidence."""
from __future__ import annotations

import time

from rag.answer.citations import MAX_CITATIONS, Citation, check_citations, extract_citations
from rag.types import Source

DECLINED = "This is not documented in the repository."


def src(path: str, start: int, end: int) -> Source:
    return Source(path, start, end, 1.0, path.rsplit(".", 1)[-1], "source", "text", None)


def labels(text: str, known=()) -> list[str]:
    return [c.label() for c in extract_citations(text, known_paths=known)]


def shown(*sources: Source) -> list[tuple[str, int, int]]:
    return [(s.path, s.start, s.end) for s in sources]


def test_citation_forms_are_read_in_order_once_each():
    text = ("It hashes the body (src/webhook.js:4-7), see `lib/a.js:L10-L20` and lib/a.js#L3; "
            "./x/y.ts:5–9, README.md:1 - 5, `lib/b.js` (lines 12—20) and lib/c.js:0-5. Again src/webhook.js:4-7.")
    assert labels(text) == ["src/webhook.js:4-7", "lib/a.js:10-20", "lib/a.js:3", "x/y.ts:5-9", "README.md:1-5",
                            "lib/b.js:12-20", "lib/c.js:1-5"]


def test_versions_hosts_anchors_bare_paths_and_urls_are_not_citations():
    assert labels("Node 1.2:3, express@4.22.3, see lib/router/index.js, e.g. 3.14:15") == []
    assert labels("call api.example.com:443 or https://example.com:8080/x, localhost:3000, 127.0.0.1:80") == []
    assert labels("see docs/api.md#10-things and https://github.com/o/r/blob/main/lib/a.js#L10-L20") == []


def test_bare_names_resolve_to_the_one_shown_path_they_name():
    known = ["lib/router.js", "bin/www", "Makefile", "lib/a/index.js", "lib/b/index.js"]
    text = "router.js:12-20, bin/www:5, Makefile:4, index.js:3, Dockerfile:2, a/index.js:9"
    assert labels(text, known) == ["lib/router.js:12-20", "bin/www:5", "Makefile:4", "index.js:3",
                                   "lib/a/index.js:9"]


def test_reversed_ranges_are_normalised_and_dotfiles_are_paths():
    assert labels("foo.js:20-10 and .env.example:2") == ["foo.js:10-20", ".env.example:2"]


def test_the_number_of_citations_read_is_capped_and_reading_is_fast():
    text = " ".join(f"a.js:{i}" for i in range(1, MAX_CITATIONS + 50))
    assert len(extract_citations(text)) == MAX_CITATIONS
    worst = ("a/" * 50 + "b." * 50 + "x ") * 1000 + "1.2.3.4:5 " * 2000  # ~200 KB of near-misses
    started = time.perf_counter()
    assert extract_citations(worst) == []
    assert time.perf_counter() - started < 2.0  # linear scan; a backtracking regex would take minutes


def test_supported_unsupported_and_cited_sources():
    sources = [src("src/webhook.js", 1, 60), src("README.md", 1, 12), src("src/server.js", 1, 14)]
    answer = ("It computes an HMAC (src/webhook.js:4-7) as the docs say (README.md:5-6); "
              "the route is in src/routes.js:1-9 and src/webhook.js:200-210.")
    check = check_citations(answer, sources=sources, evidence=shown(*sources) + [("src/routes.js", 40, 60)],
                            declined_phrase=DECLINED)
    assert [c.label() for c in check.supported] == ["src/webhook.js:4-7", "README.md:5-6"]
    assert [c.label() for c in check.unsupported] == ["src/routes.js:1-9", "src/webhook.js:200-210"]
    assert [s.path for s in check.cited] == ["src/webhook.js", "README.md"]  # citation order, not retrieval order
    assert check.declined is False
    assert check.to_json() == {"citations": 4, "supported": 2,
                               "unsupported": ["src/routes.js:1-9", "src/webhook.js:200-210"], "declined": False}


def test_a_retrieved_source_the_model_was_not_shown_does_not_support_a_citation():
    packed, cut = src("lib/a.js", 1, 60), src("lib/b.js", 1, 60)
    check = check_citations("See lib/b.js:3-4.", sources=[packed, cut], evidence=shown(packed),
                            declined_phrase=DECLINED)
    assert [c.label() for c in check.unsupported] == ["lib/b.js:3-4"] and check.cited == []


def test_a_shown_code_context_entry_is_cited_as_its_own_lines():
    check = check_citations("Registered in lib/route.js:88-90.", sources=[src("lib/a.js", 1, 60)],
                            evidence=[("lib/a.js", 1, 60), ("lib/route.js", 80, 95)], declined_phrase=DECLINED)
    assert [c.label() for c in check.supported] == ["lib/route.js:88-90"]
    assert [(s.path, s.start, s.end, s.text) for s in check.cited] == [("lib/route.js", 88, 90, "")]


def test_a_code_context_citation_reaching_past_what_was_shown_links_only_the_shown_lines():
    # A model that cites lib/route.js:88-400 was shown lines 80-95 (a 95-line file, say): the source
    # linked for it is the lines it was shown, never a range past them (or past the file's end).
    check = check_citations("Registered in lib/route.js:88-400 and lib/route.js:70-82.",
                            sources=[src("lib/a.js", 1, 60)],
                            evidence=[("lib/a.js", 1, 60), ("lib/route.js", 80, 95)], declined_phrase=DECLINED)
    assert [c.label() for c in check.supported] == ["lib/route.js:88-400", "lib/route.js:70-82"]
    assert [(s.path, s.start, s.end) for s in check.cited] == [("lib/route.js", 88, 95), ("lib/route.js", 80, 82)]


def test_only_an_answer_that_opens_with_the_phrase_and_cites_nothing_declines():
    sources = [src("lib/router.js", 10, 40)]
    evidence = shown(*sources)

    def declined(answer: str) -> bool:
        return check_citations(answer, sources=sources, evidence=evidence, declined_phrase=DECLINED).declined
    assert declined(DECLINED) and declined("**this is not documented in the repository**")
    assert declined(DECLINED + " The excerpts cover routing, not caching.")
    assert not declined("Routes are matched in `lib/router.js`:12-20. Decoding: " + DECLINED)
    partial = check_citations("Routes are matched in `lib/router.js`:12-20. Decoding: " + DECLINED,
                              sources=sources, evidence=evidence, declined_phrase=DECLINED)
    assert [s.path for s in partial.cited] == ["lib/router.js"]
    assert not declined("Routes are matched in router.js (lines 12-20). Decoding: " + DECLINED)
    assert not declined(f"Matching is in lib/router.js:12-20. {DECLINED}")
    assert not declined("It is in lib/router.js:12-20.")


def test_overlap_is_inclusive_at_both_ends():
    c = Citation("a.js", 10, 20)
    assert c.overlaps("a.js", 20, 30) and c.overlaps("a.js", 1, 10)
    assert not c.overlaps("a.js", 21, 30) and not c.overlaps("b.js", 10, 20)
