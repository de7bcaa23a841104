"""Keep the index current in the bot: a periodic reindex and the start-up update.

    scheduler = build_scheduler(reindexer, interval_s=settings.reindex_interval_s,
                                git_pull=settings.repo_git_pull)       # None when interval_s == 0
    startup = start_background_startup_update(reindexer)              # serve at once, update behind
    if scheduler is not None:
        scheduler.start()                                             # needs the running event loop
    ...
    stop_scheduler(scheduler); startup.cancel()

An adapter, not logic: both jobs call :meth:`rag.ingest.reindexer.Reindexer.run_async`,
the same method ``/sz-reindex`` uses, so they share one lock (in-process and
across processes). APScheduler 3.11's ``AsyncIOScheduler`` runs an ``async def``
job as a task on the loop; the update itself runs off the loop (in ``slackzilla serve``
in a child process, :mod:`bot.isolated_update`), so Slack acks and ``/api/*`` stay fast.
After each run the new generation's code graph is built once (:func:`warm`), before any
question needs it. ``max_instances=1`` and ``coalesce=True`` stop a
slow update from piling up runs; a run that finds the lock held (an admin's
``/sz-reindex``, another process) is skipped and counted in
``Reindexer.state.busy_refusals``.

Several replicas sharing one state store (issue 17) share one :class:`ScheduleLease`
per repository: each tick first takes the lease ``reindex:<repo>`` for most of an
interval (:meth:`StateStore.try_lease`); the replica that holds it runs the update,
the others skip (logged) and ``/sz-status`` names the holder. While the store is
unavailable every replica runs its own schedule (the index lock still keeps runs on
one machine apart) and says so in the log.
"""
from __future__ import annotations

import asyncio
import logging
import time
from datetime import timezone
from typing import Callable

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.state.resilient import ResilientState
from rag.ingest.reindexer import Reindexer, ReindexBusyError, RunRecord

__all__ = [
    "build_scheduler",
    "job_id_for",
    "scheduled_reindex",
    "warm",
    "start_background_startup_update",
    "next_run_at",
    "stop_scheduler",
    "ScheduleLease",
    "LEASE_FRACTION",
    "JOB_ID",
    "DEFAULT_MISFIRE_GRACE_S",
]

log = logging.getLogger(__name__)

JOB_ID = "reindex"
#: Longest delay (seconds) after which a late run still happens; capped by the interval.
DEFAULT_MISFIRE_GRACE_S = 60


#: A scheduled run's lease lasts this fraction of the interval: the holder renews it at its
#: next tick, another replica takes it over when the holder stops ticking.
LEASE_FRACTION = 0.9


