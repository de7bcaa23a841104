"""rag.ingest.reindexer: the shared reindex lock, run records, failures, git pull, concurrency.

Everything runs the real engine on temporary repositories; the only fakes are
Engine subclasses that block or fail inside the real update (a ``_structure`` hook
standing in for the ingest step's structure parser) and child processes that hold the lock or die mid-write.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import filelock
import pytest
from repo_helpers import result_paths, write_repo

from rag.engine import Engine
from rag.ingest.pool import PoolPolicy
from rag.ingest.prepare import StructureParser
from rag.parse.records import FileStructure
from rag.errors import RagError, UserError
from rag.ingest.reindexer import (
    IndexBuildingError,
    Reindexer,
    ReindexBusyError,
    RunRecord,
    current_commit,
    error_line,
    pull_ff_only,
)

BACKGROUND = {f"docs/topic{i}.md": f"# Topic {i}\n\nOrdinary notes about routing, servers and caching, part {i}.\n"
              for i in range(6)}
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


write = write_repo


paths = result_paths


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    return write(tmp_path / "repo", {**BACKGROUND, "notes.md": "# Notes\n\nThe oldword describes the first release.\n"})


@pytest.fixture
def reindexer(repo, tmp_path):
    r = Reindexer.open(repo, index_path=tmp_path / "idx" / "index.sqlite")
    yield r
    r.engine.close()


class _HookParser(StructureParser):
    """The ingest step's structure parser, replaced by a hook ``(path, file_type, text) → structure``."""

    def __init__(self, hook) -> None:
        super().__init__()
        self.hook = hook

    def parse(self, path, file_type, text):
        return self.hook(path, file_type, text)


