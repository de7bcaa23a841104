"""rag.citations: reading ``path:start-end`` citations out of answers and checking them against the evidence."""
from __future__ import annotations

from rag.citations import MAX_CITATIONS, Citation, check_citations, extract_citations
from rag.types import Source

DECLINED = "This is not documented in the repository."


def src(path: str, start: int, end: int) -> Source:
    return Source(path, start, end, 1.0, path.rsplit(".", 1)[-1], "source", "text", None)


def labels(text: str) -> list[str]:
    return [c.label() for c in extract_citations(text)]


def test_citation_forms_are_read_in_order_once_each():
    text = ("It hashes the body (src/webhook.js:4-7), see `lib/a.js:L10-L20` and lib/a.js#L3; "
            "./x/y.ts:5–9 and README.md:1 - 5. Again src/webhook.js:4-7.")
    assert labels(text) == ["src/webhook.js:4-7", "lib/a.js:10-20", "lib/a.js:3", "x/y.ts:5-9", "README.md:1-5"]


def test_versions_hosts_bare_paths_and_line_zero_are_not_citations():
    assert labels("Node 1.2:3, express@4.22.3, see lib/router/index.js, e.g. 3.14:15, a.js:0") == []
    assert labels("call api.example.com:443 or https://example.com:8080/x, localhost:3000, 127.0.0.1:80") == []
    assert labels("index.js:12 and Dockerfile.dev:3 and docs/notes.weird:4") == ["index.js:12", "docs/notes.weird:4"]


def test_reversed_ranges_are_normalised_and_dotfiles_are_paths():
    assert labels("foo.js:20-10 and .env.example:2") == ["foo.js:10-20", ".env.example:2"]


def test_the_number_of_citations_read_is_capped():
    text = " ".join(f"a.js:{i}" for i in range(1, MAX_CITATIONS + 50))
    assert len(extract_citations(text)) == MAX_CITATIONS


def test_supported_unsupported_and_cited_sources():
    sources = [src("src/webhook.js", 1, 60), src("README.md", 1, 12), src("src/server.js", 1, 14)]
    answer = ("It computes an HMAC (src/webhook.js:4-7) as the docs say (README.md:5-6); "
              "the route is in src/routes.js:1-9 and src/webhook.js:200-210.")
    check = check_citations(answer, sources=sources, evidence=[("src/routes.js", 40, 60)], declined_phrase=DECLINED)
    assert [c.label() for c in check.supported] == ["src/webhook.js:4-7", "README.md:5-6"]
    assert [c.label() for c in check.unsupported] == ["src/routes.js:1-9", "src/webhook.js:200-210"]
    assert [s.path for s in check.cited] == ["src/webhook.js", "README.md"]  # citation order, not retrieval order
    assert check.declined is False
    assert check.to_json() == {"citations": 4, "supported": 2,
                               "unsupported": ["src/routes.js:1-9", "src/webhook.js:200-210"], "declined": False}


def test_evidence_beyond_the_sources_supports_a_citation_without_adding_a_source():
    check = check_citations("Registered in lib/route.js:88-90.", sources=[src("lib/a.js", 1, 60)],
                            evidence=[("lib/route.js", 80, 95)], declined_phrase=DECLINED)
    assert [c.label() for c in check.supported] == ["lib/route.js:88-90"] and check.cited == []


def test_declining_means_the_phrase_and_no_supported_citation():
    sources = [src("lib/a.js", 1, 60)]
    assert check_citations(DECLINED, sources=sources, evidence=[], declined_phrase=DECLINED).declined
    assert check_citations("this is not documented in the repository", sources=sources, evidence=[],
                           declined_phrase=DECLINED).declined
    partly = f"Parsing is in lib/a.js:3-9. Caching: {DECLINED}"
    assert not check_citations(partly, sources=sources, evidence=[], declined_phrase=DECLINED).declined
    assert not check_citations("It is in lib/a.js:3-9.", sources=sources, evidence=[],
                               declined_phrase=DECLINED).declined


def test_overlap_is_inclusive_at_both_ends():
    c = Citation("a.js", 10, 20)
    assert c.overlaps("a.js", 20, 30) and c.overlaps("a.js", 1, 10)
    assert not c.overlaps("a.js", 21, 30) and not c.overlaps("b.js", 10, 20)
