"""bot.scheduler: the APScheduler job and the start-up update, on a real event loop and index."""
from __future__ import annotations

import asyncio
import time

import filelock
import pytest
from repo_helpers import result_paths, write_repo
from apscheduler.triggers.interval import IntervalTrigger

from bot.scheduler import (
    DEFAULT_MISFIRE_GRACE_S,
    JOB_ID,
    build_scheduler,
    next_run_at,
    scheduled_reindex,
    start_background_startup_update,
    stop_scheduler,
)
from rag.ingest.reindexer import Reindexer

INTERVAL_S = 0.5
#: Extra time allowed on top of two intervals for a loaded CI machine.
SLACK_S = 1.5


write = write_repo


paths = result_paths


@pytest.fixture
def reindexer(tmp_path):
    repo = write(tmp_path / "repo", {
        "guide.md": "# Guide\n\nThe oldword explains how caching works.\n",
        "gone.md": "# Gone\n\nThe leavingword will be deleted soon.\n",
        **{f"docs/page{i}.md": f"# Page {i}\n\nOrdinary notes about servers and routing {i}.\n" for i in range(5)},
    })
    r = Reindexer.open(repo, index_path=tmp_path / "index.sqlite")
    yield r
    r.engine.close()


def test_interval_zero_disables_and_negative_is_rejected(reindexer):
    assert build_scheduler(reindexer, interval_s=0, git_pull=False) is None
    assert next_run_at(None) is None
    stop_scheduler(None)
    with pytest.raises(ValueError, match="REINDEX_INTERVAL_S must be 0"):
        build_scheduler(reindexer, interval_s=-5, git_pull=False)


def test_job_is_one_at_a_time_coalesced_with_a_grace_time(reindexer):
    scheduler = build_scheduler(reindexer, interval_s=300, git_pull=True)
    job = scheduler.get_job(JOB_ID)
    assert job.max_instances == 1 and job.coalesce is True
    assert job.misfire_grace_time == DEFAULT_MISFIRE_GRACE_S
    assert isinstance(job.trigger, IntervalTrigger) and job.trigger.interval.total_seconds() == 300
    assert job.kwargs == {"git_pull": True} and job.args == (reindexer,)
    assert not scheduler.running
    short = build_scheduler(reindexer, interval_s=INTERVAL_S, git_pull=False).get_job(JOB_ID)
    assert short.misfire_grace_time == 1


async def test_short_interval_picks_up_edit_add_and_delete(reindexer):
    startup = start_background_startup_update(reindexer)
    first = await startup
    assert first.ok and first.trigger == "startup" and first.stats.added == 7
    repo = reindexer.engine.repo_root
    scheduler = build_scheduler(reindexer, interval_s=INTERVAL_S, git_pull=False)
    scheduler.start()
    try:
        assert time.time() < next_run_at(scheduler) <= time.time() + INTERVAL_S + 0.1
        changed_at = time.time()
        (repo / "guide.md").write_text("# Guide\n\nThe newword explains how caching works.\n", encoding="utf-8")
        (repo / "fresh.md").write_text("# Fresh\n\nThe arrivingword is brand new.\n", encoding="utf-8")
        (repo / "gone.md").unlink()
        engine = reindexer.engine

        def followed() -> bool:
            return (paths(engine.retrieve("newword")) == ["guide.md"]
                    and paths(engine.retrieve("arrivingword")) == ["fresh.md"]
                    and engine.retrieve("leavingword") == [])

        def scheduled_runs() -> list:
            return [r for r in reindexer.history if r.trigger == "schedule" and r.started_at >= changed_at - INTERVAL_S]

        deadline = changed_at + 2 * INTERVAL_S + SLACK_S
        while not (followed() and sum(r.stats.removed for r in scheduled_runs()) == 1):  # history too, not only the index
            if time.time() > deadline:
                pytest.fail(f"index or history did not follow the edits within {2 * INTERVAL_S + SLACK_S} s")
            await asyncio.sleep(0.05)
        runs = scheduled_runs()
        assert runs and all(r.ok for r in runs)
        assert (sum(r.stats.added for r in runs), sum(r.stats.changed for r in runs), sum(r.stats.removed for r in runs)) == (1, 1, 1)
        assert reindexer.state.generation >= 2
    finally:
        stop_scheduler(scheduler)
        await asyncio.sleep(0)


async def test_scheduled_run_skips_when_the_lock_is_held(reindexer):
    holder = filelock.FileLock(reindexer.lock_path)
    holder.acquire()
    try:
        assert await scheduled_reindex(reindexer) is None
    finally:
        holder.release()
    assert reindexer.state.busy_refusals == 1 and reindexer.history == []
    record = await scheduled_reindex(reindexer, git_pull=True)
    assert record.ok and record.trigger == "schedule"
    assert record.git is not None and record.git["ok"] is False  # not a git checkout: recorded, update ran


async def test_startup_update_yields_to_a_running_admin_update(reindexer):
    admin = asyncio.create_task(reindexer.run_async(trigger="admin", user="U9"))
    await asyncio.sleep(0)  # the admin run takes the lock first
    assert reindexer.running
    startup = start_background_startup_update(reindexer)
    assert await startup is None
    assert (await admin).ok and [r.trigger for r in reindexer.history] == ["admin"]