class HookEngine(Engine):
    """An engine whose update calls its ``_structure`` hook instead of parsing each file (in this
    process: a worker pool would build its own parser, so these engines prepare files here)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("pool_policy", PoolPolicy(workers=1))
        super().__init__(*args, **kwargs)
        self._parser = _HookParser(self._structure)


class GateEngine(HookEngine):
    """Blocks inside the real update at its ``block_at``-th structure call until ``gate`` is set."""

    block_at = 1

    def _structure(self, path, file_type, text):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == self.block_at:
            self.entered.set()
            assert self.gate.wait(30), "test gate never opened"
        return None


def gate_reindexer(repo: Path, index: Path, *, block_at: int = 1) -> Reindexer:
    engine = GateEngine.open(repo, index_path=index)
    engine.block_at, engine.gate, engine.entered = block_at, threading.Event(), threading.Event()
    return Reindexer(engine)


# -- records and state ------------------------------------------------------------------------


def test_run_record_json_is_flat_and_keeps_its_key_order(reindexer, repo):
    record = reindexer.run(trigger="cli")
    data = record.to_json()
    assert list(data) == ["id", "trigger", "started_at", "user", "full", "duration_s", "added", "changed", "removed",
                          "skipped", "redactions", "files", "chunks", "generation", "ok", "error", "git", "commit",
                          "embeddings", "problems", "sources"]
    stats = record.stats
    assert (data["added"], data["files"], data["chunks"], data["generation"]) == (
        stats.added, stats.files, stats.chunks, stats.generation)
    data["skipped"]["x"] = 1
    assert "x" not in record.stats.skipped  # a copy
    running = RunRecord(id="r", trigger="cli", started_at=1.0)
    assert running.to_json()["added"] == 0 and running.to_json()["skipped"] == {} and running.to_json()["generation"] is None


def test_run_records_what_changed_and_keeps_history(reindexer, repo):
    assert not reindexer.ready and reindexer.state.generation == 0
    first = reindexer.run(trigger="cli")
    assert first.ok and first.trigger == "cli" and first.stats.added == 7 and first.generation == 1
    (repo / "notes.md").write_text("# Notes\n\nThe newword describes the second release.\n", encoding="utf-8")
    token = "xoxb-123456789012-123456789012-abcdefghijABCDEFGHIJabcd"
    (repo / "added.md").write_text(f"# Added\n\nA brand new page with {token} in it.\n", encoding="utf-8")
    (repo / "docs/topic0.md").unlink()
    second = reindexer.run(trigger="admin", user="U123", full=False)
    assert (second.stats.added, second.stats.changed, second.stats.removed) == (1, 1, 1)
    assert second.ok and second.user == "U123" and second.generation == 2 and second.stats.files == 7
    assert second.duration_s is not None and second.started_at >= first.started_at and second.commit is None
    assert second.stats.redactions == 1 and second.stats.skipped == {} and token not in json.dumps(second.to_json())
    assert [r.id for r in reindexer.history] == [first.id, second.id]
    json.dumps(second.to_json())
    state = reindexer.state
    assert state.ready and not state.running and state.generation == 2 and state.runs == 2
    assert state.last_success_at >= second.started_at and state.last_error is None
    assert 0 <= state.age_s < 60 and state.done is None
    json.dumps(state.to_json())
    assert paths(reindexer.engine.retrieve("newword")) == ["notes.md"]


def test_a_file_nested_2000_deep_is_indexed_beside_the_others_and_named_as_a_problem(reindexer, repo):
    """Generated code nesting 2,000 functions failed the whole update with RecursionError."""
    nested = "".join(f"function level{i}() {{\n" for i in range(2000)) + "return deepestword();\n" + "}\n" * 2000
    write(repo, {"gen/nested.js": nested,
                 "src/ok.js": "function okHelper(a) {\n  // the plainword helper\n  return a + 1;\n}\n"})
    record = reindexer.run(trigger="cli")
    assert record.ok, record.error
    assert record.stats.added == 9 and record.stats.skipped == {} and record.stats.files == 9
    assert record.to_json()["problems"] == [{"path": "gen/nested.js", "reason": "deep_nesting"}]
    assert paths(reindexer.engine.retrieve("plainword")) == ["src/ok.js"]
    deepest = reindexer.engine.retrieve("deepestword")
    assert [(s.path, s.start <= 2001 <= s.end) for s in deepest][:1] == [("gen/nested.js", True)]


def test_history_keeps_the_last_n_runs(repo, tmp_path):
    r = Reindexer(Engine.open(repo, index_path=tmp_path / "i.sqlite"), history=3)
    ids = [r.run(trigger="cli").id for _ in range(5)]
    assert [x.id for x in r.history] == ids[-3:]
    assert r.state.runs == 5
    r.engine.close()


def test_unknown_trigger_is_a_clear_error(reindexer):
    with pytest.raises(ValueError, match="unknown reindex trigger 'cron'"):
        reindexer.run(trigger="cron")
    assert reindexer.run(trigger="startup").ok  # the lock was not left held


def test_require_ready_reports_build_progress(repo, tmp_path):
    write(repo, {f"more/file{i:02}.md": f"# File {i}\n\ncontent {i}\n" for i in range(30)})  # 37 files
    r = gate_reindexer(repo, tmp_path / "i.sqlite", block_at=26)
    with pytest.raises(IndexBuildingError, match="not built yet; it will be built"):
        r.require_ready()
    worker = threading.Thread(target=r.run, kwargs={"trigger": "startup"})
    worker.start()
    try:
        assert r.engine.entered.wait(30)
        state = r.state
        assert state.running and state.trigger == "startup" and (state.done, state.total) == (25, 37)
        with pytest.raises(IndexBuildingError) as info:
            r.require_ready()
        assert str(info.value) == "The index is being built: 25/37 files so far. Try again in a moment."
        assert isinstance(info.value, UserError)
    finally:
        r.engine.gate.set()
        worker.join(30)
    r.require_ready()
    assert r.ready and r.history[-1].ok
    r.engine.close()


# -- the lock -----------------------------------------------------------------------------------


def test_second_update_in_process_is_refused_with_who_and_since_when(repo, tmp_path):
    r = gate_reindexer(repo, tmp_path / "i.sqlite")
    worker = threading.Thread(target=r.run, kwargs={"trigger": "admin", "user": "U42"})
    worker.start()
    try:
        assert r.engine.entered.wait(30)
        with pytest.raises(ReindexBusyError) as info:
            r.run(trigger="schedule")
        busy = info.value
        assert isinstance(busy, RagError)
        assert busy.trigger == "admin" and busy.user == "U42" and busy.pid == os.getpid()
        assert time.time() - busy.started_at < 30
        assert str(busy).startswith("An index update is already running (trigger: admin; since ")
        assert r.state.busy_refusals == 1 and r.running
    finally:
        r.engine.gate.set()
        worker.join(30)
    assert not r.running and r.run(trigger="schedule").ok
    r.engine.close()


def test_another_file_lock_holder_blocks_run(reindexer):
    holder = filelock.FileLock(reindexer.lock_path)
    holder.acquire()
    try:
        with pytest.raises(ReindexBusyError, match="already running"):
            reindexer.run(trigger="schedule")
    finally:
        holder.release()
    assert reindexer.run(trigger="schedule").ok


CHILD_HOLDS_LOCK = """
import sys, time, pathlib
from rag.engine import Engine
from rag.ingest.pool import PoolPolicy
from rag.ingest.prepare import StructureParser
from rag.parse.records import FileStructure
from rag.ingest.reindexer import Reindexer

