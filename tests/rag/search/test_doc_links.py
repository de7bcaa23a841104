"""The source files the leading documentation names (rag.search.doc_links)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from rag.search.doc_links import MAX_DEFINERS, code_names, link_from_docs


@dataclass
class Cand:
    id: int
    path: str
    kind: str
    text: str
    score: float


def ranking(*files: tuple[str, str]) -> list[Cand]:
    """One candidate per ``(path, text)``, scores 1.0, 0.98, 0.96, … (close, as fused scores are)."""
    out = []
    for i, (path, text) in enumerate(files):
        kind = ("documentation" if path.endswith((".md", ".rst")) else "test" if "test" in path
                else "types" if path.endswith(".d.ts") else "source")
        out.append(Cand(i, path, kind, text, round(1.0 - 0.02 * i, 4)))
    return out


def files_of(cands) -> list[str]:
    return list(dict.fromkeys(c.path for c in cands))


# name → {path: weight}: 1.0 for a definition, 0.8 for an export (rag.search.structure.symbol_table)
SYMBOLS = {
    "sendReply": {"lib/reply.js": 1.0},
    "warnTwice": {"lib/warnings.js": 1.0, "lib/index.js": 0.8},
    "Retrying": {"tenacity/__init__.py": 1.0},
    "handler": {f"lib/h{i}.js": 1.0 for i in range(MAX_DEFINERS + 1)},
    "checkTwice": {"test/reply.test.js": 1.0},
    "ReplyType": {"types/reply.d.ts": 1.0},
}


def definers(name: str) -> dict[str, float]:
    return SYMBOLS.get(name, {})


def test_code_names_are_the_identifiers_inside_backquotes():
    assert code_names("Call `reply.sendReply(payload)` twice; see `id` and plain sendReply.") == {
        "reply", "sendReply", "payload"}
    # reStructuredText: double backquotes and roles
    assert code_names("Use ``Retrying`` or :func:`tenacity.retry_if_result`.") == {
        "Retrying", "tenacity", "retry_if_result"}
    assert code_names("no code here") == set()
    # every class has a __repr__; a reST link's URL is no code
    assert code_names("Override `__repr__` or see `the guide <https://example.org/guide/options>`_.") == set()


def test_a_source_file_the_leading_page_names_moves_up():
    cands = ranking(("docs/reply.md", "A second `sendReply` only logs a warning."), ("docs/hooks.md", "Hooks."),
                    ("lib/other.js", "x"), ("lib/more.js", "y"), ("lib/reply.js", "function sendReply() {}"))
    out = link_from_docs(cands, definers=definers, share=0.05)
    assert files_of(out) == ["docs/reply.md", "docs/hooks.md", "lib/reply.js", "lib/other.js", "lib/more.js"]
    assert next(c.score for c in out if c.path == "lib/reply.js") == pytest.approx(0.92 + 0.05)   # 0.05 × best, 1.0


def test_only_definitions_in_implementation_files_count_and_common_names_say_nothing():
    page = "See `warnTwice`, `handler`, `checkTwice` and `ReplyType`."
    cands = ranking(("docs/a.md", page), ("lib/x.js", ""), ("lib/index.js", ""), ("lib/h0.js", ""),
                    ("test/reply.test.js", ""), ("types/reply.d.ts", ""), ("lib/warnings.js", ""))
    before = {c.path: c.score for c in cands}
    out = link_from_docs(cands, definers=definers, share=0.05)
    # warnTwice is defined in lib/warnings.js (lib/index.js only exports it); handler is defined in
    # MAX_DEFINERS + 1 files; a test and a type declaration are not the implementation
    assert {c.path: round(c.score - before[c.path], 6) for c in out if c.score != before[c.path]} == {
        "lib/warnings.js": 0.05}
    assert files_of(out) == ["docs/a.md", "lib/x.js", "lib/index.js", "lib/h0.js", "lib/warnings.js",
                             "test/reply.test.js", "types/reply.d.ts"]


def test_only_the_leading_files_documentation_is_read_and_pinned_candidates_stay():
    late_page = ("docs/late.md", "`sendReply`")
    cands = ranking(("lib/a.js", ""), ("lib/b.js", ""), ("lib/c.js", ""), late_page, ("lib/reply.js", ""))
    assert files_of(link_from_docs(cands, definers=definers, share=0.05)) == files_of(cands)   # 4th file: not read
    pinned = ranking(("lib/named.js", ""), ("docs/reply.md", "`sendReply`"), ("lib/x.js", ""), ("lib/reply.js", ""))
    pinned[0].score = 4.5   # a hard structural boost (rag.search.lexical.FUSED_HARD_SCORE + …)
    out = link_from_docs(pinned, definers=definers, share=0.05, pinned={0})
    assert files_of(out) == ["lib/named.js", "lib/reply.js", "docs/reply.md", "lib/x.js"]
    assert out[0].score == 4.5
    # 0.05 of the best unpinned score (docs/reply.md, 0.98), not of the pinned 4.5
    assert next(c.score for c in out if c.path == "lib/reply.js") == pytest.approx(0.94 + 0.05 * 0.98)


def test_a_file_is_credited_for_two_names_at_most_and_share_zero_turns_it_off():
    api = {f"name{i}": {"lib/api.js": 1.0} for i in range(5)}
    page = " ".join(f"`name{i}`" for i in range(5))
    cands = ranking(("docs/api.md", page), ("lib/a.js", ""), ("lib/api.js", ""))
    out = link_from_docs(cands, definers=lambda name: api.get(name, {}), share=0.05)
    assert next(c.score for c in out if c.path == "lib/api.js") == pytest.approx(0.96 + 2 * 0.05)
    untouched = ranking(("docs/api.md", page), ("lib/a.js", ""), ("lib/api.js", ""))
    assert [(c.path, c.score) for c in link_from_docs(untouched, definers=lambda name: api.get(name, {}), share=0)] == \
        [(c.path, c.score) for c in ranking(("docs/api.md", page), ("lib/a.js", ""), ("lib/api.js", ""))]
