"""bot.isolated_update: the reindexer's update in a child process, on a real repository and index."""
from __future__ import annotations

import multiprocessing
import os

import pytest
from process_helpers import survivors
from repo_helpers import result_paths, write_repo

from bot.isolated_update import ProcessUpdate
from bot.scheduler import scheduled_reindex
from rag.errors import UpdateCancelledError
from rag.ingest.reindexer import Reindexer
from rag.engine import Engine

FILES = {
    "src/db.js": "const host = process.env.DB_HOST;\nfunction connectPool() { return host; }\nmodule.exports = { connectPool };\n",
    **{f"src/m{i}.js": f"const {{ connectPool }} = require('./db');\nfunction part{i}() {{ return connectPool(); }}\n"
       for i in range(60)},
    ".env": "API_TOKEN=zq-secret-value-123\n",
}


@pytest.fixture
def engine(tmp_path):
    engine = Engine.open(write_repo(tmp_path / "repo", FILES), index_path=tmp_path / "index.sqlite")
    yield engine
    engine.close()


def test_the_update_runs_in_a_child_process_and_the_bot_reads_its_generation(engine):
    seen: list[tuple[int, int, list]] = []

    def progress(done: int, total: int) -> None:  # called in this process while the child works
        seen.append((done, total, [p.pid for p in multiprocessing.active_children()]))

    update = ProcessUpdate(engine)
    try:
        stats = update(full=True, progress=progress)
    finally:
        update.close()
    assert stats.files == 61 and stats.added == 61 and stats.generation == engine.generation == 1
    assert seen and seen[-1][:2] == (61, 61)
    assert any(pids and os.getpid() not in pids for _d, _t, pids in seen)  # a child was running
    assert "src/db.js" in result_paths(engine.retrieve("where is connectPool defined?"))
    # the secret-file values the child found are the bot's redactor's
    assert engine.secret_redactor().redact("token zq-secret-value-123")[1] == 1


def test_a_stop_request_reaches_the_child_and_nothing_is_written(engine):
    update = ProcessUpdate(engine)
    with pytest.raises(UpdateCancelledError, match="stopped"):
        update(full=True, should_stop=lambda: True)
    update.close()
    assert engine.generation == 0


async def test_the_reindexer_runs_it_under_its_lock_and_records_the_run(engine):
    update = ProcessUpdate(engine)
    reindexer = Reindexer(engine, update=update, embed=False)
    try:
        record = await scheduled_reindex(reindexer, trigger="startup")
    finally:
        update.close()
    assert record is not None and record.ok and record.stats.files == 61 and record.generation == 1
    assert engine.retriever.builds["graph"] == 1  # warmed after the run
    assert not reindexer.running and reindexer.ready


_KILLED_MID_UPDATE = """
import multiprocessing, os, signal, sys
from pathlib import Path
from bot.isolated_update import ProcessUpdate
from rag.engine import Engine

engine = Engine.open(Path(sys.argv[1]), index_path=Path(sys.argv[2]))

def progress(done, total):  # the child is indexing: the bot is killed now (kill -9, the OOM killer)
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

ProcessUpdate(engine, niceness=0)(full=True, progress=progress)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads process states from /proc")
def test_the_update_process_ends_when_the_bot_is_killed(tmp_path):
    """``kill -9`` of ``slackzilla serve`` during a reindex: its update process lived on, finished the
    update without the bot's lock, then waited forever for the next one, reparented to init."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    files = {f"src/m{i}.js": f"function part{i}(a) {{ return a + {i}; }}\nmodule.exports = {{ part{i} }};\n"
             for i in range(600)}
    repo = write_repo(tmp_path / "repo", files)
    bot = subprocess.Popen([sys.executable, "-c", _KILLED_MID_UPDATE, str(repo), str(tmp_path / "i.sqlite")],
                           cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, text=True)
    children = [int(pid) for pid in bot.stdout.readline().split()]
    bot.wait(30)
    assert bot.returncode == -signal.SIGKILL and children

    left = survivors(children)
    assert not left, f"the update process {left} outlived the killed bot"


def test_the_child_is_kept_between_updates_and_sees_each_change(engine):
    """Each update spawned a new child (a second of imports, every cache cold): a one-file update of
    the bot cost ~0.4 s on eslint where it costs ~35 ms in one process."""
    update = ProcessUpdate(engine, niceness=0)
    try:
        first = update(full=True)
        child = update.child_pid
        assert first.added == 61 and child is not None and child != os.getpid()
        (engine.repo_root / "src" / "db.js").write_text(
            "const host = process.env.DB_HOST;\nfunction openReplicaPool() { return host; }\n"
            "module.exports = { openReplicaPool };\n")
        second = update()
        assert update.child_pid == child  # the same process ran it
        assert second.changed == 1 and second.generation == first.generation + 1
        assert "src/db.js" in result_paths(engine.retrieve("where is openReplicaPool defined?"))
        with pytest.raises(UpdateCancelledError):  # a stopped run keeps the child; the next one runs whole
            update(full=True, should_stop=lambda: True)
        third = update(full=True)
        assert update.child_pid == child and third.added == 61
    finally:
        update.close()
    assert not survivors([child])  # close() ended it


def test_a_kept_child_that_died_is_replaced_at_the_next_update(engine):
    import signal

    update = ProcessUpdate(engine, niceness=0)
    try:
        update(full=True)
        dead = update.child_pid
        os.kill(dead, signal.SIGKILL)
        assert not survivors([dead])
        stats = update()  # the pool notices the dead child: a new one runs the update
        assert stats.files == 61 and update.child_pid not in (None, dead)
    finally:
        update.close()


def test_a_kept_child_that_hangs_is_killed_and_replaced(engine, monkeypatch):
    import signal

    import bot.isolated_update as isolated

    update = ProcessUpdate(engine, niceness=0)
    try:
        update(full=True)
        hung = update.child_pid
        os.kill(hung, signal.SIGSTOP)  # stopped: it answers nothing, as a hung process would
        monkeypatch.setattr(isolated, "PING_TIMEOUT_S", 0.5)
        stats = update()
        assert stats.files == 61 and update.child_pid not in (None, hung)
        assert not survivors([hung])  # killed, not left behind
    finally:
        update.close()