class Slow(StructureParser):
    def parse(self, path, file_type, text):
        pathlib.Path(sys.argv[3]).touch()
        time.sleep(120)
        return None

engine = Engine.open(sys.argv[1], index_path=sys.argv[2], pool_policy=PoolPolicy(workers=1))
engine._parser = Slow()
Reindexer(engine).run(trigger="cli", user="U_CHILD")
"""


def test_update_in_another_process_is_reported_and_its_death_frees_the_lock(repo, tmp_path):
    index = tmp_path / "i.sqlite"
    marker = tmp_path / "child-started"
    child = subprocess.Popen([sys.executable, "-c", CHILD_HOLDS_LOCK, str(repo), str(index), str(marker)])
    r = Reindexer.open(repo, index_path=index)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline, "child never started its update"
            time.sleep(0.02)
        with pytest.raises(ReindexBusyError) as info:
            r.run(trigger="admin")
        assert (info.value.trigger, info.value.user, info.value.pid) == ("cli", "U_CHILD", child.pid)
        assert "trigger: cli" in str(info.value)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    record = r.run(trigger="admin")  # the kernel dropped the dead process's flock
    assert record.ok and record.generation == 1
    r.engine.close()


# -- failures -----------------------------------------------------------------------------------


class _UnstorableStructure(FileStructure):
    """A structure whose JSON cannot be serialised."""

    def to_json(self):
        return {"unserialisable": object()}


class PoisonEngine(HookEngine):
    """A file containing POISON yields a structure that cannot be stored: ``Index.apply``
    raises inside its write transaction, after the other files' rows were written."""

    def _structure(self, path, file_type, text):
        if "POISON" in text:
            return _UnstorableStructure(path=path, language="javascript")
        if "EXPLODE" in text:
            raise RuntimeError("parser crashed near xoxb-123456789012-123456789012-abcdefghijABCDEFGHIJabcd\nline 2")
        return None


def test_exception_inside_the_transaction_keeps_the_previous_generation(repo, tmp_path):
    r = Reindexer(PoisonEngine.open(repo, index_path=tmp_path / "i.sqlite"))
    assert r.run(trigger="startup").ok
    before = r.engine.index.counts()
    write(repo, {"aa.md": "# Early\n\nThe freshword is new.\n",
                 "notes.md": "# Notes\n\nThe newword replaced it.\n",
                 "zz.md": "# Late\n\nPOISON here\n"})
    failed = r.run(trigger="schedule")
    assert failed.ok is False and failed.error.startswith("TypeError: ") and failed.generation == 1
    assert r.engine.generation == 1 and r.engine.index.counts() == before
    assert paths(r.engine.retrieve("oldword")) == ["notes.md"]
    assert r.engine.retrieve("freshword") == [] and r.engine.retrieve("newword") == []
    assert r.state.last_error == failed.error and r.ready
    (repo / "zz.md").write_text("# Late\n\nfixed now\n", encoding="utf-8")
    retried = r.run(trigger="schedule")
    assert retried.ok and retried.generation == 2 and r.state.last_error is None
    assert paths(r.engine.retrieve("freshword")) == ["aa.md"]
    r.engine.close()


def test_failed_update_error_is_one_redacted_line(repo, tmp_path):
    r = Reindexer(PoisonEngine.open(repo, index_path=tmp_path / "i.sqlite"))
    write(repo, {"boom.md": "EXPLODE\n"})
    record = r.run(trigger="startup")
    assert record.ok is False and record.generation == 0 and not r.ready
    assert record.error.startswith("RuntimeError: parser crashed near ") and "\n" not in record.error
    assert "xoxb-123456789012" not in record.error and "[REDACTED]" in record.error
    with pytest.raises(IndexBuildingError, match="the last update failed"):
        r.require_ready()
    r.engine.close()


def test_error_line_hides_url_credentials():
    line = error_line(OSError("fatal: unable to access 'https://bob:hunter2hunter2@example.com/x.git/'\nmore"))
    assert line == "OSError: fatal: unable to access 'https://***@example.com/x.git/'"


#: Enough files that the write transaction spills well over 1 MB of pages before committing.
BIG_FILES = 400

