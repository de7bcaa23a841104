"""Symbol-boundary and Markdown-section chunks (issue 15): exact ranges, every line covered,
nesting, splitting with a header, merging, sections, fallbacks, CRLF. Real parser, no index."""
from __future__ import annotations

import random

import pytest

from rag.ingest.chunk import ChunkPolicy, chunk_file, split_lines
from rag.ingest.prepare import StructureParser, symbol_spans
from rag.ingest.symbol_chunks import (
    DEEP_NESTING,
    MAX_HEADER_LINES,
    MAX_SYMBOL_DEPTH,
    PIECE_OVERLAP_LINES,
    SymbolSpan,
    section_chunks,
    symbol_chunks,
)

POLICY = ChunkPolicy()  # 60-line cap, neighbours merged up to 60 lines, 3,500 characters


def js_chunks(text: str, path: str = "lib/a.js", policy: ChunkPolicy = POLICY):
    """Chunks of a JavaScript file as the ingest step makes them (parse, then chunk)."""
    file_type = path.rsplit(".", 1)[-1]
    structure = StructureParser().parse(path, file_type, text)
    return chunk_file(path, text, file_type=file_type, kind="source", definitions=symbol_spans(structure),
                      policy=policy)


def assert_tiles(chunks, text: str, max_chars: int = POLICY.max_chars) -> None:
    """Chunks are verbatim, in line order, and cover every line of the file; two chunks overlap
    only where a split definition's piece repeats the end of the piece before it."""
    lines = split_lines(text)
    assert chunks, "a non-blank file gives chunks"
    assert chunks[0].start == 1 and chunks[-1].end == len(lines)
    for a, b in zip(chunks, chunks[1:]):
        if a.start == a.end == b.start and len(lines[a.start - 1]) > max_chars:
            continue  # pieces of one long line
        assert a.start < b.start <= a.end + 1 and a.end < b.end
        if b.start <= a.end:
            assert a.end - b.start + 1 <= PIECE_OVERLAP_LINES
    for c in chunks:
        assert 1 <= c.start <= c.end <= len(lines)
        assert len(c.text) <= max_chars
        if len(lines[c.start - 1]) > max_chars:
            assert c.start == c.end and c.text in lines[c.start - 1]
        else:
            assert c.text == "\n".join(lines[c.start - 1 : c.end])


def function(name: str, body_lines: int, indent: str = "", signature: str | None = None) -> list[str]:
    sig = signature or f"function {name}(req, res) {{"
    body = [f"{indent}  const step{i} = {name}Part{i}(req);" for i in range(1, body_lines + 1)]
    return [f"{indent}{sig}", *body, f"{indent}}}"]


# -- exact ranges, symbols, comments -------------------------------------------------------------


def test_a_chunk_per_definition_with_exact_ranges_and_its_leading_comment():
    lines = [
        "'use strict';",                               # 1
        "const http = require('http');",               # 2
        "const util = require('util');",               # 3
        "",                                            # 4
        "/**",                                         # 5  the JSDoc of parse, one blank line above it
        " * Parse the body.",                          # 6
        " */",                                         # 7
        "",                                            # 8
        *function("parse", 52),                        # 9-62
        "",                                            # 63
        "// send the reply",                           # 64
        *function("send", 52),                         # 65-118
        "",                                            # 119
        "module.exports = { parse, send };",           # 120
    ]
    text = "\n".join(lines) + "\n"
    chunks = js_chunks(text)
    assert [(c.start, c.end, c.symbol) for c in chunks] == [
        (1, 4, None),              # imports: top-level code, its own unit (parse is too big to join)
        (5, 63, "parse"),          # JSDoc + blank + the function; the blank after it
        (64, 120, "send"),         # its comment; the export line is tiny and joins it
    ]
    assert_tiles(chunks, text)
    assert all(c.header is None for c in chunks)  # each shows its own signature
    # Two lines of imports are tiny: they join the function below them.
    shorter = js_chunks("\n".join(lines[:2] + lines[3:]) + "\n")
    assert [(c.start, c.end, c.symbol) for c in shorter][0] == (1, 62, "parse")


