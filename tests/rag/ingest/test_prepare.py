"""rag.ingest.prepare: the per-file ingest step and the secret-file literals; rag.ingest.stats."""
from __future__ import annotations

from pathlib import Path

from repo_helpers import write_repo

from rag.ingest.prepare import (
    MAX_SECRET_FILE_BYTES,
    Prepared,
    Skipped,
    StructureParser,
    Unchanged,
    content_hash,
    prepare_file,
    secret_literals,
)
from rag.ingest.stats import IndexStats
from rag.ingest.walk import walk
from rag.secrets import LiteralRedactor
from rag.store.index import FileRow
from rag.types import WalkedFile

JS = "const express = require('express');\n\nfunction createApp() {\n  return process.env.PORT;\n}\n"


def walked(root: Path, path: str) -> WalkedFile:
    return next(f for f in walk(root).files if f.path == path)


def test_a_new_file_is_redacted_chunked_and_parsed(tmp_path):
    token = "xoxb-123456789012-123456789012-abcdefghijABCDEFGHIJabcd"
    root = write_repo(tmp_path, {"src/app.js": JS + f"// {token} and hunter2-literal\n"})
    result = prepare_file(walked(root, "src/app.js"), indexed=None,
                          literals=LiteralRedactor({"hunter2-literal"}), parser=StructureParser())
    assert isinstance(result, Prepared)
    update = result.update
    assert update.path == "src/app.js" and update.kind == "source" and update.file_type == "js"
    assert update.hash == content_hash((root / "src/app.js").read_bytes()) and len(update.hash) == 32
    assert update.redactions == 2 and all(token not in c.text and "hunter2" not in c.text for c in update.chunks)
    assert update.lines == 6 and update.structure["path"] == "src/app.js"
    assert update.chunk_symbols is not None and len(update.chunk_symbols) == len(update.chunks)
    assert "createApp" in " ".join(update.chunk_symbols) and "PORT" in " ".join(update.chunk_symbols)
    assert result.parse_seconds >= 0.0


def test_same_hash_is_unchanged_and_other_types_are_not_parsed(tmp_path):
    root = write_repo(tmp_path, {"src/app.js": JS, "README.md": "# Title\n\nSome words.\n"})
    wf = walked(root, "src/app.js")
    same = FileRow(wf.size, wf.mtime_ns, content_hash((root / "src/app.js").read_bytes()))
    assert isinstance(prepare_file(wf, indexed=same, literals=LiteralRedactor(set()), parser=StructureParser()),
                      Unchanged)
    stale = FileRow(wf.size, wf.mtime_ns, "0" * 32)
    assert isinstance(prepare_file(wf, indexed=stale, literals=LiteralRedactor(set()), parser=StructureParser()),
                      Prepared)
    doc = prepare_file(walked(root, "README.md"), indexed=None, literals=LiteralRedactor(set()),
                       parser=StructureParser())
    assert isinstance(doc, Prepared) and doc.update.structure is None and doc.update.chunk_symbols is None
    assert doc.parse_seconds < 0.01


PY = "import os\n\n\n@app.get('/items')\ndef list_items():\n    return os.getenv('PAGE_SIZE')\n"


def test_python_files_are_parsed_and_the_structure_step_is_separate(tmp_path):
    root = write_repo(tmp_path, {"src/app.py": PY, "main.go": "package main\n\nfunc main() {}\n"})
    result = prepare_file(walked(root, "src/app.py"), indexed=None, literals=LiteralRedactor(set()),
                          parser=StructureParser())
    assert isinstance(result, Prepared) and result.update.structure["language"] == "python"
    assert result.update.chunk_symbols == ["list_items list_items PAGE_SIZE /items"]  # symbol path, then names
    parser = StructureParser()
    structure = parser.structure("src/app.py", "py", PY)
    assert [(d.name, d.start, d.end) for d in structure.definitions] == [("list_items", 4, 6)]
    assert parser.chunk_symbols(structure, result.update.chunks) == result.update.chunk_symbols
    assert parser.structure("main.go", "go", "package main\n\nfunc main() {}\n").language == "go"
    assert parser.structure("README.md", "md", "# x\n") is None


def test_each_chunk_indexes_the_names_on_its_lines_in_the_structure_order():
    from rag.ingest.prepare import chunk_symbol_text
    from rag.parse.records import Definition, EnvVar, FileStructure, Route
    from rag.types import Chunk

    structure = FileStructure(
        "app.js", "javascript",
        definitions=[Definition("later", "function", 30, 40), Definition("first", "function", 1, 12),
                     Definition("", "function", 5, 6), Definition("inner", "method", 12, 14, parent="first")],
        env_vars=[EnvVar("PORT", 13), EnvVar("HOST", 2)],
        routes=[Route("get", "/items", 12), Route("get", "", 3)])
    chunks = [Chunk("app.js", 1, 12, "", "js", "source", symbol="first"),  # line 12 ends this chunk …
              Chunk("app.js", 10, 20, "", "js", "source"),                  # … and is inside this overlapping one
              Chunk("app.js", 21, 29, "", "js", "source"),
              Chunk("app.js", 30, 30, "", "js", "source", symbol="later")]
    assert chunk_symbol_text(structure, chunks) == [
        "first first inner HOST /items",  # symbol path; definitions, env vars, routes each in the structure's order
        "inner PORT /items",
        "",
        "later later",
    ]


def test_unreadable_and_binary_files_are_skipped_with_their_reason(tmp_path):
    root = write_repo(tmp_path, {"a.txt": "text\n", "b.txt": "text\n"})
    wf_a, wf_b = walked(root, "a.txt"), walked(root, "b.txt")
    (root / "a.txt").unlink()
    (root / "b.txt").write_bytes(b"\x00\x01\x02binary\xff\xfe")
    kwargs = {"indexed": None, "literals": LiteralRedactor(set()), "parser": StructureParser()}
    assert prepare_file(wf_a, **kwargs) == Skipped("unreadable")
    assert prepare_file(wf_b, **kwargs) == Skipped("binary")


