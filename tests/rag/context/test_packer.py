"""Code context and the context packer on the fixture repository tests/fixtures/code-repo/.

The golden file tests/fixtures/code-repo-context.txt is the packed context for
one question; regenerate it with ``SZ_UPDATE_GOLDEN=1 pytest tests/rag/context/test_packer.py``
after an intended change, and review the diff.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from repo_helpers import code_repo_graph

from rag.context.codegraph import CodeGraph
from rag.context.packer import (
    STRUCTURE_SCORE,
    CodeEntry,
    code_context,
    pack_context,
)
from rag.context.spans import evidence_spans
from rag.errors import UserError
from rag.tokens import estimate_tokens
from rag.types import Source

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "code-repo"
GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "code-repo-context.txt"
QUESTION = "How does POST /api/users create a user with createUser?"


def read_lines(path: str, start: int, end: int) -> str:
    """Lines start..end (1-based, inclusive, clamped) of a fixture file."""
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[start - 1 : end])


def source(path: str, start: int, end: int, score: float) -> Source:
    return Source(path=path, start=start, end=end, score=score, file_type=path.rsplit(".", 1)[-1],
                  kind="documentation" if path.endswith(".md") else "source", text=read_lines(path, start, end))


@pytest.fixture(scope="module")
def graph() -> CodeGraph:
    return code_repo_graph(REPO)


@pytest.fixture
def retrieved() -> list[Source]:
    return [source("src/routes/users.js", 1, 26, 3.2), source("README.md", 1, 12, 1.5)]


def test_estimate_tokens_rule():
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde", "é" * 8)] == [0, 1, 1, 2, 2]


def test_code_context_entries(graph, retrieved):
    entries = code_context(QUESTION, graph=graph, retrieved=retrieved, read_lines=read_lines)
    assert [(e.kind, e.path, e.start, e.end, e.score, e.reason) for e in entries] == [
        ("code", "src/routes/users.js", 8, 10, 170, "route POST /api/users"),  # 100 + 3 tokens + method; up to next route
        ("code", "src/routes/users.js", 7, 7, 160, "route GET /api/users"),
        ("code", "src/routes/users.js", 14, 17, 140, "symbol createUser"),
        ("code", "src/routes/users.js", 11, 11, 60, "route GET /api/users/:id"),
        ("code", "src/routes/users.js", 12, 13, 60, "route DELETE /api/users/:id"),
        ("code", "src/lib/store.js", 1, 41, 40, "symbol UserStore"),  # "user" + "users" in "userstore"
        ("structure", None, None, None, STRUCTURE_SCORE, "environment variables"),
        ("structure", "src/routes/users.js", None, None, STRUCTURE_SCORE, "retrieved (400)"),
        # dependencies: root − 120; dependants: root − 150 (seed)
        ("structure", "src/lib/audit.js", None, None, STRUCTURE_SCORE, "dependency of src/routes/users.js (280)"),
        ("structure", "src/lib/store.js", None, None, STRUCTURE_SCORE, "dependency of src/routes/users.js (280)"),
        ("structure", "src/server.js", None, None, STRUCTURE_SCORE, "dependant of src/routes/users.js (250)"),
    ]
    assert entries[2].text == read_lines("src/routes/users.js", 14, 17)
    # The #users field (2-2) lies inside the UserStore class snippet (1-41): dropped.
    assert all(e.start != 2 for e in entries)
    # Env vars used by the selected files (server.js) are listed even if the question names none.
    assert entries[6].text == (
        "Environment variables (name: where the code reads it):\n"
        "DATABASE_URL: src/server.js:8\n"
        "API_KEY: src/server.js:8\n"
        "PORT: src/server.js:9"
    )


def test_code_context_env_question_and_expansion_floors(graph):
    entries = code_context("Where is DB_TIMEOUT_MS read?", graph=graph, retrieved=[], read_lines=read_lines)
    structures = [(e.path, e.reason) for e in entries if e.kind == "structure"]
    assert structures[0] == (None, "environment variables")
    assert entries[0].text.splitlines()[1] == "DB_TIMEOUT_MS: src/lib/db.js:4"
    assert ("src/lib/db.js", "reads DB_TIMEOUT_MS (250)") in structures
    # db.js (250) has no dependencies; its dependant server.js gets max(250 − 150, 90) = 100
    assert ("src/server.js", "dependant of src/lib/db.js (100)") in structures


def test_code_context_caps_and_unreadable_files(graph, retrieved):
    assert len(code_context(QUESTION, graph=graph, retrieved=retrieved, read_lines=read_lines, max_entries=3)) == 3

    def failing(path: str, start: int, end: int) -> str:
        raise OSError("gone")

    entries = code_context(QUESTION, graph=graph, retrieved=retrieved, read_lines=failing)
    assert entries and all(e.kind == "structure" for e in entries)


def test_pack_order_and_metadata(graph, retrieved):
    entries = code_context(QUESTION, graph=graph, retrieved=retrieved, read_lines=read_lines)
    packed = pack_context(QUESTION, sources=retrieved, code_entries=entries, budget_tokens=4000,
                          read_lines=read_lines, graph=graph)
    kinds = [item.kind for item in packed.items]
    assert kinds[:2] == ["source", "source"]  # each retrieved file's best span first, in retrieval order
    assert [i.path for i in packed.items[:2]] == ["src/routes/users.js", "README.md"]
    assert [i.priority for i in packed.items] == sorted((i.priority for i in packed.items), reverse=True)
    # The route and symbol snippets of users.js lie inside its packed span: skipped as duplicates.
    assert not [i for i in packed.items if i.kind == "code" and i.path == "src/routes/users.js"]
    assert packed.tokens_used == estimate_tokens(packed.text) <= packed.budget == 4000
    assert packed.files[:2] == ["src/routes/users.js", "README.md"]
    assert packed.code_contexts == sum(1 for i in packed.items if i.kind != "source")
    assert set(packed.to_json()) == {"text", "tokens_used", "budget", "files", "code_contexts", "items"}


def test_spans_hold_the_matched_lines_and_whole_short_symbols(graph):
    # One 26-line chunk; the question is about auditing removals: the span is the removeUser body, not the window.
    users = source("src/routes/users.js", 1, 26, 3.0)
    spans = evidence_spans("Where is a removal audited?", sources=[users],
                           read_lines=read_lines, graph=graph)
    assert [(s.start, s.end, s.reason) for s in spans if not s.callee][0] == (19, 24, "function removeUser")
    # A window that reaches past the chunk reads the neighbouring lines from the index.
    chunk = source("src/routes/users.js", 1, 8, 3.0)
    spans = evidence_spans("Which handler answers POST requests?", sources=[chunk], read_lines=read_lines)
    assert spans[0].start == 2 and spans[0].end == 22 and spans[0].text == read_lines("src/routes/users.js", 2, 22)
    # Without read_lines the span stays inside the chunk's own lines.
    spans = evidence_spans("Which handler answers POST requests?", sources=[chunk])
    assert (spans[0].start, spans[0].end) == (2, 8)


def test_a_strong_span_brings_the_definitions_it_calls(graph):
    users = source("src/routes/users.js", 19, 24, 3.0)   # removeUser calls audit.record (src/lib/audit.js)
    spans = evidence_spans("What happens when a user is removed?", sources=[users], read_lines=read_lines, graph=graph)
    callees = [s for s in spans if s.callee]
    assert ("src/lib/audit.js", 6, 8) in [(s.path, s.start, s.end) for s in callees]
    audit = next(s for s in callees if s.path == "src/lib/audit.js")
    assert audit.reason == "function record, called from src/routes/users.js:21"
    assert audit.text == read_lines("src/lib/audit.js", 6, 8)


def test_a_chunk_without_matching_lines_is_kept_whole():
    vector_hit = Source(path="a.js", start=5, end=7, score=1.0, file_type="js", kind="source",
                        text="alpha()\nbeta()\ngamma()")
    spans = evidence_spans("refuse oversized payloads", sources=[vector_hit])
    assert [(s.start, s.end, s.reason) for s in spans] == [(5, 7, "retrieved")]


@pytest.mark.parametrize("budget", [60, 150, 300, 700, 1500, 4000])
def test_packer_invariants_on_the_fixture(graph, budget):
    """Budget held, every item's lines exactly the file's lines, no item repeating another's lines."""
    sources = [source("src/routes/users.js", 1, 26, 3.2), source("src/lib/store.js", 1, 41, 2.0),
               source("README.md", 1, 12, 1.5), source("src/lib/store.js", 19, 45, 1.0)]
    entries = code_context(QUESTION, graph=graph, retrieved=sources, read_lines=read_lines)
    packed = pack_context(QUESTION, sources=sources, code_entries=entries, budget_tokens=budget,
                          read_lines=read_lines, graph=graph)
    assert packed.tokens_used == estimate_tokens(packed.text) <= budget
    blocks = packed.text.split("\n\n--- ") if packed.text else []
    assert len(blocks) == len(packed.items)
    seen: dict[str, set[int]] = {}
    for item, block in zip(packed.items, blocks):
        if item.start is None:
            continue
        body = block.split("\n", 1)[1]
        assert body == read_lines(item.path, item.start, item.end).rstrip()   # exact line range
        lines = set(range(item.start, item.end + 1))
        assert len(lines & seen.get(item.path, set())) * 2 < len(lines)     # never mostly a repeat
        seen.setdefault(item.path, set()).update(lines)