def test_small_neighbours_merge_up_to_the_merge_limit_and_name_what_they_hold():
    lines = ["const a = require('a');", ""]
    for name in ("alpha", "beta", "gamma", "delta"):
        lines += [*function(name, 3), ""]
    lines += ["module.exports = { alpha, beta, gamma, delta };"]
    text = "\n".join(lines) + "\n"
    merged = js_chunks(text)
    assert [(c.start, c.end) for c in merged] == [(1, len(lines))]
    assert merged[0].symbol == "alpha, beta, gamma, …"
    # Without merging, each function is its own chunk (the one-line tail joins the last).
    alone = js_chunks(text, policy=ChunkPolicy(merge_lines=0))
    assert [c.symbol for c in alone] == ["alpha", "beta", "gamma", "delta"]
    assert_tiles(alone, text)
    assert alone[0].start == 1 and alone[-1].end == len(lines)


def test_nested_class_methods_get_class_paths_and_the_class_signature_as_header():
    lines = ["class Router extends EventEmitter {", "  constructor(options) {", "    super();",
             "    this.options = options;", "  }", ""]
    for name in ("handle", "dispatch", "mount"):
        lines += [f"  {name}(req, res, next) {{", *[f"    const x{i} = this.{name}Step{i}(req);" for i in range(30)],
                  "  }", ""]
    lines += ["}", "", "module.exports = Router;"]
    text = "\n".join(lines) + "\n"
    chunks = js_chunks(text, policy=ChunkPolicy(merge_lines=30))
    assert_tiles(chunks, text)
    by_symbol = {c.symbol: c for c in chunks}
    assert {"Router.handle", "Router.dispatch", "Router.mount"} <= set(by_symbol)
    handle = by_symbol["Router.handle"]
    assert lines[handle.start - 1].strip() == "handle(req, res, next) {"
    assert handle.header == "class Router extends EventEmitter {"
    # The class signature and the constructor: their own chunk, no header.
    assert (chunks[0].start, chunks[0].end, chunks[0].symbol, chunks[0].header) == (
        1, 6, "Router, Router.constructor", None)
    # With the default merge limit the constructor and the first method share a chunk.
    assert js_chunks(text)[0].symbol == "Router, Router.constructor, Router.handle"


def test_a_huge_function_is_split_at_blank_lines_with_its_signature_repeated_as_header():
    lines = ["function handle(req, res, out) {"]
    for block in range(10):                                # 10 blocks of 20 lines, blank-separated
        lines += [f"  var v{block}_{i} = step(req, {i});" for i in range(20)] + [""]
    lines += ["}"]
    text = "\n".join(lines) + "\n"
    chunks = js_chunks(text)
    assert_tiles(chunks, text)
    assert len(chunks) >= 4 and all(c.end - c.start + 1 <= POLICY.max_lines for c in chunks)
    assert all(c.symbol == "handle" for c in chunks)
    assert chunks[0].header is None
    assert all(c.header == "function handle(req, res, out) {" for c in chunks[1:])
    # Cuts fall after a blank line (every piece but the first starts a block), and each piece
    # also shows the last PIECE_OVERLAP_LINES lines before its cut.
    for a, b in zip(chunks, chunks[1:]):
        cut = a.end + 1
        assert lines[cut - 2] == "" and b.start == cut - PIECE_OVERLAP_LINES
    # The header is not in the text: the text is the real lines.
    assert all(not c.text.startswith("function handle") for c in chunks[1:])


def test_inner_functions_of_a_large_function_are_their_own_chunks_with_the_header_chain():
    outer = ["proto.handle = function handle(req, res, out) {", "  var idx = 0;", "  var stack = this.stack;",
             "  var done = out;", ""]
    inner = function("next", 56, indent="  ", signature="function next(err) {")
    inner2 = function("trim_prefix", 30, indent="  ", signature="function trim_prefix(layer, path) {")
    lines = [*outer, *inner, "", *inner2, "};"]
    text = "\n".join(lines) + "\n"
    first = len(outer) + 1
    spans = [SymbolSpan(1, len(lines), "handle", "function", "proto"),
             SymbolSpan(first, first + len(inner) - 1, "next", "function", "handle"),
             SymbolSpan(first + len(inner) + 1, first + len(inner) + len(inner2), "trim_prefix", "function", "handle")]
    chunks = symbol_chunks("lib/router.js", split_lines(text), spans, file_type="js", kind="source",
                           max_lines=60, merge_lines=60, max_chars=3500)
    assert_tiles(chunks, text)
    assert [c.symbol for c in chunks] == ["proto.handle", "proto.handle.next", "proto.handle.trim_prefix"]
    assert [c.header for c in chunks] == [None, outer[0], outer[0]]


