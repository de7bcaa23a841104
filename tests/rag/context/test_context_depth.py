"""The packer's pool and span shapes of issue 15 (second pass), on small repositories written to disk,
indexed and packed through :meth:`rag.engine.Engine.pack_context` (nothing faked)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from repo_helpers import indexed_engine

from rag.context.packer import DEFAULT_CONTEXT_DEPTH
from rag.context.pool import MixPolicy, context_pool
from rag.context.spans import DEFAULT_SPAN_POLICY, evidence_spans
from rag.search.lexical import Depth
from rag.tokens import estimate_tokens
from rag.types import Source


def _function(name: str, words: str, body_lines: int = 6) -> str:
    body = "\n".join(f"  const step{i} = {i}; // {words if i == 2 else 'plain work'}" for i in range(body_lines))
    return f"function {name}(input) {{\n{body}\n  return input;\n}}\n"


def _long_file(functions: list[tuple[str, str]], *, filler: int = 8) -> str:
    """Functions separated by unrelated functions, so each lands in its own symbol chunk."""
    parts = []
    for i, (name, words) in enumerate(functions):
        parts.append(_function(name, words))
        parts.extend(_function(f"unrelated{i}x{j}", "nothing to see", 10) for j in range(filler))
    names = ", ".join(name for name, _ in functions)
    return "\n".join(parts) + f"\nmodule.exports = {{ {names} }};\n"


WORDS = "throttle budget quota window"


def test_depth_keeps_more_chunks_of_the_best_file(tmp_path: Path):
    """With a Depth the best file keeps up to its cap of chunks, interleaved with other files' best
    chunks at ``file + stride × chunk``; without one it keeps at most ``per_file`` (2)."""
    files = {"src/limiter.js": _long_file([(f"limit{i}", WORDS) for i in range(5)])}
    files |= {f"src/other{i}.js": _function(f"other{i}", "throttle budget quota") for i in range(4)}
    with indexed_engine(tmp_path, files) as engine:
        question = "How does the throttle budget quota window work?"
        flat = engine.retrieve(question, limit=32)
        deep = engine.retrieve(question, limit=32, depth=Depth(caps=(4,), stride=3.0))
        short = engine.retrieve(question, limit=3, depth=Depth(caps=(4,), stride=1.0))
    assert [s.path for s in flat].count("src/limiter.js") == 2
    assert [s.path for s in deep].count("src/limiter.js") == 4
    assert deep[0].path == "src/limiter.js"
    # stride 1: the best file's second chunk (position 1) comes before the third file's first (position 2)
    assert [s.path for s in short].count("src/limiter.js") == 2


def test_pack_context_reaches_the_best_files_later_chunks(tmp_path: Path):
    """With twenty other matching files, the best file's second matching function still reaches the
    packed context (a flat pool of every file's best chunk first would hold only its first)."""
    files = {"src/limiter.js": _long_file([("limitA", WORDS), ("limitB", WORDS)])}
    files |= {f"src/other{i:02}.js": _function(f"other{i}", "throttle budget quota") for i in range(20)}
    with indexed_engine(tmp_path, files) as engine:
        question = "How does the throttle budget quota window work?"
        sources = engine.retrieve(question, limit=8)
        packed = engine.pack_context(question, sources=sources)
        text = engine.read_lines("src/limiter.js", 1, 400).split("\n")
    assert sources[0].path == "src/limiter.js"
    for name in ("limitA", "limitB"):
        line = next(n for n, t in enumerate(text, 1) if f"function {name}" in t) + 3  # its matching line
        assert any(i.path == "src/limiter.js" and i.start <= line <= i.end for i in packed.items), name
    assert packed.tokens_used <= packed.budget


def test_later_files_get_short_spans_and_long_lines_are_cut(tmp_path: Path):
    """Files past ``wide_files`` give their best line with a few lines around it; a window of long
    prose lines is cut to ``max_span_tokens`` around its anchor."""
    prose = " ".join(["Lorem ipsum dolor sit amet, consectetur adipiscing elit"] * 6)
    doc = "\n".join([f"{prose} {i}." for i in range(30)] + ["The throttle budget quota window is explained here."]
                    + [f"{prose} after {i}." for i in range(30)])
    files = {"docs/limits.md": "# Limits\n\n" + doc + "\n"}
    files |= {f"src/mod{i}.js": "\n".join(f"// filler line {j}" for j in range(30)) + "\n"
              + _function(f"mod{i}", WORDS, 30) for i in range(5)}
    with indexed_engine(tmp_path, files) as engine:
        question = "throttle budget quota window"
        sources = engine.retrieve(question, limit=16, depth=DEFAULT_CONTEXT_DEPTH)
        spans = evidence_spans(question, sources=sources, read_lines=engine.read_lines, graph=engine.code_graph())
    policy = DEFAULT_SPAN_POLICY
    doc_spans = [s for s in spans if s.path == "docs/limits.md"]
    assert doc_spans and all(estimate_tokens(s.text) <= policy.max_span_tokens for s in doc_spans)
    assert any("throttle budget quota window" in s.text for s in doc_spans)
    late = [s for s in spans if s.file_rank >= policy.wide_files and not s.callee]
    assert late, "the fixture must rank more files than wide_files"
    longest = policy.compact_before + policy.compact_after + 1
    assert all(s.end - s.start + 1 <= max(longest, policy.compact_symbol_lines) for s in late)
    assert any(WORDS in s.text for s in late)


def test_spans_interleave_a_files_chunks():
    """A file's spans go round by round over its chunks: the second chunk's best span before the
    first chunk's second one."""
    first = "\n".join(["alpha throttle"] + ["x"] * 30 + ["beta throttle"])
    second = "\n".join(["gamma throttle"] + ["y"] * 5)
    sources = [Source("a.txt", 1, 32, 2.0, "txt", "source", first), Source("a.txt", 101, 106, 1.0, "txt", "source", second)]
    spans = evidence_spans("throttle", sources=sources)
    assert [s.start for s in spans][:3] == [1, 101, 26]


def _src(path: str, start: int, kind: str) -> Source:
    return Source(path, start, start + 9, 1.0, path.rsplit(".", 1)[-1], kind, "text")


def test_context_pool_puts_code_among_the_leading_files():
    """A mixed ranking of documentation only gets the code ranking's best file among its leading
    places; after them the rankings alternate, each file once, chunks deduplicated."""
    docs = [_src(f"docs/{n}.md", 1, "documentation") for n in "abcde"]
    code = [_src("src/x.js", 1, "source"), _src("src/y.js", 1, "source"), _src("docs/a.md", 1, "documentation")]
    pool = context_pool(docs[:1], docs, code, policy=MixPolicy(lead_files=3, min_code_files=1))
    assert [s.path for s in pool] == ["docs/a.md", "docs/b.md", "src/x.js", "docs/c.md", "src/y.js",
                                      "docs/d.md", "docs/e.md"]
    # Enough code already among the leading files: the mixed order is kept.
    mixed = [_src("src/x.js", 1, "source"), *docs[:2]]
    one = MixPolicy(lead_files=3, min_code_files=1)
    assert [s.path for s in context_pool(mixed, mixed, code, policy=one)][:3] == ["src/x.js", "docs/a.md", "docs/b.md"]
    # The default wants two source files among the three leading places: the code ranking's next one
    # takes the third place, the documentation follows.
    assert [s.path for s in context_pool(mixed, mixed, code)][:4] == ["src/x.js", "docs/a.md", "src/y.js", "docs/b.md"]
    # No code ranking: the shown sources, then the deeper ones.
    assert [s.path for s in context_pool(docs[:2], docs)] == [s.path for s in docs]


def test_in_all_context_gets_the_same_pool_and_spans(tmp_path: Path):
    """``in:all`` (:class:`rag.federation.FederatedEngine`) packs like one repository does: the best
    file's third matching function reaches the context (the sources shown keep two chunks of a
    file), read from that repository's file."""
    from rag.federation import FederatedEngine

    files = {"src/limiter.js": _long_file([("limitA", WORDS), ("limitB", WORDS), ("limitC", WORDS)])}
    files |= {f"src/other{i:02}.js": _function(f"other{i}", "throttle budget quota") for i in range(20)}
    web = {"src/cart.js": _function("saveCart", "cart storage")}
    with indexed_engine(tmp_path / "api", files) as api, indexed_engine(tmp_path / "web", web) as other:
        federated = FederatedEngine({"api": api, "web": other})
        question = "How does the throttle budget quota window work?"
        sources = federated.retrieve(question, limit=8)
        packed = federated.pack_context(question, sources=sources)
        text = api.read_lines("src/limiter.js", 1, 400).split("\n")
    line = next(n for n, t in enumerate(text, 1) if "function limitC" in t) + 3  # its matching line
    assert sources[0].path == "api/src/limiter.js"
    assert not any(s.path == "api/src/limiter.js" and s.start <= line <= s.end for s in sources)
    spans = [(i.start, i.end) for i in packed.items if i.path == "api/src/limiter.js" and i.start is not None]
    assert any(start <= line <= end for start, end in spans), spans
    assert packed.tokens_used <= packed.budget


def _file_reader(files: dict[str, list[str]]):
    """``read_lines`` over in-memory files (the index's contract: lines past the end are absent)."""
    def read_lines(path: str, start: int, end: int) -> str:
        if path not in files:
            raise KeyError(path)
        return "\n".join(files[path][start - 1:end])
    return read_lines


def test_a_leading_files_unretrieved_lines_are_read_whole_after_its_chunks_first_two_spans():
    """Step 2b: the lines that answer may sit outside the file's retrieved chunks; the whole file is
    scored as one more chunk, and its best span comes after the retrieved chunk's first two."""
    lines = [f"// filler {i}" for i in range(1, 101)]
    lines[1] = "// throttle here"         # line 2
    lines[29] = "// throttle there"       # line 30
    lines[60] = "const throttleBudgetQuota = limit(window); // throttle budget quota"   # line 61, not retrieved
    chunk = Source("src/a.js", 1, 40, 1.0, "js", "source", "\n".join(lines[:40]))
    question = "How is the throttle budget quota computed?"
    read = _file_reader({"src/a.js": lines})
    spans = evidence_spans(question, sources=[chunk], read_lines=read)
    covering = [i for i, s in enumerate(spans) if s.start <= 61 <= s.end]
    assert covering == [2], [(s.start, s.end) for s in spans]
    assert spans[0].start <= 2 <= spans[0].end and spans[1].start <= 30 <= spans[1].end
    # Off, too long a file, or no reader: only the retrieved chunk's lines.
    for policy, reader in ((replace(DEFAULT_SPAN_POLICY, whole_file_lines=0), read),
                           (replace(DEFAULT_SPAN_POLICY, whole_file_lines=99), read),
                           (DEFAULT_SPAN_POLICY, None)):
        assert not any(s.start <= 61 <= s.end for s in evidence_spans(question, sources=[chunk], read_lines=reader,
                                                                       policy=policy))


def test_only_the_leading_files_are_read_whole_and_a_file_with_no_match_gives_nothing_more():
    files = {f"src/f{i}.js": [f"// line {n}" for n in range(1, 61)] for i in range(5)}
    for lines in files.values():
        lines[2] = "// quota"
        lines[50] = "// throttle quota"
    sources = [Source(p, 1, 10, 1.0 - i / 10, "js", "source", "\n".join(files[p][:10])) for i, p in enumerate(files)]
    spans = evidence_spans("throttle quota", sources=sources, read_lines=_file_reader(files))
    reached = {s.path for s in spans if s.start <= 51 <= s.end}
    assert reached == {f"src/f{i}.js" for i in range(DEFAULT_SPAN_POLICY.wide_files)}
    # A chunk no line of which matches (found by the vectors) keeps its first lines; the whole file,
    # matching nowhere either, adds nothing (not the file's first lines).
    plain = {"src/p.js": [f"// line {n}" for n in range(1, 61)]}
    found = Source("src/p.js", 21, 30, 1.0, "js", "source", "\n".join(plain["src/p.js"][20:30]))
    only = evidence_spans("throttle quota", sources=[found], read_lines=_file_reader(plain))
    assert [(s.start, s.end, s.reason) for s in only] == [(21, 30, "retrieved")]
