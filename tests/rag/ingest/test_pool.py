"""rag.ingest.pool: preparing files in worker processes writes exactly what the in-process path writes.

Real engines on a real tree (this repository's fixtures and engine sources, with a secret file);
the only stand-ins are the crash and the stuck file, made by wrapping ``prepare_file`` in the
parent before the workers fork (so the workers run the wrapper): a worker that kills itself,
one that hangs, one whose file raises.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from process_helpers import running, survivors

import rag.ingest.pool as pool
from rag.engine import Engine
from rag.errors import IndexWorkerError, UpdateCancelledError
from rag.ingest.pool import MAX_AUTO_WORKERS, PoolPolicy, usable_cpus
from rag.ingest.prepare import StructureParser
from rag.ingest.reindexer import Reindexer

REPO_ROOT = Path(__file__).resolve().parents[3]
IN_PROCESS = PoolPolicy(workers=1)
FORKED = PoolPolicy(workers=2, min_files=1, start_method="fork")


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of real files: the test fixtures (JS, TS, Markdown, JSON), the engine's Python sources,
    the README, and a ``.env`` whose value appears in a source file (redacted in both paths)."""
    root = tmp_path / "tree"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures", root / "fixtures", ignore=shutil.ignore_patterns(".rag"))
    shutil.copytree(REPO_ROOT / "rag", root / "rag", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "README.md", root / "README.md")
    (root / ".env").write_text("SERVICE_TOKEN=zq8-literal-secret-value\n", encoding="utf-8")
    (root / "fixtures" / "uses-secret.js").write_text("const token = 'zq8-literal-secret-value';\n", encoding="utf-8")
    return root


def dump(index_path: Path) -> dict[str, list[tuple]]:
    """Every row the index holds for content (files, chunks with ids, FTS columns, images, meta); not when each
    file's walk began (``seen_ns``) nor how often stats were refreshed (``stat_version``): two builds walk at
    two times, and a file may settle past the racy window between them."""
    conn = sqlite3.connect(index_path)
    try:
        return {
            "files": conn.execute("SELECT path, size, mtime_ns, hash, file_type, kind, lines, redactions, ctime_ns, "
                                  "ino, structure FROM files ORDER BY path").fetchall(),
            "chunks": conn.execute("SELECT * FROM chunks ORDER BY id").fetchall(),
            "fts": conn.execute("SELECT rowid, body, path, heading, symbols FROM chunks_fts ORDER BY rowid").fetchall(),
            "images": conn.execute("SELECT * FROM images ORDER BY path").fetchall(),
            "meta": conn.execute("SELECT key, value FROM meta WHERE key NOT IN ('updated_at', 'stat_version') "
                                 "ORDER BY key").fetchall(),
        }
    finally:
        conn.close()


def build(tree: Path, index: Path, policy: PoolPolicy, *, full: bool = True):
    engine = Engine.open(tree, index_path=index, pool_policy=policy)
    try:
        return engine.update(full=full)
    finally:
        engine.close()


