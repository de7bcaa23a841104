"""What the packer spends its budget on (issue 15, third pass): the source-only pool retrieval that
must not abstain, token caps of code snippets, file summaries, short spans and chunks without a
matching line, and spans never made of one line longer than a window. Small repositories written
to disk and indexed, or sources built in the test; nothing faked."""
from __future__ import annotations

from pathlib import Path

from repo_helpers import indexed_engine

from rag.context.packer import (
    MAX_SNIPPET_TOKENS,
    MAX_SUMMARY_TOKENS,
    ROUND_STRIDE,
    _position,
    code_context,
    context_sources,
)
from rag.context.spans import DEFAULT_SPAN_POLICY, evidence_spans
from rag.tokens import estimate_tokens
from rag.types import Source

PRIVACY = {
    "docs/privacy.md": "# Privacy\n\nSensitive password fields are redacted from the log output before it is written.\n"
                       "Configure which fields are sensitive with the redact option.\n",
    "docs/other.md": "# Other\n\nNothing about this here at all.\n",
    "src/censor.js": "function censor(value) {\n  // hides password values\n  return '[hidden]';\n}\n"
                     "module.exports = { censor };\n",
    "src/util.js": "function add(a, b) {\n  return a + b;\n}\nmodule.exports = { add };\n",
}
PRIVACY_QUESTION = "How are sensitive password fields redacted from the log output?"


def test_the_source_only_pool_retrieval_does_not_abstain(tmp_path: Path):
    """Restricted to source files, the question shares one word with the code and would abstain; the
    pool's source-only retrieval asks with ``abstain=False``, so the implementation is packed beside
    the documentation that answered."""
    with indexed_engine(tmp_path, PRIVACY) as engine:
        shown = engine.retrieve(PRIVACY_QUESTION)
        assert [s.path for s in shown] == ["docs/privacy.md"]
        assert engine.retrieve(PRIVACY_QUESTION, kind="source") == []
        assert [s.path for s in engine.retrieve(PRIVACY_QUESTION, kind="source", abstain=False)] == ["src/censor.js"]
        pool = context_sources(engine.retrieve, PRIVACY_QUESTION, shown)
        packed = engine.pack_context(PRIVACY_QUESTION, sources=shown)
        unrelated = engine.retrieve("How is the spaceship refuelled in orbit around saturn today?", kind="source",
                                    abstain=False)
    assert [s.path for s in pool] == ["docs/privacy.md", "src/censor.js"]
    assert "src/censor.js" in packed.files
    assert unrelated == []  # abstain=False still returns nothing when nothing matches at all


def _long_function(name: str, lines: int) -> str:
    body = "\n".join(f"  const field{i} = input.someRatherLongPropertyName{i} ?? defaults.anotherLongName{i};"
                     for i in range(lines))
    return f"function {name}(input, defaults) {{\n{body}\n  return input;\n}}\n"


def test_a_code_snippet_keeps_its_first_lines_within_the_cap(tmp_path: Path):
    """A named symbol of 50 long lines is packed as its first lines within ``MAX_SNIPPET_TOKENS``
    (it used to be 60 lines whatever they cost); a short one stays whole."""
    files = {"src/users.js": _long_function("createUser", 50) + "\nfunction deleteUser(id) {\n  return id;\n}\n"
                             + "module.exports = { createUser, deleteUser };\n"}
    with indexed_engine(tmp_path, files) as engine:
        question = "What do createUser and deleteUser do?"
        entries = code_context(question, graph=engine.code_graph(), retrieved=engine.retrieve(question),
                               read_lines=engine.read_lines)
        snippets = {e.reason: e for e in entries if e.kind == "code"}
        text = engine.read_lines("src/users.js", 1, 200)
    create, delete = snippets["symbol createUser"], snippets["symbol deleteUser"]
    assert create.start == 1 and 10 < create.end < 50
    assert estimate_tokens(create.text) <= MAX_SNIPPET_TOKENS
    assert create.text == "\n".join(text.split("\n")[create.start - 1:create.end])
    assert delete.text == "function deleteUser(id) {\n  return id;\n}"