class ScheduleLease:
    """The one-replica-per-interval lease of a repository's scheduled reindex.

    Args:
        state: the bot's state handle (its ``replica_id`` is the holder's name).
        repo: the repository's name (one lease per repository).
        interval_s: the schedule's interval; the lease lasts :data:`LEASE_FRACTION` of it.
        clock: epoch seconds.
    """

    def __init__(self, state: ResilientState, *, repo: str, interval_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.name = f"reindex:{repo}"
        self.ttl_s = max(0.5, float(interval_s) * LEASE_FRACTION)
        self.clock = clock
        self.skipped = 0

    async def acquire(self) -> bool:
        """``True`` when this replica should run now (it holds the lease, or the store is down)."""
        holder, ttl, now = self.state.replica_id, self.ttl_s, self.clock()
        ok, taken = await self.state.acall("lease", lambda s: s.try_lease(self.name, holder, ttl, now=now))
        if not ok:
            log.info("scheduled reindex runs without its lease: the state store is unavailable")
            return True
        if not taken:
            self.skipped += 1
            who = self.holder()
            log.info("scheduled reindex skipped: replica %s holds %s", who[0] if who else "another", self.name)
        return bool(taken)

    def holder(self) -> tuple[str, float] | None:
        """``(replica, expires_at)`` of the current lease, else ``None`` (blocking: worker threads)."""
        ok, found = self.state.call("lease", lambda s: s.lease_holder(self.name, now=self.clock()))
        return found if ok else None


async def scheduled_reindex(reindexer: Reindexer, *, git_pull: bool = False,
                            trigger: str = "schedule", lease: ScheduleLease | None = None) -> RunRecord | None:
    """One background update; ``None`` when another update held the lock, or another replica
    holds ``lease`` (skipped, not queued).

    A failed update is already recorded by the reindexer (``ok=False``); nothing is raised.
    """
    if lease is not None and not await lease.acquire():
        return None
    try:
        record = await reindexer.run_async(trigger=trigger, git_pull=git_pull)
    except ReindexBusyError as busy:
        log.info("%s reindex skipped: another update is running (trigger=%s)", trigger, busy.trigger)
        return None
    await warm(reindexer)
    return record


async def warm(reindexer: Reindexer) -> None:
    """Build the structures and code graph of the index's current generation in a worker thread
    (:meth:`rag.engine.Engine.warm`; a no-op when they are built), so the first questions after an
    update do not wait for them. A failure is logged: questions build them when they need them."""
    try:
        await asyncio.to_thread(reindexer.engine.warm)
    except Exception as exc:  # noqa: BLE001 - an optimisation, never a failure of the run
        log.warning("could not prepare the code graph after the update (%s)", type(exc).__name__)


def build_scheduler(reindexer: Reindexer, *, interval_s: float, git_pull: bool,
                    misfire_grace_s: int = DEFAULT_MISFIRE_GRACE_S,
                    lease: ScheduleLease | None = None, scheduler: AsyncIOScheduler | None = None,
                    job_id: str = JOB_ID) -> AsyncIOScheduler | None:
    """An unstarted ``AsyncIOScheduler`` with one interval job, or ``None`` when ``interval_s == 0``.

    With ``scheduler`` the job is added to it (one job per repository, ids ``reindex`` for the
    default repository and ``reindex:<name>`` for the others) and it is returned, or ``None``
    when ``interval_s == 0`` and it had no job yet.

    Args:
        reindexer: the process's :class:`Reindexer`.
        interval_s: seconds between runs (``REINDEX_INTERVAL_S``; fractions allowed, 0 disables).
        git_pull: ``git pull --ff-only`` before each run (``REPO_GIT_PULL=1``).
        misfire_grace_s: a run late by more than this (capped at the interval, at least 1 s) is
            skipped; with ``coalesce=True`` several missed runs become one.
        lease: shared with the other replicas: only its holder runs each interval.
        scheduler: an existing scheduler to add the job to.
        job_id: the job's id (:data:`JOB_ID` by default).

    Call ``start()`` from inside the running event loop (APScheduler 3.11 binds to it there).

    Raises:
        ValueError: ``interval_s`` is negative.
    """
    if interval_s < 0:
        raise ValueError(f"REINDEX_INTERVAL_S must be 0 (off) or a positive number of seconds, not {interval_s}")
    if interval_s == 0:
        log.info("scheduled reindex disabled (interval 0)%s", "" if job_id == JOB_ID else f" for {job_id}")
        return scheduler if scheduler is not None and scheduler.get_jobs() else None
    grace = max(1, min(int(misfire_grace_s), int(interval_s)))
    scheduler = scheduler if scheduler is not None else AsyncIOScheduler(timezone=timezone.utc)
    scheduler.add_job(
        scheduled_reindex, IntervalTrigger(seconds=interval_s, timezone=timezone.utc),
        args=[reindexer], kwargs={"git_pull": git_pull, **({"lease": lease} if lease else {})},
        id=job_id, name=job_id,
        max_instances=1, coalesce=True, misfire_grace_time=grace, replace_existing=True,
    )
    log.info("scheduled %s every %s s (git pull %s)", job_id, interval_s, "on" if git_pull else "off")
    return scheduler


def job_id_for(repo: str, *, default: bool) -> str:
    """The scheduler job of a repository: :data:`JOB_ID` for the default one, ``reindex:<name>`` otherwise."""
    return JOB_ID if default else f"{JOB_ID}:{repo}"


def next_run_at(scheduler: AsyncIOScheduler | None, job_id: str = JOB_ID) -> float | None:
    """Epoch seconds of the next run of ``job_id`` (default: the default repository's reindex), or
    ``None`` (no scheduler, not started, paused, no such job)."""
    if scheduler is None:
        return None
    job = scheduler.get_job(job_id)
    when = getattr(job, "next_run_time", None) if job is not None else None
    return when.timestamp() if when is not None else None


def stop_scheduler(scheduler: AsyncIOScheduler | None) -> None:
    """Shut ``scheduler`` down if it runs (a running update finishes in its thread, then unlocks)."""
    if scheduler is not None and scheduler.running:
        scheduler.shutdown(wait=False)


def start_background_startup_update(reindexer: Reindexer, *, git_pull: bool = False) -> asyncio.Task:
    """Start the start-up update as a task on the running loop and return it.

    The bot serves from the existing index (even a stale one) meanwhile; with
    no index yet, ``reindexer.require_ready()`` reports the build's progress.
    The task's result is the :class:`RunRecord`, or ``None`` when another
    update held the lock. Keep a reference and cancel it on shutdown.
    """
    task = asyncio.get_running_loop().create_task(
        scheduled_reindex(reindexer, git_pull=git_pull, trigger="startup"), name="startup-reindex",
    )
    return task
