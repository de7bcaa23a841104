"""The engine end to end on the sample repository (issue 2): what gets indexed,
incremental updates (add, same-size-same-mtime edit, delete, rename), unchanged
files not re-chunked, a reader during updates, and planted secrets."""
from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

import pytest

from fixtures_engine import (
    EXCLUDED_MARKERS,
    PLANTED_SECRETS,
    SECRET_FRAGMENTS,
    index_dump,
    make_sample_repo,
    raw_index_bytes,
)
from rag.ingest.chunk import split_lines
from rag.config import parse_engine_config
from rag.engine import Engine, default_index_path
from rag.ingest.walk import KINDS_VERSION
from rag.secrets import REDACTION_VERSION
from rag.errors import RepoNotFoundError
from rag.secrets import redact_secrets

INDEXED = {
    "README.md", "config.example", "docs/architecture.md", "examples/basic.js", "package.json",
    "src/auth/session.js", "src/cart/pricing.js", "src/config.js", "src/db/pool.js", "src/server.js",
    "src/util/format.js", "test/pricing.test.js",
}


@pytest.fixture()
def repo(tmp_path):
    return make_sample_repo(tmp_path / "repo")


@pytest.fixture()
def engine(repo):
    eng = Engine.open(repo)
    eng.update()
    yield eng
    eng.close()