def test_a_long_file_summary_is_cut_at_a_list_separator(tmp_path: Path):
    """A summary listing many definitions is cut to ``MAX_SUMMARY_TOKENS`` at a ``; `` and ends in ``…``."""
    names = [f"handleSomethingQuiteSpecific{i:02}" for i in range(40)]
    code = "".join(f"function {n}(x) {{\n  return x;\n}}\n" for n in names)
    files = {"src/handlers.js": code + "module.exports = { " + ", ".join(names) + " };\n"}
    with indexed_engine(tmp_path, files) as engine:
        question = "What does handleSomethingQuiteSpecific07 return?"
        entries = code_context(question, graph=engine.code_graph(), retrieved=engine.retrieve(question),
                               read_lines=engine.read_lines)
        full = engine.code_graph().summary("src/handlers.js")
    summary = next(e for e in entries if e.kind == "structure" and e.path == "src/handlers.js")
    assert estimate_tokens(full) > MAX_SUMMARY_TOKENS
    assert estimate_tokens(summary.text) <= MAX_SUMMARY_TOKENS
    assert summary.text.endswith(" …")
    assert full.startswith(summary.text[:-2])


def _source(path: str, start: int, text: str, score: float = 1.0, kind: str = "source") -> Source:
    return Source(path, start, start + len(text.split("\n")) - 1, score, path.rsplit(".", 1)[-1], kind, text)


def test_a_line_longer_than_a_window_gives_no_span():
    """A matching line of minified code (one line longer than ``max_span_tokens``) is not packed; the
    readable matching line of the same chunk still is."""
    minified = "var q=" + ";".join(f"a{i}=throttle(b{i},c{i})" for i in range(200))
    text = "\n".join(["// throttle the budget here", "function go() {}", minified, "// end"])
    spans = evidence_spans("throttle budget", sources=[_source("lib/x.js", 1, text)])
    assert estimate_tokens(minified) > DEFAULT_SPAN_POLICY.max_span_tokens
    assert spans and all(not (s.start <= 3 <= s.end) for s in spans)
    assert any(s.start <= 1 <= s.end for s in spans)


def test_a_chunk_without_a_matching_line_keeps_its_first_lines_within_a_window():
    """A chunk found by the vectors alone (no line matches) keeps its first lines, up to
    ``max_span_tokens``, instead of its whole 60 lines."""
    text = "\n".join(f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 4 for i in range(60))
    spans = evidence_spans("refuse oversized payloads", sources=[_source("docs/a.md", 10, text, kind="documentation")])
    assert [(s.start, s.reason) for s in spans] == [(10, "retrieved")]
    assert spans[0].end < 69
    assert estimate_tokens(spans[0].text) + (spans[0].end - spans[0].start + 1) <= DEFAULT_SPAN_POLICY.max_span_tokens


def test_short_spans_have_short_token_caps():
    """A file past ``wide_files`` gives one short span per chunk, within ``compact_span_tokens`` also
    when its lines are long prose (a short span of a Markdown table used to cost a full one)."""
    policy = DEFAULT_SPAN_POLICY
    leading = [_source(f"lib/lead{i}.js", 1, "// throttle budget quota window") for i in range(policy.wide_files)]
    prose = "lorem ipsum dolor sit amet consectetur " * 3
    lines = [prose] * 40
    lines[25:28] = ["The throttle " + prose, "keeps a budget " + prose, "per quota window " + prose]
    later = _source("docs/limits.md", 1, "\n".join(lines), kind="documentation")
    spans = evidence_spans("throttle budget quota window", sources=[*leading, later])
    mine = [s for s in spans if s.path == "docs/limits.md"]
    assert len(mine) == 1 and mine[0].file_rank == policy.wide_files
    assert mine[0].start <= 28 <= mine[0].end
    assert estimate_tokens(mine[0].text) + (mine[0].end - mine[0].start + 1) <= policy.compact_span_tokens
    full = evidence_spans("throttle budget quota window", sources=[later])  # the same file leading: a full span
    assert estimate_tokens(full[0].text) > policy.compact_span_tokens


def test_file_summaries_come_after_the_leading_files_fourth_spans():
    """The pool keeps up to four chunks of the leading files (rounds 0-3); file summaries, which never
    hold the lines that answer, are packed after those rounds."""
    last_round = max(_position("source", file_rank=f, order=3) for f in range(DEFAULT_SPAN_POLICY.wide_files))
    assert last_round == DEFAULT_SPAN_POLICY.wide_files - 1 + 3 * ROUND_STRIDE
    assert _position("structure", index=0) > last_round
