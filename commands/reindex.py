"""``/sz-reindex [full]``: rebuild the repository index (admins only), and every text it shows.

The update is ``CommandServices.reindexer.run_async`` (a
:class:`rag.ingest.reindexer.Reindexer`, the same call the scheduler makes, so both
share one lock in this process and across processes). The command announces the
run through ``CommandServices.notify`` once the lock is held, then answers with a
summary; a busy or failed run is ``ok=False``. Not ``ai_safe``: an expensive,
state-changing admin action stays with people.
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec
from rag.ingest.reindexer import ReindexBusyError

NOT_CONFIGURED = "Reindexing is not available: the bot did not provide an indexer."


def started_text(*, user_id: str | None, full: bool) -> str:
    """``:arrows_counterclockwise: Full reindex started requested by <@U1>…`` (Slack mrkdwn)."""
    kind = "Full reindex" if full else "Reindex"
    who = f" requested by <@{user_id}>" if user_id else ""
    return f":arrows_counterclockwise: {kind} started{who}…"


def busy_text(*, started_by: str | None, running_s: float | None) -> str:
    """``A reindex is already running (started by <@U1>, 12 s ago). Try again when it has finished.``"""
    details = []
    if started_by:
        details.append(f"started by <@{started_by}>")
    if running_s is not None:
        details.append(f"{running_s:.0f} s ago")
    extra = f" ({', '.join(details)})" if details else ""
    return f"A reindex is already running{extra}. Try again when it has finished."


def summary_text(*, stats: dict, seconds: float, full: bool) -> str:
    """``Reindex done in 1.2 s: 3 added, 1 changed, 0 removed (120 files, 900 chunks).``

    ``stats`` is a ``RunRecord.to_json()`` (``added``, ``changed``, ``removed``, ``files``,
    ``chunks``, ``skipped``: reason → count); ``seconds`` the run's wall time.
    """
    kind = "Full reindex" if full else "Reindex"
    files = stats.get("files")
    chunks = stats.get("chunks")
    totals = f" ({files:,} files, {chunks:,} chunks)" if isinstance(files, int) and isinstance(chunks, int) else ""
    skipped = stats.get("skipped") or {}
    skipped_n = sum(skipped.values()) if isinstance(skipped, dict) else 0
    skipped_text = f", {skipped_n:,} skipped" if skipped_n else ""
    return (
        f":white_check_mark: {kind} done in {seconds:.1f} s: {stats.get('added', 0):,} added, "
        f"{stats.get('changed', 0):,} changed, {stats.get('removed', 0):,} removed{skipped_text}{totals}."
    )


def failed_text(reason: str) -> str:
    """``Reindex failed: <reason>. The previous index is still in use.``"""
    return f"Reindex failed: {reason}. The previous index is still in use."


async def handle(request: CommandRequest) -> CommandResult:
    """Announce, update, summarise; ``full`` is the only accepted option."""
    option = request.text.lower()
    if option not in ("", "full"):
        raise CommandError(f"Unknown option {request.text!r}: the only option is `full`.")
    reindexer = request.services.reindexer
    if reindexer is None:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    full, user_id, notify = option == "full", request.user_id, request.services.notify

    async def announce(_record) -> None:
        if notify is not None:
            await notify(started_text(user_id=user_id, full=full))

    try:
        record = await reindexer.run_async(trigger="admin", full=full, user=user_id, on_start=announce)
    except ReindexBusyError as busy:
        running_s = None if busy.started_at is None else max(0.0, reindexer.clock() - busy.started_at)
        return CommandResult(text=busy_text(started_by=busy.user, running_s=running_s), ok=False,
                             data={"error": "busy"})
    if not record.ok:
        return CommandResult(text=failed_text(record.error or "unknown error"), ok=False, ephemeral=False,
                             data=record.to_json())
    return CommandResult(text=summary_text(stats=record.to_json(), seconds=record.duration_s or 0.0, full=full),
                         ephemeral=False, data=record.to_json())


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-reindex``."""
    register(
        CommandSpec(
            id="reindex",
            description="Update the repository index now; `full` rebuilds it from scratch.",
            usage="[full]",
            category="admin",
            handler=handle,
            admin_only=True,
        )
    )