def test_deep_nesting_keeps_the_innermost_headers():
    depth = MAX_HEADER_LINES + 2
    lines: list[str] = []
    for level in range(depth):
        lines.append("  " * level + f"function f{level}() {{")
    lines += ["  " * depth + f"step{i}();" for i in range(80)]
    lines += ["  " * level + "}" for level in reversed(range(depth))]
    text = "\n".join(lines) + "\n"
    spans = [SymbolSpan(level + 1, len(lines) - level, f"f{level}") for level in range(depth)]
    chunks = symbol_chunks("a.js", split_lines(text), spans, file_type="js", kind="source",
                           max_lines=30, merge_lines=30, max_chars=3500)
    assert_tiles(chunks, text)
    last = chunks[-1]
    assert last.symbol == ".".join(f"f{level}" for level in range(depth))
    assert last.header.split("\n") == [f"function f{level}() {{" for level in range(depth - MAX_HEADER_LINES, depth)]


def nested(depth: int, opener: str, closer: str, *, head: str = "", tail: str = "") -> str:
    """Generated code: ``depth`` openers (``{i}`` is the level) each on its own line, ``return 1;``,
    then the closers."""
    openers = "".join(opener.format(i=i) + "\n" for i in range(depth))
    return head + openers + "return 1;\n" + (closer + "\n") * depth + tail


# Files that nest definitions thousands deep, as generators write them (RecursionError before).
DEEP_DEFINITIONS = {
    "functions.js": nested(2000, "function f{i}() {{", "}"),
    "functions.ts": nested(2000, "function f{i}(): number {{", "}"),
    "classes.ts": nested(1000, "class C{i} {{ m{i}() {{", "} }"),
    "methods.js": nested(1000, "return {{ m{i}() {{", "} };", head="function make() {\n", tail="}\n"),
}


@pytest.mark.parametrize("path", sorted(DEEP_DEFINITIONS))
def test_definitions_nested_thousands_deep_chunk_with_exact_ranges_and_the_file_is_reported(path):
    text = DEEP_DEFINITIONS[path]
    file_type = path.rsplit(".", 1)[-1]
    structure = StructureParser().parse(path, file_type, text)
    assert not structure.has_error and len(structure.definitions) >= 1000
    problems: list[str] = []
    chunks = chunk_file(path, text, file_type=file_type, kind="source", definitions=symbol_spans(structure),
                        problems=problems)
    assert_tiles(chunks, text)
    assert problems == [DEEP_NESTING]
    paths = [p for c in chunks if c.symbol for p in c.symbol.split(", ")]
    assert max(p.count(".") + 1 for p in paths) == MAX_SYMBOL_DEPTH  # no symbol path names more
    innermost = next(c for c in chunks if c.start <= text.split("\n").index("return 1;") + 1 <= c.end)
    assert innermost.symbol.count(".") + 1 == MAX_SYMBOL_DEPTH and len(innermost.header.split("\n")) == MAX_HEADER_LINES


@pytest.mark.parametrize("depth", [MAX_SYMBOL_DEPTH, MAX_SYMBOL_DEPTH + 1, 5000])
def test_definitions_past_the_symbol_depth_stay_in_their_enclosing_chunks(depth):
    lines = [f"function f{level}() {{" for level in range(depth)] + [f"step{i}();" for i in range(80)] + ["}"] * depth
    text = "\n".join(lines) + "\n"
    spans = [SymbolSpan(level + 1, len(lines) - level, f"f{level}") for level in range(depth)]
    problems: list[str] = []
    chunks = symbol_chunks("gen.js", split_lines(text), spans, file_type="js", kind="source",
                           max_lines=30, merge_lines=30, max_chars=3500, problems=problems)
    assert_tiles(chunks, text)
    assert problems == ([] if depth <= MAX_SYMBOL_DEPTH else [DEEP_NESTING])
    deepest = ".".join(f"f{level}" for level in range(MAX_SYMBOL_DEPTH))
    body = [c for c in chunks if c.start > depth and c.end <= depth + 80]  # the 80 statements, split
    assert body and all(c.symbol == deepest for c in body)
    assert symbol_chunks("gen.js", split_lines(text), spans, file_type="js", kind="source", max_lines=30,
                         merge_lines=30, max_chars=3500) == chunks  # reporting is optional


# Expressions, not definitions, nested 5,000 deep: one line per level.
DEEP_EXPRESSIONS = {
    name: nested(5000, opener, closer, head="const x =\n", tail=";\n").replace("return 1;", "process.env.PORT")
    for name, opener, closer in [("arrays", "[", "]"), ("objects", "{{ k{i}:", "}"), ("parentheses", "(", ")"),
                                 ("ternaries", "a ? b : (", ")")]
}