def test_secret_literals_reads_the_head_of_each_secret_file(tmp_path):
    root = write_repo(tmp_path, {".env": "API_TOKEN=sup3r-s3cret-value\n", "missing-ok": ""})
    literals = secret_literals(root, [".env", "does/not/exist.env"])
    text, hits = literals.redact("call with sup3r-s3cret-value now")
    assert hits == 1 and "sup3r" not in text
    assert secret_literals(root, []).digest != literals.digest
    assert MAX_SECRET_FILE_BYTES == 256 * 1024


def test_index_stats_counts_skips_and_keeps_its_json_shape():
    stats = IndexStats(skipped={"ignored": 2})
    stats.skip("binary")
    stats.skip("binary")
    stats.seconds, stats.parse_seconds = 1.234567, 0.000049
    assert stats.skipped == {"ignored": 2, "binary": 2}
    assert list(stats.to_json()) == ["files", "chunks", "added", "changed", "removed", "skipped", "seconds",
                                     "redactions", "generation", "parse_seconds", "copies", "problems"]
    assert stats.to_json()["seconds"] == 1.2346 and stats.to_json()["parse_seconds"] == 0.0


def test_a_parsed_file_is_chunked_at_its_definitions_and_a_broken_one_in_windows(tmp_path):
    big = "function handle(req) {\n" + "".join(f"  step{i}(req);\n" for i in range(80)) + "}\n"
    router = "'use strict';\n\n" + big + "\nmodule.exports = { handle };\n"
    files = {"src/router.js": router, "src/broken.js": big + "function (((\n",
             "src/router.crlf.js": router.replace("\n", "\r\n")}
    root = write_repo(tmp_path, files)
    kwargs = {"indexed": None, "literals": LiteralRedactor(set()), "parser": StructureParser()}
    update = prepare_file(walked(root, "src/router.js"), **kwargs).update
    assert [c.symbol for c in update.chunks] == ["handle", "handle"]
    assert update.chunks[0].start == 1 and update.chunks[-1].end == update.lines == 86
    assert update.chunks[1].header == "function handle(req) {"
    # The FTS symbols column names the chunk's symbol path first, then what starts inside it.
    assert update.chunk_symbols[0].split()[:2] == ["handle", "handle"] and update.chunk_symbols[1] == "handle"
    crlf = prepare_file(walked(root, "src/router.crlf.js"), **kwargs).update
    assert [(c.start, c.end, c.symbol, c.header, c.text) for c in crlf.chunks] == \
           [(c.start, c.end, c.symbol, c.header, c.text) for c in update.chunks]
    broken = prepare_file(walked(root, "src/broken.js"), **kwargs).update
    assert broken.structure["has_error"] is True
    assert [(c.start, c.end, c.symbol) for c in broken.chunks] == [(1, 60, None), (41, 83, None)]


NESTED_JS = "".join(f"function f{i}() {{\n" for i in range(2000)) + "return 1;\n" + "}\n" * 2000
"""Generated code: 2,000 functions, each inside the previous one."""


def test_a_file_nested_2000_deep_is_prepared_and_names_its_problem(tmp_path):
    root = write_repo(tmp_path, {"gen/nested.js": NESTED_JS, "src/app.js": JS})
    kwargs = {"indexed": None, "literals": LiteralRedactor(set()), "parser": StructureParser()}
    deep = prepare_file(walked(root, "gen/nested.js"), **kwargs)
    assert isinstance(deep, Prepared) and deep.problems == ("deep_nesting",)
    update = deep.update
    assert len(update.structure["definitions"]) == 2000 and update.structure["has_error"] is False
    assert update.chunks[0].start == 1 and update.chunks[-1].end == update.lines == 4001
    assert all(b.start <= a.end + 1 for a, b in zip(update.chunks, update.chunks[1:]))  # every line covered
    assert prepare_file(walked(root, "src/app.js"), **kwargs).problems == ()
    stats = IndexStats()
    stats.degraded("deep_nesting", "gen/nested.js")  # indexed, so listed but not counted as skipped
    assert stats.problems == [{"path": "gen/nested.js", "reason": "deep_nesting"}] and stats.skipped == {}


def test_a_typescript_source_declaring_only_types_is_filed_as_types():
    from rag.ingest.prepare import file_kind
    from rag.parse.parser import parse_source

    types_only = ("export interface QueryOptions {\n  /** retries before failing */\n  retry?: number\n}\n"
                  "export type QueryKey = ReadonlyArray<unknown>\n")
    mixed = types_only + "export function isStale(updatedAt: number, staleTime: number): boolean {\n  return true\n}\n"
    header = "// option types\nimport type { Query } from './query'\nexport type { QueryKey as Key }\n\n"

    def kind(path: str, text: str) -> str:
        return file_kind(path, parse_source(path, text), text)

    assert kind("src/types.ts", header + types_only) == "types"
    assert kind("src/query.ts", mixed) == "source"
    assert kind("src/empty.ts", "// nothing yet\n") == "source"  # no definitions
    assert kind("test/types.ts", types_only) == "test"            # the path first
    # runtime code the parser records no definition for: a top-level constant, a statement
    assert kind("src/client.ts", types_only + "export const defaults = { retry: 3 }\n") == "source"
    assert kind("src/server.ts", types_only + "app.listen(3000, () => {})\n") == "source"
    assert file_kind("lib/index.d.ts", None) == "types" and file_kind("lib/a.py", None) == "source"