def test_pack_skips_what_does_not_fit_and_never_truncates():
    big = Source(path="big.js", start=1, end=400, score=9.0, file_type="js", kind="source", text="x" * 4000)
    small = Source(path="small.js", start=1, end=3, score=1.0, file_type="js", kind="source",
                   text="small body\nline two\nline three")
    code = CodeEntry(kind="code", path="c.js", start=1, end=2, score=100, text="code body", reason="symbol c")
    packed = pack_context("q", sources=[big, small], code_entries=[code], budget_tokens=100)
    assert [i.path for i in packed.items] == ["small.js", "c.js"]  # big does not fit; later items still do
    assert packed.text == "--- small.js:1-3\nsmall body\nline two\nline three\n\n--- c.js:1-2 (symbol c)\ncode body"
    assert packed.tokens_used <= 100


def test_pack_duplicates_are_skipped():
    text = "\n".join(f"line {n}" for n in range(1, 11))
    a = Source(path="a.js", start=1, end=10, score=2.0, file_type="js", kind="source", text=text)
    again = Source(path="a.js", start=1, end=10, score=1.0, file_type="js", kind="source", text=text)
    inner = CodeEntry(kind="code", path="a.js", start=3, end=4, score=500, text="other", reason="symbol f")
    outer = CodeEntry(kind="code", path="b.js", start=1, end=10, score=10, text=text, reason="symbol g")
    packed = pack_context("q", sources=[a, again], code_entries=[inner, outer], budget_tokens=1000)
    assert [(i.kind, i.path, i.start, i.end) for i in packed.items] == [("source", "a.js", 1, 10)]