def chunk_ids(engine: Engine, path: str) -> list[int]:
    with engine.index.read() as conn:
        return [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=? ORDER BY id", (path,))]


def indexed_paths(engine: Engine) -> set[str]:
    return set(engine.index.file_rows())


def paths_of(sources) -> list[str]:
    return [s.path for s in sources]


# -- opening ---------------------------------------------------------------------------------


def test_default_index_location_is_inside_the_repo(repo):
    eng = Engine.open(repo)
    try:
        assert eng.index.path == default_index_path(repo.resolve()) == repo.resolve() / ".rag" / "index.sqlite"
        assert eng.generation == 0
    finally:
        eng.close()


def test_index_location_from_environment(repo, tmp_path, monkeypatch):
    # $RAG_INDEX_PATH is applied by the config parser (rag.config) and passed in; Engine.open reads no environment.
    monkeypatch.setenv("RAG_INDEX_PATH", str(tmp_path / "elsewhere" / "i.sqlite"))
    monkeypatch.setenv("REPO_PATH", str(repo))
    config = parse_engine_config()
    assert config.index_path == tmp_path / "elsewhere" / "i.sqlite" and config.repo == repo.resolve()
    eng = Engine.open(config.repo, index_path=config.index_path)
    try:
        eng.update()
        assert (tmp_path / "elsewhere" / "i.sqlite").is_file()
        assert not (repo / ".rag").exists()
    finally:
        eng.close()


def test_open_reads_no_environment(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_PATH", str(tmp_path / "elsewhere" / "i.sqlite"))
    monkeypatch.setenv("REPO_PATH", str(tmp_path / "missing"))
    monkeypatch.chdir(repo)
    eng = Engine.open()
    try:
        assert eng.repo_root == repo.resolve() and eng.index.path == default_index_path(repo.resolve())
    finally:
        eng.close()


def test_missing_or_non_directory_repo_raises_repo_not_found(tmp_path):
    with pytest.raises(RepoNotFoundError, match="not a directory"):
        Engine.open(tmp_path / "nope")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(RepoNotFoundError):
        Engine.open(tmp_path / "file.txt")


# -- what is indexed ---------------------------------------------------------------------------


def test_first_update_indexes_exactly_the_allowed_files(engine):
    assert indexed_paths(engine) == INDEXED
    with engine.index.read() as conn:
        images = [r[0] for r in conn.execute("SELECT path FROM images")]
        kinds = dict(conn.execute("SELECT path, kind FROM files"))
    assert images == ["docs/images/architecture-diagram.png"]
    assert kinds["README.md"] == "documentation"
    assert kinds["src/server.js"] == "source"
    assert kinds["package.json"] == "config"
    assert kinds["test/pricing.test.js"] == "test"
    assert kinds["examples/basic.js"] == "example"


def test_first_update_stats(repo):
    eng = Engine.open(repo)
    try:
        stats = eng.update()
        assert (stats.files, stats.added, stats.changed, stats.removed) == (12, 12, 0, 0)
        assert stats.chunks >= 12 and stats.generation == 1
        assert stats.redactions >= 2  # apiKey in src/config.js, SLACK_BOT_TOKEN in config.example
        assert stats.skipped.get("secret", 0) >= 1  # .env
        assert stats.skipped.get("skipped_dir", 0) >= 1  # node_modules
        assert stats.skipped.get("ignored", 0) >= 3  # tmp/, *.local.js, src/generated/
        assert set(stats.to_json()) >= {"files", "chunks", "added", "changed", "removed", "skipped", "seconds"}
    finally:
        eng.close()


@pytest.mark.parametrize(("marker", "path"), sorted(EXCLUDED_MARKERS.items()))
def test_ignored_and_secret_files_never_reach_the_index(engine, marker, path):
    assert path not in indexed_paths(engine)
    assert engine.retrieve(marker) == []
    with engine.index.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM chunks WHERE lower(text) LIKE ?", (f"%{marker}%",)).fetchone()[0] == 0


def test_source_ranges_match_the_files_lines(engine):
    """Every retrieved chunk is the (redacted) text of the lines it names."""
    for question in ("checkout order transaction", "session cookie signature", "install and configure the shop"):
        sources = engine.retrieve(question)
        assert sources
        for s in sources:
            raw = (engine.repo_root / s.path).read_text(encoding="utf-8")
            lines = split_lines(redact_secrets(raw)[0])
            assert s.text == "\n".join(lines[s.start - 1 : s.end]), s.path
            assert engine.read_lines(s.path, s.start, s.end) == s.text


# -- incremental updates -----------------------------------------------------------------------


def test_noop_update_changes_nothing(engine):
    before = index_dump(engine.index.path)
    stats = engine.update()
    assert (stats.added, stats.changed, stats.removed) == (0, 0, 0)
    assert stats.generation == int(before["generation"])
    assert index_dump(engine.index.path) == before


def test_add_file(engine, repo):
    (repo / "src" / "shipping.js").write_text("// Shipping rates by zone: xylophonic tariffs.\n", encoding="utf-8")
    stats = engine.update()
    assert (stats.added, stats.changed, stats.removed, stats.files) == (1, 0, 0, 13)
    assert paths_of(engine.retrieve("xylophonic tariffs")) == ["src/shipping.js"]


def test_stats_that_cannot_be_stored_leave_a_no_op_update_working(engine, repo, monkeypatch, caplog):
    """Storing settled stats is the only write of a no-op update: an index that refuses writes (SQLite's
    ``query_only``) still answers, says why in the log, and reads those files again next time."""
    import rag.ingest.prepare as prepare

    monkeypatch.setattr(prepare, "RACY_WINDOW_NS", 0)
    with engine.index.write() as conn:  # rows as written before migration m010: no stat to trust
        conn.execute("UPDATE files SET ctime_ns = 0, ino = 0, seen_ns = 0")
    generation = engine.index.generation()
    engine.index.conn.execute("PRAGMA query_only = 1")
    try:
        with caplog.at_level("WARNING", logger="rag.engine"):
            stats = engine.update()
    finally:
        engine.index.conn.execute("PRAGMA query_only = 0")
    assert (stats.added, stats.changed, stats.removed, stats.generation) == (0, 0, 0, generation)
    assert f"the stats of {len(INDEXED)} unchanged files were not stored" in caplog.text
    reads = _count_reads(monkeypatch, repo)
    engine.update()  # now they are stored ...
    assert len(reads) == len(INDEXED)
    reads.clear()
    engine.update()  # ... and trusted
    assert reads == []


@pytest.mark.parametrize("trusted", [False, True], ids=["racy", "trusted-stat"])
def test_edit_with_same_size_and_same_mtime_is_seen(engine, repo, monkeypatch, trusted):
    """Also once the stored stats are trusted (issue 20): the inode change time moves on any write and on
    the utime that puts the mtime back."""
    if trusted:
        import rag.ingest.prepare as prepare

        monkeypatch.setattr(prepare, "RACY_WINDOW_NS", 0)
        engine.update()  # every stat stored as settled
    target = repo / "src" / "cart" / "pricing.js"
    st = target.stat()
    old = target.read_bytes()
    new = old.replace(b"BULK_THRESHOLD = 10", b"BULK_THRESHOLD = 12").replace(b"bulk discounts", b"quirky rebates")
    assert len(new) == len(old) and new != old
    target.write_bytes(new)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (target.stat().st_size, target.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    stats = engine.update()
    assert (stats.added, stats.changed, stats.removed) == (0, 1, 0)
    assert paths_of(engine.retrieve("quirky rebates")) == ["src/cart/pricing.js"]
    assert "BULK_THRESHOLD = 12" in engine.read_lines("src/cart/pricing.js", 1, 10)


def test_delete_file(engine, repo):
    assert engine.retrieve("money formatting currency")[0].path == "src/util/format.js"
    (repo / "src" / "util" / "format.js").unlink()
    stats = engine.update()
    assert (stats.added, stats.changed, stats.removed, stats.files) == (0, 0, 1, 11)
    assert "src/util/format.js" not in paths_of(engine.retrieve("money formatting currency formatPrice"))
    assert chunk_ids(engine, "src/util/format.js") == []
    with engine.index.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH '\"formatprice\"'").fetchone()[0] == 1  # examples/basic.js only


def test_rename_file(engine, repo):
    os.rename(repo / "src" / "auth" / "session.js", repo / "src" / "auth" / "cookies.js")
    stats = engine.update()
    assert (stats.added, stats.removed, stats.files) == (1, 1, 12)
    assert "src/auth/session.js" not in indexed_paths(engine)
    assert engine.retrieve("verifySessionToken signature")[0].path == "src/auth/cookies.js"
    assert chunk_ids(engine, "src/auth/session.js") == []


def test_unchanged_files_are_not_rechunked(engine, repo):
    before = {p: chunk_ids(engine, p) for p in INDEXED}
    (repo / "src" / "server.js").write_text(
        (repo / "src" / "server.js").read_text(encoding="utf-8") + "\n// trailing edit\n", encoding="utf-8"
    )
    os.utime(repo / "README.md")  # touched but identical: the content hash decides
    stats = engine.update()
    assert (stats.added, stats.changed, stats.removed) == (0, 1, 0)
    after = {p: chunk_ids(engine, p) for p in INDEXED}
    for path in INDEXED - {"src/server.js"}:
        assert after[path] == before[path], path
    assert after["src/server.js"] != before["src/server.js"]


def _count_reads(monkeypatch, repo) -> list[str]:
    """Spy on the function that reads files' bytes for an update (it still reads them): the indexed files read."""
    import rag.ingest.prepare as prepare

    reads: list[str] = []
    real = prepare.read_regular_file

    def counting(path, *args, **kwargs):
        rel = os.path.relpath(path, repo).replace(os.sep, "/")
        if rel in INDEXED:  # not the secret files read for their values
            reads.append(rel)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(prepare, "read_regular_file", counting)
    return reads


def test_an_update_reads_only_the_files_whose_stat_changed(engine, repo, monkeypatch):
    """Issue 20: a one-file update read and hashed every file; now a file whose size, mtime, inode change
    time and inode are as stored, and that was not changed in the stored walk's last seconds, is not read."""
    import rag.ingest.prepare as prepare

    reads = _count_reads(monkeypatch, repo)
    monkeypatch.setattr(prepare, "RACY_WINDOW_NS", 10**18)  # every stored stat "racily clean": all read
    engine.update()
    assert len(reads) == len(INDEXED)
    monkeypatch.setattr(prepare, "RACY_WINDOW_NS", 0)  # the files were written before the walk that stored them
    reads.clear()
    engine.update()
    assert reads == []                 # trusted by their stat, none read
    (repo / "src" / "server.js").write_text("// rewritten: zygomorphic\n", encoding="utf-8")
    stats = engine.update()
    assert (stats.added, stats.changed, stats.removed) == (0, 1, 0)
    assert reads == ["src/server.js"]
    assert paths_of(engine.retrieve("zygomorphic")) == ["src/server.js"]


def test_full_update_rebuilds_every_file(engine):
    stats = engine.update(full=True)
    assert (stats.files, stats.added, stats.removed) == (12, 12, 0)
    with engine.index.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == conn.execute(
            "SELECT COUNT(*) FROM chunks_fts"
        ).fetchone()[0]


def test_an_index_whose_files_were_classified_by_older_rules_is_rebuilt(engine, repo):
    (repo / "docs" / "snippets").mkdir(parents=True)
    (repo / "docs" / "snippets" / "quickstart.py").write_text("def start():\n    return serve()\n", encoding="utf-8")
    engine.update()

    def kinds() -> set[str]:
        with engine.index.read() as conn:
            return {r[0] for r in conn.execute("SELECT kind FROM chunks WHERE path='docs/snippets/quickstart.py'")} | {
                r[0] for r in conn.execute("SELECT kind FROM files WHERE path='docs/snippets/quickstart.py'")}

    assert kinds() == {"example"}  # code in a documentation folder: sample code, not the implementation
    assert engine.index.meta("kinds") == str(KINDS_VERSION)
    # what the first rules left: the snippet filed as source, no kinds version stored
    with contextlib.closing(sqlite3.connect(engine.index.path)) as conn, conn:
        conn.execute("UPDATE chunks SET kind='source' WHERE path='docs/snippets/quickstart.py'")
        conn.execute("UPDATE files SET kind='source' WHERE path='docs/snippets/quickstart.py'")
        conn.execute("DELETE FROM meta WHERE key='kinds'")
    stats = engine.update()
    assert (stats.files, stats.added) == (13, 13) and kinds() == {"example"}
    assert engine.update().added == 0  # and only once


def test_an_index_redacted_by_older_rules_is_rebuilt(engine, repo):
    secret = "Zq8vN2rT5yW1xK4mP7sL0aB3cD6eF9gH2jK5nQ8t"
    (repo / "DEPLOY.md").write_text(f"# Deploy\n\nSet AWS_SECRET_ACCESS_KEY={secret} in your shell.\n",
                                    encoding="utf-8")
    engine.update()
    assert engine.index.meta("redaction") == str(REDACTION_VERSION)

    def stored() -> str:
        with engine.index.read() as conn:
            return "".join(r[0] for r in conn.execute("SELECT text FROM chunks WHERE path='DEPLOY.md'"))

    assert secret not in stored() and "[REDACTED]" in stored()
    # what older rules left: the value in the stored chunk, an older (here: no) redaction version
    with contextlib.closing(sqlite3.connect(engine.index.path)) as conn, conn:
        conn.execute("UPDATE chunks SET text=replace(text, '[REDACTED]', ?) WHERE path='DEPLOY.md'", (secret,))
        conn.execute("DELETE FROM meta WHERE key='redaction'")
    assert secret in stored()
    stats = engine.update()
    assert stats.added == stats.files and secret not in stored()
    assert engine.update().added == 0  # and only once


def test_progress_callback_reports_the_last_file(repo):
    eng = Engine.open(repo)
    calls = []
    try:
        eng.update(progress=lambda done, total: calls.append((done, total)))
    finally:
        eng.close()
    assert calls and calls[-1][0] == calls[-1][1] >= 12


def test_second_engine_sees_updates_of_the_first(engine, repo):
    other = Engine.open(repo)
    try:
        assert other.retrieve("zanzibarite") == []
        (repo / "notes.md").write_text("# Notes\n\nThe zanzibarite mineral.\n", encoding="utf-8")
        engine.update()
        assert paths_of(other.retrieve("zanzibarite")) == ["notes.md"]  # its caches follow the generation
    finally:
        other.close()


def test_binary_files_are_skipped_and_a_file_turning_binary_is_removed(engine, repo):
    (repo / "src" / "blob.js").write_bytes(b"var a = 1;\x00\x01binaryzebra")
    (repo / "src" / "util" / "format.js").write_bytes(b"formatPrice\x00\x00")
    stats = engine.update()
    assert stats.skipped.get("binary") == 2
    assert stats.removed == 1 and stats.added == 0
    assert {"src/blob.js", "src/util/format.js"}.isdisjoint(indexed_paths(engine))
    assert engine.retrieve("binaryzebra") == []


def test_undecodable_bytes_are_replaced_not_fatal(engine, repo):
    (repo / "src" / "latin.js").write_bytes("// caf\xe9 cr\xe8me\nvar dessertqux = 1;\n".encode("latin-1"))
    stats = engine.update()
    assert stats.added == 1
    source = engine.retrieve("dessertqux")[0]
    assert source.path == "src/latin.js" and "café crème" in source.text and (source.start, source.end) == (1, 2)


def test_crlf_file_has_the_same_line_numbers_as_lf(engine, repo):
    before = [(s.start, s.end, s.text) for s in engine.retrieve("database connection pool") if s.path == "src/db/pool.js"]
    target = repo / "src" / "db" / "pool.js"
    target.write_bytes(target.read_bytes().replace(b"\n", b"\r\n"))
    assert engine.update().changed == 1
    after = [(s.start, s.end, s.text) for s in engine.retrieve("database connection pool") if s.path == "src/db/pool.js"]
    assert after == before and before
    assert engine.read_lines("src/db/pool.js", 9, 9).startswith("function createConnectionPool(")


def test_symlinks_are_not_followed(engine, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.js").write_text("var symlinkedporcupine = 1;\n", encoding="utf-8")
    (repo / "src" / "loop").symlink_to(repo / "src")  # a loop must not hang
    (repo / "src" / "outside").symlink_to(outside)
    (repo / "leak.js").symlink_to(outside / "leak.js")
    stats = engine.update()
    assert stats.added == 0 and stats.skipped.get("symlink", 0) >= 3
    assert engine.retrieve("symlinkedporcupine") == []


def test_never_built_index_answers_nothing(repo):
    eng = Engine.open(repo)
    try:
        assert eng.retrieve("database connection pool") == []
        assert eng.retrieve_images("architecture diagram") == []
        with pytest.raises(KeyError):
            eng.read_lines("src/db/pool.js", 1, 5)  # not indexed (yet)
    finally:
        eng.close()


def test_read_lines_returns_redacted_indexed_text(engine):
    assert engine.read_lines("src/config.js", 4, 5) == (
        "// The payment provider key below is a planted test secret: the indexer must redact it.\n"
        'const apiKey = "[REDACTED]";'
    )
    assert engine.read_lines("src/db/pool.js", 34, 99) == "\nmodule.exports = { createConnectionPool, DEFAULT_MAX_CONNECTIONS };"
    with pytest.raises(KeyError):
        engine.read_lines("src/generated/bundle.js", 1, 3)


def test_read_lines_past_the_end_of_an_indexed_file_is_empty(engine):
    assert engine.read_lines("src/db/pool.js", 500, 600) == ""


def test_image_only_changes_are_indexed(engine, repo):
    images = repo / "docs" / "images"
    (images / "checkout-flow.png").write_bytes((images / "architecture-diagram.png").read_bytes())
    engine.update()
    assert [h.path for h in engine.retrieve_images("checkout flow")] == ["docs/images/checkout-flow.png"]
    (images / "architecture-diagram.png").unlink()
    engine.update()
    assert engine.retrieve_images("architecture diagram") == []


# -- a reader during updates -----------------------------------------------------------------


def test_reader_during_updates_sees_one_generation_at_a_time(repo, tmp_path):
    """Updates move a marker word between two files; every result shows exactly one of them."""
    a, b = repo / "src" / "alpha.js", repo / "src" / "beta.js"
    body = "".join(f"function step{i}(input) {{ return input + {i}; }}\n" for i in range(150))

    def place(marker_in_a: bool) -> None:
        a.write_text(("// marmoset toggle\n" if marker_in_a else "// plain header\n") + body, encoding="utf-8")
        b.write_text(("// plain header\n" if marker_in_a else "// marmoset toggle\n") + body, encoding="utf-8")

    index_path = tmp_path / "shared.sqlite"
    writer = Engine.open(repo, index_path=index_path)
    place(True)
    writer.update()
    stop = threading.Event()
    seen: list[tuple[str, ...]] = []
    errors: list[BaseException] = []

    def read_loop(eng: Engine) -> None:
        try:
            while not stop.is_set():
                seen.append(tuple(sorted({s.path for s in eng.retrieve("marmoset toggle") if "marmoset" in s.text})))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    separate = Engine.open(repo, index_path=index_path)  # another handle, as another process would
    readers = [threading.Thread(target=read_loop, args=(eng,)) for eng in (writer, separate)]
    for t in readers:
        t.start()
    try:
        generations = []
        for i in range(12):
            place(i % 2 == 1)
            stats = writer.update()
            assert stats.changed == 2
            generations.append(stats.generation)
            time.sleep(0.005)
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=30)
        separate.close()
        writer.close()
    assert not errors, errors
    assert generations == list(range(generations[0], generations[0] + 12))
    assert len(seen) >= 10
    # Never both files, never neither: each result set comes from one committed generation.
    assert set(seen) == {("src/alpha.js",), ("src/beta.js",)}, set(seen)


# -- planted secrets -------------------------------------------------------------------------


def test_planted_secrets_are_absent_from_every_index_row(engine):
    dump = index_dump(engine.index.path)
    texts = [row[4] for row in dump["chunks"]] + [row[1] for row in dump["fts"]]
    assert texts
    for text in texts:
        low = text.lower()
        for secret in PLANTED_SECRETS:
            assert secret.lower() not in low
        for fragment in SECRET_FRAGMENTS:
            assert fragment not in low
    # The redaction marker is where the secrets were, on the same lines.
    assert 'const apiKey = "[REDACTED]";' in engine.read_lines("src/config.js", 5, 5)
    assert engine.read_lines("config.example", 4, 4) == "SLACK_BOT_TOKEN=[REDACTED]"


def test_planted_secrets_are_absent_from_the_raw_index_file(engine):
    engine.close()
    data = raw_index_bytes(engine.index.path)
    assert len(data) > 4096
    for secret in PLANTED_SECRETS:
        assert secret.encode() not in data
    for fragment in SECRET_FRAGMENTS:
        assert fragment.encode() not in data.lower()


@pytest.mark.parametrize(
    "question",
    [
        "what is the slack bot token?",
        "SLACK_BOT_TOKEN",
        "config.example",
        "what is the payment apiKey in src/config.js",
        "paymentApiKey secret key",
        "xoxb",
        "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",
        "EnvFileSecretValue1",
    ],
)
def test_planted_secrets_are_absent_from_retrieve_output(engine, question):
    sources = engine.retrieve(question, limit=20)
    for s in sources:
        blob = " ".join([s.path, s.text, s.heading or "", repr(s.to_json())]).lower()
        for secret in PLANTED_SECRETS:
            assert secret.lower() not in blob
        for fragment in SECRET_FRAGMENTS:
            assert fragment not in blob


def test_secret_question_still_finds_the_redacted_config(engine):
    sources = engine.retrieve("SLACK_BOT_TOKEN in config.example")
    assert sources[0].path == "config.example"
    assert "SLACK_BOT_TOKEN=[REDACTED]" in sources[0].text


def test_edited_secret_is_redacted_on_incremental_update(engine, repo):
    new_secret = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"
    (repo / "deploy.yml").write_text(f"steps:\n  - run: publish\n    github_token: {new_secret}\n", encoding="utf-8")
    stats = engine.update()
    assert stats.added == 1 and stats.redactions >= 1
    with engine.index.read() as conn:
        rows = conn.execute("SELECT text FROM chunks UNION ALL SELECT body FROM chunks_fts").fetchall()
    assert not any(new_secret.lower() in r[0].lower() for r in rows)
    assert not any(new_secret[4:].lower() in r[0].lower() for r in rows)


def test_index_is_readable_by_plain_sqlite(engine):
    conn = sqlite3.connect(engine.index.path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 12
    finally:
        conn.close()


def test_an_index_kept_inside_the_repository_never_indexes_its_own_files(tmp_path):
    """``RAG_INDEX_PATH=index.sqlite`` in the repository (or ``--index src/i.sqlite``): the reindex
    lock's ``index.sqlite.lock.json`` (pid, trigger, user, start time) was indexed as a config file,
    found by questions, and re-read on every update since it changes with each run."""
    from rag.ingest.reindexer import Reindexer

    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.js").write_text("export function startServer() { return 'listening'; }\n")
    index = root / "src" / "i.sqlite"
    reindexer = Reindexer(Engine.open(root, index_path=index))
    try:
        for _ in range(2):
            record = reindexer.run(trigger="cli")
            assert record.ok, record.error
        engine = reindexer.engine
        assert engine.indexed_paths() == ["src/app.js"]
        assert record.stats.added == record.stats.changed == 0  # nothing of the index's own is re-read
        assert all("lock" not in s.path for s in engine.retrieve("pid trigger started_at user"))
    finally:
        reindexer.engine.close()


def test_a_damaged_stored_structure_is_skipped_not_fatal(tmp_path, caplog):
    """A stored structure whose records are not objects raised AttributeError out of retrieval."""
    import json
    import logging

    from repo_helpers import indexed_engine, result_paths

    files = {"src/db.js": "function connectPool() { return 1; }\nmodule.exports = { connectPool };\n",
             "src/app.js": "const { connectPool } = require('./db');\nfunction startApp() { return connectPool(); }\n"}
    with indexed_engine(tmp_path, files) as engine:
        with sqlite3.connect(engine.index.path) as conn:
            doc = json.loads(conn.execute("SELECT structure FROM files WHERE path='src/app.js'").fetchone()[0])
            doc["definitions"] = [3]
            conn.execute("UPDATE files SET structure=? WHERE path='src/app.js'", (json.dumps(doc),))
        with caplog.at_level(logging.WARNING, logger="rag.search.retriever"):
            found = engine.retrieve("where is connectPool defined?")
        assert "src/db.js" in result_paths(found)
        assert any("src/app.js" in r.getMessage() and "malformed" in r.getMessage() for r in caplog.records)


def test_an_index_of_another_repository_is_refused_unless_rebuilt(tmp_path):
    """Two repositories configured with one index_path (or ``--index`` naming another repository's index)
    replaced each other's files at every update, and documents added for one answered for the other."""
    from rag.errors import IndexOfAnotherRepositoryError

    first, second = tmp_path / "first", tmp_path / "second"
    for root, word in ((first, "aardvark"), (second, "zebrafish")):
        root.mkdir()
        (root / "notes.md").write_text(f"# Notes\n\nThe {word} lives here.\n", encoding="utf-8")
    shared = tmp_path / "shared.sqlite"
    with contextlib.closing(Engine.open(first, index_path=shared)) as engine:
        engine.update()
    with contextlib.closing(Engine.open(second, index_path=shared)) as engine:
        with pytest.raises(IndexOfAnotherRepositoryError, match="is the index of .*first, not of .*second.*--full"):
            engine.update()
        assert paths_of(engine.retrieve("aardvark")) == ["notes.md"]  # untouched
        engine.update(full=True)  # asked for: rebuilt for this repository
        assert engine.retrieve("aardvark") == [] and paths_of(engine.retrieve("zebrafish")) == ["notes.md"]
        engine.update()
    # a repository that moved takes its index along
    moved = tmp_path / "moved"
    second.rename(moved)
    with contextlib.closing(Engine.open(moved, index_path=shared)) as engine:
        assert engine.update().added == 0