@pytest.mark.parametrize("name", sorted(DEEP_EXPRESSIONS))
def test_expressions_nested_5000_deep_chunk(name):
    text = DEEP_EXPRESSIONS[name]
    structure = StructureParser().parse("deep.js", "js", text)
    assert not structure.has_error and structure.definitions == []
    problems: list[str] = []
    chunks = chunk_file("deep.js", text, file_type="js", kind="source", definitions=symbol_spans(structure),
                        problems=problems)
    assert_tiles(chunks, text)
    assert problems == [] and all(c.symbol is None for c in chunks)


def test_a_long_line_is_cut_by_characters_and_keeps_its_number():
    lines = ["function a() {", "  return 1;", "}", "const blob = '" + "x" * 9000 + "';", "function b() {}"]
    text = "\n".join(lines)
    chunks = js_chunks(text)
    assert_tiles(chunks, text)
    assert "".join(c.text for c in chunks if c.start == c.end == 4).endswith("x';")


def test_odd_spans_are_clipped_or_dropped_and_every_line_is_still_covered():
    text = "\n".join(f"line {i}" for i in range(1, 21)) + "\n"
    spans = [SymbolSpan(5, 50, "pastTheEnd"), SymbolSpan(8, 7, "backwards"), SymbolSpan(3, 4, ""),
             SymbolSpan(6, 30, "overlapsItsParent"), SymbolSpan(5, 50, "sameRange"), SymbolSpan(40, 45, "outside"),
             SymbolSpan(-5, -2, "beforeTheStart"), SymbolSpan(0, 2, "fromLineZero")]
    chunks = symbol_chunks("a.js", split_lines(text), spans, file_type="js", kind="source",
                           max_lines=8, merge_lines=8, max_chars=3500)
    assert_tiles(chunks, text)
    assert {c.symbol for c in chunks} <= {None, "fromLineZero", "pastTheEnd", "pastTheEnd.overlapsItsParent"}


def test_random_definition_trees_always_tile_the_file():
    """Seeded fuzz: random nested spans, blank lines and long lines; the chunks always tile."""
    rng = random.Random(1515)
    for _ in range(150):
        n = rng.randint(1, 260)
        lines = []
        for _ in range(n):
            roll = rng.random()
            lines.append("" if roll < 0.2 else ("z" * rng.randint(400, 1200) if roll < 0.23 else
                                                 "  " * rng.randint(0, 4) + "w" * rng.randint(1, 70)))
        if not any(line.strip() for line in lines):
            lines[0] = "x"
        spans = []
        for _ in range(rng.randint(0, 25)):
            start = rng.randint(1, n)
            spans.append(SymbolSpan(start, min(n, start + rng.randint(0, 120)), f"s{len(spans)}",
                                    parent=rng.choice([None, "proto", "res"])))
        text = ("\r\n" if rng.random() < 0.3 else "\n").join(lines)
        cap, merge = rng.randint(5, 80), 0
        merge = rng.randint(0, cap)
        policy = ChunkPolicy(max_lines=cap, merge_lines=merge, max_chars=rng.choice([300, 1000, 3500]))
        chunks = chunk_file("f.js", text, file_type="js", kind="source", definitions=spans, policy=policy)
        assert_tiles(chunks, text, policy.max_chars)


@pytest.mark.parametrize("text", ["", "\n", "  \n\n\t\n"])
def test_blank_files_give_no_chunks(text):
    assert js_chunks(text) == []
    assert chunk_file("a.md", text, file_type="md", kind="documentation") == []


# -- fallbacks and line endings ------------------------------------------------------------------


def test_a_file_that_does_not_parse_keeps_line_windows():
    text = "function ok() {\n  return 1;\n}\n" + "".join(f"const v{i} = {i};\n" for i in range(100)) + "function (((\n"
    structure = StructureParser().parse("bad.js", "js", text)
    assert structure.has_error and symbol_spans(structure) is None
    chunks = js_chunks(text, path="bad.js")
    assert [(c.start, c.end) for c in chunks] == [(1, 60), (41, 100), (81, 104)]
    assert all(c.symbol is None and c.header is None for c in chunks)