CHILD_UPDATE = """
import sys
from rag.ingest.reindexer import Reindexer
print(Reindexer.open(sys.argv[1], index_path=sys.argv[2]).run(trigger="cli").ok, flush=True)
"""


def big_files(count: int) -> dict[str, str]:
    line = "export function handler{i}_{j}(request, response) {{ return compute{j}(request.body.value{i}, {j}); }}\n"
    return {f"big/mod{i:04}.js": "".join(line.format(i=i, j=j) for j in range(45)) for i in range(count)}


def test_killed_update_process_leaves_the_old_generation(repo, tmp_path):
    index = tmp_path / "i.sqlite"
    r = Reindexer.open(repo, index_path=index)
    assert r.run(trigger="startup").ok
    old_counts = r.engine.index.counts()
    write(repo, {**big_files(BIG_FILES), "notes.md": "# Notes\n\nThe newword replaced it.\n"})
    wal = Path(str(index) + "-wal")
    baseline = wal.stat().st_size if wal.exists() else 0
    child = subprocess.Popen([sys.executable, "-c", CHILD_UPDATE, str(repo), str(index)],
                             stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        if wal.exists() and wal.stat().st_size > baseline + 1_000_000:  # uncommitted pages spilled
            break
        time.sleep(0.002)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert child.returncode == -signal.SIGKILL, "the update finished before it could be killed mid-write"
    assert r.engine.generation == 1 and r.engine.index.counts() == old_counts
    assert paths(r.engine.retrieve("oldword")) == ["notes.md"]
    assert r.engine.retrieve("newword") == [] and r.engine.retrieve("handler7_3 compute3") == []
    record = r.run(trigger="schedule")
    assert record.ok and record.generation == 2 and record.stats.added == BIG_FILES and record.stats.changed == 1
    assert paths(r.engine.retrieve("newword")) == ["notes.md"]
    r.engine.close()


# -- git ----------------------------------------------------------------------------------------


def test_git_pull_fast_forwards_and_the_update_follows_the_checkout(tmp_path):
    origin, seed, clone = tmp_path / "origin.git", tmp_path / "seed", tmp_path / "clone"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    write(seed, {"README.md": "# Project\n\nFirst version.\n"})
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "one")
    git(seed, "remote", "add", "origin", str(origin))
    git(seed, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    r = Reindexer.open(clone, index_path=tmp_path / "i.sqlite")
    first = r.run(trigger="startup", git_pull=True)
    assert first.ok and first.git["ok"] and first.commit == git(seed, "rev-parse", "HEAD")
    write(seed, {"pulled.md": "# Pulled\n\nThe pulledmarker arrived upstream.\n"})
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "two")
    git(seed, "push", "-q", "origin", "main")
    head = git(seed, "rev-parse", "HEAD")
    record = r.run(trigger="schedule", git_pull=True)
    assert record.ok and record.stats.added == 1
    assert record.git["ok"] and record.git["before"] == first.commit and record.git["after"] == head
    assert record.commit == head == current_commit(clone)
    assert paths(r.engine.retrieve("pulledmarker")) == ["pulled.md"]
    r.engine.close()


def test_failed_git_pull_is_recorded_and_the_update_still_runs(tmp_path):
    repo = write(tmp_path / "local", {"README.md": "# Local\n\nCommitted text.\n"})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    write(repo, {"wip.md": "# Work\n\nThe localmarker is not pushed anywhere.\n"})
    r = Reindexer.open(repo, index_path=tmp_path / "i.sqlite")
    record = r.run(trigger="schedule", git_pull=True)
    assert record.ok and record.stats.added == 2 and record.commit == git(repo, "rev-parse", "HEAD")
    assert record.git["ok"] is False and record.git["returncode"] not in (0, None) and record.git["message"]
    assert paths(r.engine.retrieve("localmarker")) == ["wip.md"]
    r.engine.close()


def test_outside_git_there_is_no_commit_and_pull_fails_cleanly(tmp_path):
    assert current_commit(tmp_path) is None
    result = pull_ff_only(tmp_path, timeout_s=10)
    assert result.ok is False and "not a git repository" in result.message and result.before is None


# -- async --------------------------------------------------------------------------------------


