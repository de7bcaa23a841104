"""The SQLite index (issue 2): schema and migrations, one-transaction updates,
the crash-in-the-middle case, and corrupt / foreign / unreachable index files."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fixtures_engine import index_dump, make_sample_repo
from rag.engine import Engine
from rag.errors import IndexUnavailableError
from rag.store.index import MIGRATIONS, SCHEMA_VERSION, FileUpdate, Index
from rag.types import Chunk

QUESTION = "how does the database connection pool run a transaction?"


def file_update(path: str, texts: list[str], *, digest: str = "h", headings=None, symbols=None) -> FileUpdate:
    chunks = [
        Chunk(path, i + 1, i + 1, text, "js", "source", (headings or [None] * len(texts))[i])
        for i, text in enumerate(texts)
    ]
    return FileUpdate(path, 100, 1, digest, "js", "source", len(texts), 0, chunks, None, symbols)


@pytest.fixture()
def index(tmp_path):
    idx = Index(tmp_path / "idx" / "index.sqlite")
    yield idx
    idx.close()


@pytest.fixture()
def engine(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    eng = Engine.open(repo, index_path=tmp_path / "idx" / "index.sqlite")
    eng.update()
    yield eng
    eng.close()


def fts_consistent(conn: sqlite3.Connection) -> bool:
    chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
    fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")}
    return chunk_ids == fts_ids


# -- schema ------------------------------------------------------------------------------------


def test_fresh_index_has_every_migration_and_generation_zero(index):
    names = [r[0] for r in index.conn.execute("SELECT name FROM migrations ORDER BY rowid")]
    assert names == [name for name, _ in MIGRATIONS]
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 1
    assert index.generation() == 0
    assert index.counts() == (0, 0)
    assert index.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopen_keeps_data_and_does_not_reapply_migrations(tmp_path):
    path = tmp_path / "index.sqlite"
    first = Index(path)
    first.apply(updates=[file_update("a.js", ["alpha beta"])], removed=[])
    applied = first.conn.execute("SELECT name, applied_at FROM migrations").fetchall()
    first.close()
    again = Index(path)
    try:
        assert again.conn.execute("SELECT name, applied_at FROM migrations").fetchall() == applied
        assert again.generation() == 1
        assert again.counts() == (1, 1)
        assert list(Path(tmp_path).glob("index.sqlite.broken-*")) == []
    finally:
        again.close()


def test_apply_bumps_generation_and_replaces_a_files_chunks(index):
    assert index.apply(updates=[file_update("a.js", ["one", "two", "three"]), file_update("b.js", ["bee"])], removed=[]) == 1
    assert index.counts() == (2, 4)
    assert index.apply(updates=[file_update("a.js", ["only"], digest="h2")], removed=[]) == 2
    assert index.counts() == (2, 2)
    assert index.file_rows()["a.js"].hash == "h2"
    assert index.apply(updates=[], removed=["b.js"]) == 3
    assert index.counts() == (1, 1)
    with index.read() as conn:
        assert fts_consistent(conn)
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH '\"bee\"'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH '\"only\"'").fetchone()[0] == 1


def test_full_apply_drops_everything_first(index):
    index.apply(updates=[file_update("a.js", ["one"]), file_update("b.js", ["two"])], removed=[])
    with index.read() as conn:
        ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    index.apply(updates=[file_update("c.js", ["three"])], removed=[], full=True)
    assert set(index.file_rows()) == {"c.js"}
    with index.read() as conn:
        assert fts_consistent(conn)
        # the full-text table was re-created as it was defined, holding only the new rows
        assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone() == ddl
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH '\"one\"'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH '\"three\"'").fetchone()[0] == 1


def test_fts_body_holds_split_identifiers(index):
    index.apply(updates=[file_update("lib/user.js", ["function getUserById(id) {}"])], removed=[])
    with index.read() as conn:
        body = conn.execute("SELECT body FROM chunks_fts").fetchone()[0]
        assert "getuserbyid" in body.split() and {"get", "user", "by", "id"} <= set(body.split())
        for phrase in ('"getuserbyid"', '"user" AND "id"'):
            assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (phrase,)).fetchone()[0] == 1


def test_older_schema_is_migrated_in_place(tmp_path):
    path = tmp_path / "index.sqlite"
    idx = Index(path)
    idx.apply(updates=[file_update("a.js", ["alpha"])], removed=[])
    # An index written before m002 existed: its record and table are missing.
    missing = "m002_vectors"
    assert missing in [name for name, _ in MIGRATIONS]
    idx.conn.execute("DELETE FROM migrations WHERE name = ?", (missing,))
    idx.conn.execute("DROP TABLE chunk_vectors")
    idx.close()
    again = Index(path)
    try:
        assert missing in [r[0] for r in again.conn.execute("SELECT name FROM migrations")]
        assert again.conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone() == (0,)
        assert again.counts() == (1, 1) and again.generation() == 1  # data kept, not rebuilt
        assert list(tmp_path.glob("index.sqlite.broken-*")) == []
    finally:
        again.close()


# -- crash in the middle -----------------------------------------------------------------------


def _failing_updates(kind: str) -> list[FileUpdate]:
    """A good new file, then a changed file whose *second* chunk makes the write fail."""
    good = file_update("brand/new.js", ["const freshlyadded = 1"])
    if kind == "sqlite":  # sqlite3 refuses to bind the value
        bad = file_update("src/db/pool.js", ["rewritten pool", "boom"], digest="x", headings=[None, object()])
    elif kind == "python":  # the FTS body builder raises on a non-str symbol list
        bad = file_update("src/db/pool.js", ["rewritten pool", "boom"], digest="x", symbols=["pool", 42])
    else:  # a non-str chunk text
        bad = file_update("src/db/pool.js", ["rewritten pool", b"bytes are not text"], digest="x")
    return [good, bad]


@pytest.mark.parametrize("kind", ["sqlite", "python", "bytes"])
def test_exception_mid_update_leaves_previous_generation_intact(engine, kind):
    before = index_dump(engine.index.path)
    before_sources = [(s.path, s.start, s.end, s.text) for s in engine.retrieve(QUESTION)]
    assert before_sources and before_sources[0][0] == "src/db/pool.js"

    with pytest.raises(Exception):
        engine.index.apply(updates=_failing_updates(kind), removed=["README.md"], images=[])

    # Nothing of the failed update is visible: same generation, rows, FTS and images.
    assert index_dump(engine.index.path) == before
    assert not engine.index.conn.in_transaction
    assert [(s.path, s.start, s.end, s.text) for s in engine.retrieve(QUESTION)] == before_sources
    assert engine.retrieve("freshlyadded") == []
    # The write lock was released: another connection can write at once.
    other = sqlite3.connect(engine.index.path, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()
    # And the engine keeps working: a real change is indexed as the next generation.
    (engine.repo_root / "src" / "util" / "format.js").write_text("// zygomorphic formatting\n", encoding="utf-8")
    stats = engine.update()
    assert stats.changed == 1 and stats.generation == int(before["generation"]) + 1
    assert engine.retrieve("zygomorphic")[0].path == "src/util/format.js"


def test_killed_process_mid_write_leaves_previous_generation_intact(engine):
    before = index_dump(engine.index.path)
    engine.close()
    script = textwrap.dedent(
        """
        import os, sys
        from rag.store.index import Index
        index = Index(sys.argv[1])
        with index.write() as conn:
            conn.execute("DELETE FROM chunks_fts")
            conn.execute("DELETE FROM chunks")
            conn.execute("DELETE FROM files")
            conn.execute("UPDATE meta SET value = '999' WHERE key = 'generation'")
            sys.stdout.write("deleted\\n"); sys.stdout.flush()
            os._exit(9)   # killed before COMMIT
        """
    )
    proc = subprocess.run([sys.executable, "-c", script, str(engine.index.path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9 and proc.stdout == "deleted\n", proc.stderr
    assert index_dump(engine.index.path) == before
    reopened = Engine.open(engine.repo_root, index_path=engine.index.path)
    try:
        assert reopened.retrieve(QUESTION)[0].path == "src/db/pool.js"
        assert reopened.generation == int(before["generation"])
    finally:
        reopened.close()


# -- corrupt and foreign index files -------------------------------------------------------------


def _write_garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 64)


def _write_sqlite_header_garbage(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8000)


def _write_foreign_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users VALUES (1, 'ada')")
    conn.commit()
    conn.close()


def _write_newer_schema(path: Path) -> None:
    idx = Index(path)
    idx.conn.execute("INSERT INTO migrations VALUES ('m999_from_the_future', 0)")
    idx.close()


def _write_truncated(path: Path, repo: Path) -> None:
    eng = Engine.open(repo, index_path=path)
    eng.update()
    eng.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


@pytest.mark.parametrize("damage", ["garbage", "sqlite_header_garbage", "newer_schema", "empty", "truncated"])
def test_corrupt_or_foreign_index_is_rebuilt_not_fatal(tmp_path, damage):
    repo = make_sample_repo(tmp_path / "repo")
    path = tmp_path / "idx" / "index.sqlite"
    path.parent.mkdir()
    {
        "garbage": _write_garbage,
        "sqlite_header_garbage": _write_sqlite_header_garbage,
        "newer_schema": _write_newer_schema,
        "empty": lambda p: p.write_bytes(b""),
        "truncated": lambda p: _write_truncated(p, repo),
    }[damage](path)

    eng = Engine.open(repo, index_path=path)
    try:
        stats = eng.update()
        assert stats.files == 12 and stats.added == 12
        assert eng.retrieve(QUESTION)[0].path == "src/db/pool.js"
    finally:
        eng.close()
    aside = list(path.parent.glob("index.sqlite.broken-*"))
    if damage == "empty":
        assert aside == []  # an empty file is simply a new database
    else:
        assert any(p.name.count("-") == 1 for p in aside), aside  # the damaged file was kept aside, not deleted


def test_another_programs_sqlite_database_is_refused_and_left_alone(tmp_path):
    # `--index app.db` (or the bot's own state.sqlite) is someone's data: never renamed or replaced.
    repo = make_sample_repo(tmp_path / "repo")
    path = tmp_path / "idx" / "index.sqlite"
    path.parent.mkdir()
    _write_foreign_db(path)
    before = path.read_bytes()
    with pytest.raises(IndexUnavailableError, match="another program's SQLite database .*users.*nothing was changed"):
        Engine.open(repo, index_path=path)
    assert path.read_bytes() == before and list(path.parent.glob("index.sqlite.broken-*")) == []
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]
    conn.close()


def test_index_with_damaged_table_pages_is_rebuilt(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    path = tmp_path / "index.sqlite"
    eng = Engine.open(repo, index_path=path)
    eng.update()
    eng.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    roots = [r[0] for r in conn.execute("SELECT rootpage FROM sqlite_master WHERE name IN ('files', 'chunks')")]
    conn.close()
    data = bytearray(path.read_bytes())
    for root in roots:  # overwrite the root page of `files` and `chunks` (1-based page numbers)
        data[(root - 1) * page_size : root * page_size] = b"\xa5" * page_size
    path.write_bytes(bytes(data))

    eng = Engine.open(repo, index_path=path)
    try:
        assert eng.update().files == 12
        assert eng.retrieve(QUESTION)[0].path == "src/db/pool.js"
    finally:
        eng.close()


# -- unreachable index locations -----------------------------------------------------------------


def test_index_whose_parent_is_a_file_raises_index_unavailable(tmp_path):
    (tmp_path / "plain-file").write_text("x")
    with pytest.raises(IndexUnavailableError, match="plain-file"):
        Index(tmp_path / "plain-file" / "index.sqlite")


def test_index_path_that_is_a_directory_raises_index_unavailable(tmp_path):
    (tmp_path / "index.sqlite").mkdir()
    with pytest.raises(IndexUnavailableError):
        Index(tmp_path / "index.sqlite")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_index_in_read_only_directory_raises_index_unavailable(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(IndexUnavailableError):
            Index(ro / "sub" / "index.sqlite")
        with pytest.raises(IndexUnavailableError):
            Index(ro / "index.sqlite")
    finally:
        ro.chmod(0o700)


# -- hostile index paths and WAL growth (issue 14) ------------------------------------------------

def test_an_ordinary_file_given_as_the_index_is_refused_and_left_alone(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# My project\n\nImportant notes.\n")
    with pytest.raises(IndexUnavailableError, match="is not an index"):
        Index(readme)
    assert readme.read_text() == "# My project\n\nImportant notes.\n"
    assert list(tmp_path.glob("README.md.broken-*")) == []


def test_the_wal_is_truncated_after_a_rebuild(tmp_path):
    from rag.engine import Engine

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    for i in range(150):
        (repo / "src" / f"m{i}.js").write_text("".join(f"export function f{i}_{j}(a) {{ return a + {j}; }}\n"
                                                       for j in range(120)))
    index_path = tmp_path / "idx" / "index.sqlite"
    engine = Engine.open(repo, index_path=index_path)
    try:
        engine.update()
        engine.update(full=True)
        wal = Path(str(index_path) + "-wal")
        assert index_path.stat().st_size > 1_000_000
        assert not wal.exists() or wal.stat().st_size < 0.05 * index_path.stat().st_size
    finally:
        engine.close()


def test_the_default_index_folder_ignores_itself_for_git(tmp_path):
    index = Index(tmp_path / "repo" / ".rag" / "index.sqlite")
    index.close()
    assert (tmp_path / "repo" / ".rag" / ".gitignore").read_text().splitlines()[-1] == "*"
    other = Index(tmp_path / "elsewhere" / "idx.sqlite")
    other.close()
    assert not (tmp_path / "elsewhere" / ".gitignore").exists()


def _case_functions(count: int, *, doc: bool = False) -> list[str]:
    """``count`` 33-line JavaScript functions ``handleCase<i>`` (with a doc comment each when ``doc``)."""
    return [(f"/** Handles case {i}. */\n" if doc else "") + f"export function handleCase{i}(input) {{\n"
            + "".join(f"  const step{j} = input.value{j} + {i};\n" for j in range(30)) + "  return input;\n}\n"
            for i in range(count)]


def _rebuild(repo: Path, index_path: Path) -> Path:
    """A full build of ``repo`` into ``index_path`` (closed again); returns ``index_path``."""
    engine = Engine.open(repo, index_path=index_path)
    try:
        engine.update(full=True)
    finally:
        engine.close()
    return index_path


def _terms_dump(index_path):
    conn = sqlite3.connect(index_path)
    try:
        return conn.execute(
            "SELECT c.path, c.start, c.end, c.text, c.hash, c.stems, c.header, c.heading, f.body, f.heading, "
            "f.symbols, f.path FROM chunks c JOIN chunks_fts f ON f.rowid = c.id ORDER BY c.path, c.start").fetchall()
    finally:
        conn.close()


def test_an_edited_files_unchanged_chunks_keep_their_terms_as_a_rebuild_computes_them(tmp_path):
    from rag.engine import Engine
    from rag.store import index as index_module

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    functions = _case_functions(12, doc=True)
    target = repo / "src" / "cases.js"
    target.write_text("\n".join(functions), encoding="utf-8")
    (repo / "README.md").write_text("# Cases\n\nHow cases are handled.\n", encoding="utf-8")
    engine = Engine.open(repo, index_path=tmp_path / "incremental.sqlite")
    calls = []
    original = index_module.index_text
    try:
        engine.update()
        functions[5] = functions[5].replace("return input;", "return input.renamed;")
        target.write_text("\n".join(functions) + "\n// trailing edit\n", encoding="utf-8")
        index_module.index_text = lambda text: calls.append(text) or original(text)
        assert engine.update().changed == 1
    finally:
        index_module.index_text = original
        engine.close()
    rebuilt = _rebuild(repo, tmp_path / "rebuilt.sqlite")
    assert _terms_dump(tmp_path / "incremental.sqlite") == _terms_dump(rebuilt)
    bodies = [text for text in calls if "const step" in text]
    chunks = [row for row in _terms_dump(rebuilt) if row[0] == "src/cases.js"]
    assert len(chunks) >= 6 and 0 < len(bodies) <= 2  # only the edited chunk and the last one: tokenised again


def _rows_by_place(index_path: Path) -> dict[tuple[str, int], tuple]:
    """(path, start) → (id, end, text, hash, heading, symbol, FTS body, FTS heading, FTS symbols) of every chunk."""
    conn = sqlite3.connect(index_path)
    try:
        return {(path, start): rest for path, start, *rest in conn.execute(
            "SELECT c.path, c.start, c.id, c.end, c.text, c.hash, c.heading, c.symbol, f.body, f.heading, f.symbols "
            "FROM chunks c JOIN chunks_fts f ON f.rowid = c.id")}
    finally:
        conn.close()


def test_an_edit_rewrites_only_the_chunks_it_changed_and_moves_the_ones_below(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    functions = _case_functions(8)
    target = repo / "src" / "cases.js"
    target.write_text("\n".join(functions), encoding="utf-8")
    engine = Engine.open(repo, index_path=tmp_path / "incremental.sqlite")
    statements: list[str] = []
    try:
        engine.update()
        before = _rows_by_place(tmp_path / "incremental.sqlite")
        functions[3] = functions[3].replace("  return input;\n", "  input.seen = true;\n  input.count += 1;\n"
                                            "  return input;\n")   # two lines more in the fourth function
        target.write_text("\n".join(functions), encoding="utf-8")
        engine.index.conn.set_trace_callback(statements.append)
        assert engine.update().changed == 1
    finally:
        engine.close()
    after = _rows_by_place(tmp_path / "incremental.sqlite")
    expected = _rows_by_place(_rebuild(repo, tmp_path / "rebuilt.sqlite"))
    # What readers see is what a rebuild writes, but for the chunk ids.
    assert {k: v[1:] for k, v in after.items()} == {k: v[1:] for k, v in expected.items()}
    old_ids = {v[0] for v in before.values()}
    new_ids = {k: v[0] for k, v in after.items()}
    edited = [k for k, v in after.items() if "input.seen" in v[2]]
    assert len(edited) == 1 and len(after) >= 6
    above = [k for k in after if k[1] < edited[0][1]]
    below = [k for k in after if k[1] > edited[0][1]]
    assert above and below
    assert all(before[k][0] == new_ids[k] for k in above)                       # kept where they were
    assert all(new_ids[k] in old_ids and (k[0], k[1] - 2) in before for k in below)  # kept, two lines down
    assert new_ids[edited[0]] not in old_ids
    fts_writes = [s for s in statements if s.startswith(("INSERT INTO chunks_fts", "DELETE FROM chunks_fts"))]
    assert len(fts_writes) == 2   # the edited chunk's old row out, its new row in


def _readable(index_path: Path) -> tuple[list[tuple], list[tuple]]:
    """What readers see of the chunks, ids left out, and each FTS match set in terms of (path, start)."""
    conn = sqlite3.connect(index_path)
    try:
        chunks = conn.execute(
            "SELECT c.path, c.start, c.end, c.text, c.hash, c.stems, c.header, c.heading, c.symbol, f.body, "
            "f.heading, f.symbols, f.path FROM chunks c JOIN chunks_fts f ON f.rowid = c.id "
            "ORDER BY c.path, c.start, c.end").fetchall()
        assert {r[0] for r in conn.execute("SELECT id FROM chunks")} == \
            {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")}
        matches = [tuple(conn.execute(
            "SELECT c.path, c.start FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            "WHERE chunks_fts MATCH ? ORDER BY c.path, c.start", (word,)).fetchall())
            for word in ('"shared"', '"alpha"', '"beta"', '"notes"', '"value7"')]
        return chunks, matches
    finally:
        conn.close()


def test_random_edits_leave_what_a_rebuild_writes(tmp_path):
    import random

    rng = random.Random(20)
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)

    def function(name: str, lines: int) -> str:
        return (f"export function {name}(input) {{\n"
                + "".join(f"  const value{j} = input.shared{j % 5} + {j};\n" for j in range(lines)) + "  return input;\n}\n")

    files = {f"src/m{i}.js": [function(f"{rng.choice(['alpha', 'beta'])}{i}x{k}", rng.randint(3, 70))
                              for k in range(rng.randint(4, 9))] for i in range(4)}
    notes = [f"## Part {i}\n\nShared notes {i}.\n" for i in range(5)]

    def write() -> None:
        for path, parts in files.items():
            (repo / path).write_text("\n".join(parts), encoding="utf-8")
        (repo / "NOTES.md").write_text("# Notes\n\n" + "\n".join(notes), encoding="utf-8")

    write()
    engine = Engine.open(repo, index_path=tmp_path / "incremental.sqlite")
    kept: list[int] = []
    try:
        engine.update()
        for round_ in range(6):
            for parts in files.values():
                k = rng.randrange(len(parts))
                edit = rng.choice(["grow", "shrink", "duplicate", "drop", "swap"])
                if edit == "grow":
                    parts[k] = parts[k].replace("  return input;\n", "  input.round = 1;\n  return input;\n")
                elif edit == "shrink":
                    parts[k] = parts[k].replace("  const value0 = input.shared0 + 0;\n", "", 1)
                elif edit == "duplicate":   # two identical chunks in one file
                    parts.insert(k, parts[k])
                elif edit == "drop" and len(parts) > 1:
                    parts.pop(k)
                else:
                    parts.insert(0, parts.pop(k))
            notes.insert(rng.randrange(len(notes)), f"## Added {round_}\n\nMore notes.\n")
            write()
            with engine.index.read() as conn:
                before = {r[0] for r in conn.execute("SELECT id FROM chunks")}
            assert engine.update().changed >= 1
            with engine.index.read() as conn:
                kept.append(len(before & {r[0] for r in conn.execute("SELECT id FROM chunks")}))
            rebuilt = _rebuild(repo, tmp_path / f"rebuilt{round_}.sqlite")
            assert _readable(tmp_path / "incremental.sqlite") == _readable(rebuilt), round_
    finally:
        engine.close()
    assert all(kept) and len(_readable(tmp_path / "incremental.sqlite")[0]) >= 20   # rows were kept each round