@pytest.mark.parametrize("budget", [0, -5, 2.5, True, "100"])
def test_pack_rejects_bad_budgets(budget):
    with pytest.raises(UserError, match="budget"):
        pack_context("q", sources=[], code_entries=[], budget_tokens=budget)


def test_golden_packed_context(graph, retrieved):
    entries = code_context(QUESTION, graph=graph, retrieved=retrieved, read_lines=read_lines)
    packed = pack_context(QUESTION, sources=retrieved, code_entries=entries, budget_tokens=700,
                          read_lines=read_lines, graph=graph)
    if os.environ.get("SZ_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(packed.text + "\n", encoding="utf-8")
    assert packed.text + "\n" == GOLDEN.read_text(encoding="utf-8")
    assert packed.tokens_used <= 700


def test_a_file_the_question_names_gives_all_its_spans_before_the_other_files():
    """Retrieval lets other files follow a file the question names (a blind held-out set's "I edited README.rst but
    …: where does the version come from?"); their spans follow the named file's, they do not interleave with them:
    "in lib/cache.js …" asks about that file, whose later spans were once all the context held."""
    def chunk(path, start, score, words):
        text = "\n".join(f"const line{n} = {words} + {n};" for n in range(start, start + 10))
        return Source(path=path, start=start, end=start + 9, score=score, file_type="js", kind="source", text=text)

    sources = [chunk("lib/cache.js", 1, 4.2, "widgetCache.expire()"), chunk("lib/other.js", 1, 0.9, "widgetCache"),
               chunk("lib/cache.js", 300, 4.1, "widgetCache.expire(ttl)")]
    question = "In lib/cache.js, when does the widget cache expire?"
    paths = [item.path for item in pack_context(question, sources=sources, code_entries=[], budget_tokens=4000).items]
    assert paths.count("lib/cache.js") == 2 and "lib/other.js" in paths
    assert max(i for i, p in enumerate(paths) if p == "lib/cache.js") < paths.index("lib/other.js")
    # a question naming no file keeps the files' rounds interleaved
    question = "When does the widget cache expire?"
    paths = [item.path for item in pack_context(question, sources=sources, code_entries=[], budget_tokens=4000).items]
    assert max(i for i, p in enumerate(paths) if p == "lib/cache.js") > paths.index("lib/other.js")
    # a named file retrieval put after others (the importers a question asks for lead) moves nothing
    importers = [chunk("lib/a.js", 1, 4.3, "require(cache).a"), chunk("lib/b.js", 1, 4.2, "require(cache).b"),
                 chunk("lib/cache.js", 1, 4.1, "widgetCache.expire()"), chunk("lib/cache.js", 300, 4.0, "widgetCache")]
    question = "Which files import lib/cache.js?"
    paths = [item.path for item in pack_context(question, sources=importers, code_entries=[], budget_tokens=4000).items]
    assert paths[:2] == ["lib/a.js", "lib/b.js"]
