"""Symbol chunks in the index (issue 15): the stored symbol path and header, what FTS and the
embeddings see, the m004 migration of an existing index, and the results that expose the symbol."""
from __future__ import annotations

import json
import sqlite3
import time

from click.testing import CliRunner
from repo_helpers import write_repo

from bot.cli import cli
from rag.engine import Engine
from rag.ingest.chunk import ChunkPolicy
from rag.search.vector_stream import embed_key, embed_text
from rag.store.index import MIGRATIONS, Index

HANDLE = "\n".join([
    "'use strict';",
    "",
    "var proto = module.exports = {};",
    "",
    "/**",
    " * Dispatch a request into the router stack.",
    " */",
    "proto.handle = function handle(req, res, out) {",
    *[f"  var layer{i} = this.stack[{i}];" for i in range(40)],
    "",
    *[f"  matchLayer(layer{i}, req.path);" for i in range(40)],
    "};",
    "",
    "function matchLayer(layer, path) {",
    "  return layer.match(path);",
    "}",
    "",
    "module.exports.matchLayer = matchLayer;",
]) + "\n"
FILES = {"lib/router.js": HANDLE, "README.md": "# Router\n\nThe router dispatches requests to layers.\n"}


def chunk_rows(engine: Engine, path: str) -> list[tuple]:
    with engine.index.read() as conn:
        return conn.execute("SELECT start, end, symbol, header, text FROM chunks WHERE path=? ORDER BY start",
                            (path,)).fetchall()


def test_symbol_path_and_header_are_stored_and_indexed_but_not_in_the_text(tmp_path):
    engine = Engine.open(write_repo(tmp_path / "repo", FILES), index_path=tmp_path / "i.sqlite")
    try:
        engine.update()
        rows = chunk_rows(engine, "lib/router.js")
        lines = HANDLE.split("\n")
        assert rows[0][0] == 1 and rows[-1][1] == len(lines) - 1
        for start, end, _, _, text in rows:
            assert text == "\n".join(lines[start - 1 : end])  # the real lines, nothing added
        pieces = [r for r in rows if r[2] == "proto.handle"]
        assert len(pieces) == 2
        assert pieces[0][3] is None and pieces[1][3] == "proto.handle = function handle(req, res, out) {"
        assert not pieces[1][4].startswith("proto.handle")
        with engine.index.read() as conn:
            # The header is searchable with the piece; the symbol path is in the symbols column.
            hits = conn.execute(
                "SELECT c.start, f.symbols FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                "WHERE chunks_fts MATCH 'body:\"handle\" AND body:\"match\"'").fetchall()
            assert [start for start, _ in hits] == [pieces[1][0]]
            assert "proto" in hits[0][1].split() and "handle" in hits[0][1].split()
        docs = chunk_rows(engine, "README.md")
        assert [(s, e, sym, head) for s, e, sym, head, _ in docs] == [(1, 3, None, None)]
    finally:
        engine.close()


def test_retrieve_and_context_json_carry_the_symbol(tmp_path):
    repo = write_repo(tmp_path / "repo", FILES)
    index = tmp_path / "i.sqlite"
    runner = CliRunner()
    result = runner.invoke(cli, ["retrieve", "where are router layers matched against the path", "--repo", str(repo),
                                 "--index", str(index), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    sources = json.loads(result.stdout)["sources"]
    assert sources and all("symbol" in s for s in sources)
    assert {s["symbol"] for s in sources if s["path"] == "lib/router.js"} <= {"proto.handle", "matchLayer",
                                                                               "proto.handle, matchLayer"}
    assert any(s["symbol"] for s in sources if s["path"] == "lib/router.js")
    result = runner.invoke(cli, ["context", "where are router layers matched against the path", "--repo", str(repo),
                                 "--index", str(index), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    items = [i for i in data["items"] if i["kind"] == "source" and i["path"] == "lib/router.js"]
    assert items and all(i["symbol"] for i in items)
    # The packed block names the symbol after its range; the text below it is the real lines.
    assert f"--- lib/router.js:{items[0]['start']}-{items[0]['end']} ({items[0]['symbol']}" in data["text"]


def test_the_embedded_text_carries_path_symbol_and_header():
    text = embed_text("lib/router.js", "  matchLayer(layer, req.path);", symbol="proto.handle",
                      header="proto.handle = function handle(req, res, out) {")
    assert text == ("lib/router.js · proto.handle\nproto.handle = function handle(req, res, out) {\n"
                    "  matchLayer(layer, req.path);")
    assert embed_text("README.md", "Body.", heading="Router") == "README.md · Router\nBody."
    assert embed_text("a.txt", "x") == "a.txt\nx"
    # The key changes with the context, so a chunk that gains a symbol is re-embedded.
    assert embed_key("a.js", "x") != embed_key("a.js", "x", symbol="f")
    assert embed_key("a.js", "x") == embed_key("a.js", "x")


def _index_before_m004(path) -> None:
    """An index as the code before issue 15 wrote it: migrations m001-m003, a window chunk."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    for name, fn in MIGRATIONS:
        if name == "m009_chunk_symbol":
            break
        fn(conn)
        conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
    conn.execute("INSERT INTO meta VALUES ('generation', '3')")
    conn.execute("INSERT INTO files VALUES ('lib/router.js', 1, 1, 'oldhash', 'js', 'source', 60, 0, NULL)")
    conn.execute("INSERT INTO chunks (path, start, end, heading, symbol, file_type, kind, text, hash, stems) "
                 "VALUES ('lib/router.js', 1, 60, NULL, NULL, 'js', 'source', 'old window', 'h', 'old window')")
    conn.execute("INSERT INTO chunks_fts (rowid, body, path, heading, symbols) VALUES (1, 'old window', '', '', '')")
    conn.close()


def test_m004_migrates_an_existing_index_and_the_next_update_rechunks_every_file(tmp_path):
    path = tmp_path / "i.sqlite"
    _index_before_m004(path)
    index = Index(path)
    try:
        names = [r[0] for r in index.conn.execute("SELECT name FROM migrations ORDER BY rowid")]
        assert "m009_chunk_symbol" in names and names[-1] == "m011_document_tombstones"
        columns = [r[1] for r in index.conn.execute("PRAGMA table_info(chunks)")]
        assert "symbol" in columns and "header" in columns
        assert index.counts() == (0, 0)          # old windows dropped, nothing half-migrated
        assert index.generation() == 3
        assert list(tmp_path.glob("i.sqlite.broken-*")) == []
    finally:
        index.close()
    engine = Engine.open(write_repo(tmp_path / "repo", FILES), index_path=path)
    try:
        stats = engine.update()
        assert stats.added == 2
        assert any(sym == "proto.handle" for _, _, sym, _, _ in chunk_rows(engine, "lib/router.js"))
    finally:
        engine.close()


def test_other_chunk_sizes_rebuild_the_index(tmp_path):
    repo = write_repo(tmp_path / "repo", FILES)
    first = Engine.open(repo, index_path=tmp_path / "i.sqlite")
    try:
        first.update()
        assert first.update().added == 0
    finally:
        first.close()
    smaller = Engine.open(repo, index_path=tmp_path / "i.sqlite", chunk_policy=ChunkPolicy(max_lines=20, merge_lines=20))
    try:
        stats = smaller.update()
        assert stats.added == 2                  # every file chunked again, at the new size
        assert all(end - start + 1 <= 20 + 4 for start, end, *_ in chunk_rows(smaller, "lib/router.js"))
        assert smaller.update().added == 0
    finally:
        smaller.close()