def no_children_left(timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while multiprocessing.active_children():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("policy", [FORKED, PoolPolicy(workers=3, min_files=1, start_method="forkserver")],
                         ids=["fork", "forkserver"])
def test_pool_writes_exactly_what_the_in_process_path_writes(tree, tmp_path, policy):
    here = build(tree, tmp_path / "here.sqlite", IN_PROCESS)
    pooled = build(tree, tmp_path / "pool.sqlite", policy)
    assert here.files > 80 and here.chunks > 300 and here.redactions >= 1
    assert (pooled.files, pooled.chunks, pooled.added, pooled.redactions, pooled.skipped) == (
        here.files, here.chunks, here.added, here.redactions, here.skipped)
    expected, got = dump(tmp_path / "here.sqlite"), dump(tmp_path / "pool.sqlite")
    assert any(row[-1] for row in expected["files"])  # structures were parsed (JS/TS files)
    assert not any("zq8-literal-secret-value" in row[7] for row in got["chunks"])
    for table in expected:
        assert got[table] == expected[table], table
    assert no_children_left()


def test_an_incremental_update_through_the_pool_matches_too(tree, tmp_path):
    for index, policy in (("here.sqlite", IN_PROCESS), ("pool.sqlite", FORKED)):
        build(tree, tmp_path / index, IN_PROCESS)
    for n, path in enumerate(sorted((tree / "rag").rglob("*.py"))[:40]):
        path.write_text(path.read_text(encoding="utf-8") + f"\n# edited {n}\n", encoding="utf-8")
    (tree / "fixtures" / "code-repo" / "README.md").unlink()
    here = build(tree, tmp_path / "here.sqlite", IN_PROCESS, full=False)
    pooled = build(tree, tmp_path / "pool.sqlite", FORKED, full=False)
    assert (here.changed, here.removed) == (pooled.changed, pooled.removed) == (40, 1)
    assert dump(tmp_path / "pool.sqlite") == dump(tmp_path / "here.sqlite")


def test_a_small_update_stays_in_this_process(tree, tmp_path):
    calls: list[str] = []

    class Counting(StructureParser):
        def parse(self, path, file_type, text):
            calls.append(path)
            return super().parse(path, file_type, text)

    engine = Engine.open(tree, index_path=tmp_path / "i.sqlite", pool_policy=PoolPolicy(workers=2))
    engine._parser = Counting()
    try:
        engine.update()
        assert calls == []  # the full build ran in workers, which have their own parsers
        target = tree / "fixtures" / "code-repo" / "src" / "server.js"
        if not target.exists():
            target = next((tree / "fixtures").rglob("*.js"))
        target.write_text(target.read_text(encoding="utf-8") + "\n// one edit\n", encoding="utf-8")
        stats = engine.update()
        assert stats.changed == 1
        assert calls == [target.relative_to(tree).as_posix()]  # prepared here: no pool for one file
    finally:
        engine.close()


def test_a_worker_that_dies_is_a_clear_error_and_nothing_is_written(tree, tmp_path, monkeypatch):
    index = tmp_path / "i.sqlite"
    build(tree, index, IN_PROCESS)
    before = dump(index)
    real = pool.prepare_file

    def dies_on_one_file(wf, **kwargs):
        if wf.path == "rag/engine.py":
            os._exit(9)  # as if killed mid-file (the OOM killer, a native crash)
        return real(wf, **kwargs)

    monkeypatch.setattr(pool, "prepare_file", dies_on_one_file)
    engine = Engine.open(tree, index_path=index, pool_policy=FORKED)
    try:
        with pytest.raises(IndexWorkerError, match="worker process died") as info:
            engine.update(full=True)
        assert "nothing was written" in str(info.value)
        assert engine.generation == 1
    finally:
        engine.close()
    assert dump(index) == before
    assert no_children_left()


def test_an_error_in_a_worker_is_raised_as_in_process(tree, tmp_path, monkeypatch):
    real = pool.prepare_file

    def fails_on_one_file(wf, **kwargs):
        if wf.path == "README.md":
            raise RuntimeError("parser exploded on README.md")
        return real(wf, **kwargs)

    monkeypatch.setattr(pool, "prepare_file", fails_on_one_file)
    engine = Engine.open(tree, index_path=tmp_path / "i.sqlite", pool_policy=FORKED)
    try:
        with pytest.raises(RuntimeError, match="parser exploded on README.md"):
            engine.update()
        assert engine.generation == 0
    finally:
        engine.close()
    assert no_children_left()


def test_the_reindexer_deadline_stops_a_pool_whose_worker_is_stuck(tree, tmp_path, monkeypatch):
    real = pool.prepare_file

    def hangs_on_one_file(wf, **kwargs):
        if wf.path == "rag/engine.py":
            time.sleep(120)
        return real(wf, **kwargs)

    monkeypatch.setattr(pool, "prepare_file", hangs_on_one_file)
    engine = Engine.open(tree, index_path=tmp_path / "i.sqlite", pool_policy=FORKED)
    try:
        reindexer = Reindexer(engine, timeout_s=1.0)
        started = time.monotonic()
        record = reindexer.run(trigger="cli")
        assert time.monotonic() - started < 10
        assert record.ok is False and "timed out after 1 s" in record.error
        assert engine.generation == 0 and not reindexer.state.running
        assert no_children_left()  # the stuck worker was terminated, not waited for
        monkeypatch.setattr(pool, "prepare_file", real)
        assert Reindexer(engine).run(trigger="cli").ok
    finally:
        engine.close()


def test_should_stop_cancels_between_results(tree, tmp_path):
    progressed: list[int] = []
    engine = Engine.open(tree, index_path=tmp_path / "i.sqlite", pool_policy=FORKED)
    try:
        with pytest.raises(UpdateCancelledError, match=r"stopped after \d+ of \d+ files"):
            engine.update(progress=lambda done, total: progressed.append(done),
                          should_stop=lambda: bool(progressed))
        assert engine.generation == 0
    finally:
        engine.close()
    assert no_children_left()


def test_policy_sizes_and_checks():
    assert usable_cpus() >= 1
    assert PoolPolicy(workers=1).workers_for(10_000) == 1
    assert PoolPolicy(workers=4).workers_for(31) == 1  # below MIN_POOL_FILES: no pool
    assert PoolPolicy(workers=4).workers_for(1000) == 4
    assert PoolPolicy(workers=4, min_files=1).workers_for(2) == 2  # never more workers than files
    assert PoolPolicy().workers_for(1000) == min(usable_cpus(), MAX_AUTO_WORKERS)
    with pytest.raises(ValueError, match="at least 1"):
        PoolPolicy(workers=0)
    with pytest.raises(ValueError, match="unknown start method"):
        PoolPolicy(start_method="teleport")
    assert PoolPolicy(start_method="fork").context().get_start_method() == "fork"


def test_a_worker_terminated_mid_result_does_not_leave_the_pool_manager_blocked():
    """A worker killed while sending a result leaves half a message in the result pipe. The pool's
    manager thread then waited for the rest forever, and interpreter exit (which joins it) hung:
    the test run that printed its summary and never exited."""
    import struct
    from concurrent.futures import ProcessPoolExecutor

    executor = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    assert executor.submit(abs, -1).result(timeout=30) == 1  # the worker and the manager thread run
    manager, results = executor._executor_manager_thread, executor._result_queue
    try:
        # what a worker terminated mid-send leaves: a header announcing 1000 bytes, then 10 of them
        os.write(results._writer.fileno(), struct.pack("!i", 1000) + b"0123456789")
        time.sleep(0.5)  # the manager thread is now inside recv(), waiting for the other 990
        pool._shutdown(executor, graceful=False)
        manager.join(10)
        assert not manager.is_alive(), "the pool's manager thread is still blocked on the half message"
    finally:
        if not results._writer.closed:
            results._writer.close()  # so a failure here does not also hang this test process


_HOLDS_A_POOL = """
import multiprocessing, sys, time
from pathlib import Path
from rag.ingest.pool import PoolPolicy, prepare_files
from rag.ingest.prepare import StructureParser
from rag.ingest.walk import walk
from rag.secrets import LiteralRedactor

files = walk(Path(sys.argv[1])).files
results = prepare_files(files, known={}, literals=LiteralRedactor(set()), parser=StructureParser(),
                        policy=PoolPolicy(workers=2, min_files=1, start_method=sys.argv[2]))
next(results)  # the pool is up: its workers wait for more work, as during a long build
print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_exit_when_the_indexing_process_is_killed(tree, method):
    """``kill -9`` of ``slackzilla index`` (or of the bot's update child) mid-build: its workers used to
    live on forever, reparented to init and blocked on a queue only they still held open."""
    import signal
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", _HOLDS_A_POOL, str(tree), method], cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in holder.stdout.readline().split()]
        assert workers and all(running(pid) for pid in workers)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    left = survivors(workers)
    assert not left, f"workers {left} outlived the killed indexing process"