async def test_run_async_refuses_at_once_and_survives_cancellation(repo, tmp_path):
    r = gate_reindexer(repo, tmp_path / "i.sqlite")
    started: list[bool] = []

    async def on_start(record):
        started.append(r.running and record.trigger == "admin")

    task = asyncio.create_task(r.run_async(trigger="admin", user="U1", on_start=on_start))
    while not r.engine.entered.is_set():
        await asyncio.sleep(0.01)
    assert started == [True]
    with pytest.raises(ReindexBusyError):
        await r.run_async(trigger="schedule")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert r.running  # the update goes on in its thread and keeps the lock
    with pytest.raises(ReindexBusyError):
        r.run(trigger="schedule")
    r.engine.gate.set()
    for _ in range(500):
        if not r.running:
            break
        await asyncio.sleep(0.01)
    assert not r.running and r.history[-1].ok and r.history[-1].user == "U1"
    assert (await r.run_async(trigger="schedule")).ok
    r.engine.close()


def marker_files(holder: str) -> dict[str, str]:
    text = "# {name}\n\nThis page {what} in the {name} section of the guide.\n"
    return {
        "a.md": text.format(name="alpha", what="holds the zebramarker" if holder == "a" else "holds nothing"),
        "b.md": text.format(name="beta", what="holds the zebramarker" if holder == "b" else "holds nothing"),
    }


async def test_queries_during_back_to_back_updates_see_exactly_one_generation(tmp_path):
    repo = write(tmp_path / "repo", {**BACKGROUND, **marker_files("a")})
    r = Reindexer.open(repo, index_path=tmp_path / "i.sqlite")
    assert r.run(trigger="startup").ok
    stop = asyncio.Event()
    generations: list[int] = []

    async def writer() -> None:
        holder = "a"
        while not stop.is_set():
            holder = "b" if holder == "a" else "a"
            write(repo, marker_files(holder))
            record = await r.run_async(trigger="schedule")
            assert record.ok and record.stats.changed == 2
            generations.append(record.generation)

    async def reader() -> list[list[str]]:
        seen = []
        for _ in range(50):
            seen.append(paths(await asyncio.to_thread(r.engine.retrieve, "where is the zebramarker?")))
            await asyncio.sleep(0.002)
        return seen

    writing = asyncio.create_task(writer())
    while not generations:
        await asyncio.sleep(0.005)
    results = await asyncio.gather(*(reader() for _ in range(4)))
    stop.set()
    await writing
    flat = [hit for seen in results for hit in seen]
    assert len(flat) == 200
    assert all(hit in (["a.md"], ["b.md"]) for hit in flat), [h for h in flat if len(h) != 1][:5]
    assert {tuple(h) for h in flat} == {("a.md",), ("b.md",)}  # reads really interleaved with swaps
    assert len(generations) >= 3 and generations == sorted(generations)
    r.engine.close()


# -- deadlines and shutdown (issue 14) -----------------------------------------------------------

class _SlowParser:
    """Parses like the real one, 0.2 s per file: an update that takes 8 s here."""

    def __init__(self, real) -> None:
        self.real = real

    def parse(self, path, file_type, text):
        time.sleep(0.2)
        return self.real.parse(path, file_type, text)


def _slow_engine(tmp_path):
    from rag.engine import Engine

    repo = tmp_path / "slow"
    (repo / "src").mkdir(parents=True)
    for i in range(40):
        (repo / "src" / f"m{i}.js").write_text(f"export const v{i} = {i};\n")
    engine = Engine.open(repo, index_path=tmp_path / "slow-idx" / "index.sqlite", pool_policy=PoolPolicy(workers=1))
    engine._parser = _SlowParser(engine._parser)  # in this process (the pool's case: test_pool.py)
    return engine


def test_an_update_past_its_deadline_stops_and_is_recorded_as_timed_out(tmp_path):
    engine = _slow_engine(tmp_path)
    try:
        reindexer = Reindexer(engine, timeout_s=0.5)
        started = time.monotonic()
        record = reindexer.run(trigger="cli")
        assert time.monotonic() - started < 3
        assert record.ok is False and "timed out after 0.5 s" in record.error
        assert engine.generation == 0  # nothing was written
        assert not reindexer.state.running  # the lock is free: the next run is not refused as busy
        engine._parser = engine._parser.real
        assert Reindexer(engine).run(trigger="cli").ok
    finally:
        engine.close()


def test_shutdown_stops_a_running_update_at_its_next_file(tmp_path):
    engine = _slow_engine(tmp_path)
    try:
        reindexer = Reindexer(engine, timeout_s=None)
        threading.Timer(0.3, reindexer.request_stop).start()
        started = time.monotonic()
        record = reindexer.run(trigger="cli")
        assert time.monotonic() - started < 3
        assert record.ok is False and "stopped for shutdown" in record.error
    finally:
        engine.close()