def test_config_and_text_files_keep_line_windows():
    text = "".join(f'  "key{i}": {i},\n' for i in range(100))
    for path, file_type in (("package.json", "json"), ("notes.txt", "txt"), ("ci.yml", "yml")):
        chunks = chunk_file(path, text, file_type=file_type, kind="config")
        assert [(c.start, c.end) for c in chunks] == [(1, 60), (41, 100)]


def test_crlf_file_gets_the_same_chunks_as_lf():
    lines = ["'use strict';", "", *function("alpha", 70), "", "class A {", "  m() {", "    return 1;", "  }", "}"]
    lf = "\n".join(lines) + "\n"
    a, b = js_chunks(lf), js_chunks(lf.replace("\n", "\r\n"))
    assert [(c.start, c.end, c.symbol, c.header, c.text) for c in a] == \
           [(c.start, c.end, c.symbol, c.header, c.text) for c in b]
    assert not any("\r" in c.text or "\r" in (c.header or "") for c in b)
    assert_tiles(b, lf)


def test_typescript_definitions_chunk_too():
    lines = ["export interface Options {", "  port: number;", "}", ""]
    lines += [*function("serve", 70, signature="export function serve(options: Options): void {")]
    text = "\n".join(lines) + "\n"
    chunks = js_chunks(text, path="src/server.ts")
    assert_tiles(chunks, text)
    assert chunks[0].symbol.startswith("Options") and {c.symbol for c in chunks[1:]} == {"serve"}


# -- Markdown sections ---------------------------------------------------------------------------


def md(sections: list[tuple[str, int]]) -> tuple[str, list[str]]:
    lines: list[str] = []
    for title, n in sections:
        lines += [title, ""] + [f"{title.strip('# ')} sentence {i}." for i in range(n)] + [""]
    return "\n".join(lines) + "\n", lines


def test_markdown_gets_a_chunk_per_heading_section():
    text, lines = md([("# Guide", 40), ("## Install", 45), ("## Usage", 30)])
    chunks = chunk_file("docs/guide.md", text, file_type="md", kind="documentation")
    assert_tiles(chunks, text)
    assert [(c.start, c.heading) for c in chunks] == [(1, "Guide"), (44, "Install"), (92, "Usage")]
    assert [lines[c.start - 1] for c in chunks] == ["# Guide", "## Install", "## Usage"]
    assert all(c.symbol is None and c.header is None for c in chunks)


def test_small_markdown_sections_merge_and_large_ones_split_at_paragraphs():
    lines = ["# API", ""]
    for name in ("get", "set", "has"):           # three small sections: merged
        lines += [f"## {name}", "", f"The {name} call.", ""]
    lines += ["## Options", ""]
    for para in range(8):                        # 8 paragraphs of 12 lines: split
        lines += [f"Option {para} line {i}." for i in range(12)] + [""]
    text = "\n".join(lines) + "\n"
    chunks = section_chunks("README.md", split_lines(text), [(1, "API"), (3, "get"), (7, "set"), (11, "has"),
                                                             (15, "Options")],
                            file_type="md", kind="documentation", max_lines=60, merge_lines=30, max_chars=3500)
    assert_tiles(chunks, text)
    assert (chunks[0].start, chunks[0].end, chunks[0].heading) == (1, 14, "API")
    options = [c for c in chunks if c.heading == "Options"]
    assert len(options) >= 2 and options[0].start == 15
    # Split after a blank line; each piece also repeats the last lines before the cut.
    for a, b in zip(options, options[1:]):
        assert lines[a.end - 1] == "" and b.start == a.end + 1 - PIECE_OVERLAP_LINES


def test_markdown_text_before_the_first_heading_is_kept():
    text = "Intro words.\n\n# Title\n\nBody.\n"
    chunks = chunk_file("a.md", text, file_type="md", kind="documentation")
    assert_tiles(chunks, text)
    assert chunks[0].heading == "Title"  # the first heading inside, as for windows


# -- the policy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{"max_lines": 0}, {"merge_lines": -1}, {"max_lines": 10, "merge_lines": 11}])
def test_invalid_symbol_chunk_sizes_are_rejected(kwargs):
    with pytest.raises(ValueError, match="max_lines"):
        ChunkPolicy(**kwargs)


def test_the_policy_signature_names_the_chunker_version_and_every_size():
    assert ChunkPolicy().signature() != ChunkPolicy(max_lines=40, merge_lines=40).signature()
    assert ChunkPolicy().signature() != ChunkPolicy(merge_lines=30).signature()
    assert ChunkPolicy().signature() == ChunkPolicy().signature()
