"""``/sz-reindex [NAME|all] [full]``: update a repository's index (admins only), and every text it shows.

With several repositories (``CommandServices.reindexers``) the command updates the channel's
repository (``/sz-repo``), the one named, or every one in turn (``all``, or a channel bound to
``all``); with one, that one. The update is ``Reindexing.run_async`` (a
:class:`rag.ingest.reindexer.Reindexer`, the same call the scheduler makes, so both
share one lock in this process and across processes). The command announces the
run through ``CommandServices.notify`` once the lock is held, then answers with a
summary; a busy or failed run is ``ok=False``. Not ``ai_safe``: an expensive,
state-changing admin action stays with people.
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec, Reindexing
from rag.ingest.reindexer import ReindexBusyError

NOT_CONFIGURED = "Reindexing is not available: the bot did not provide an indexer."
#: The name that updates every repository in turn.
ALL = "all"


def _kind(full: bool, repo: str | None) -> str:
    """``Full reindex`` / ``Reindex``, with `` of *api*`` when a repository is named."""
    kind = "Full reindex" if full else "Reindex"
    return f"{kind} of *{repo}*" if repo else kind


def started_text(*, user_id: str | None, full: bool, repo: str | None = None) -> str:
    """``:arrows_counterclockwise: Full reindex of *api* started requested by <@U1>…`` (Slack mrkdwn;
    ``repo`` is named with several repositories only)."""
    who = f" requested by <@{user_id}>" if user_id else ""
    return f":arrows_counterclockwise: {_kind(full, repo)} started{who}…"


def busy_text(*, started_by: str | None, running_s: float | None) -> str:
    """``A reindex is already running (started by <@U1>, 12 s ago). Try again when it has finished.``"""
    details = []
    if started_by:
        details.append(f"started by <@{started_by}>")
    if running_s is not None:
        details.append(f"{running_s:.0f} s ago")
    extra = f" ({', '.join(details)})" if details else ""
    return f"A reindex is already running{extra}. Try again when it has finished."


def summary_text(*, stats: dict, seconds: float, full: bool, repo: str | None = None) -> str:
    """``Reindex done in 1.2 s: 3 added, 1 changed, 0 removed (120 files, 900 chunks).``

    ``stats`` is a ``RunRecord.to_json()`` (``added``, ``changed``, ``removed``, ``files``,
    ``chunks``, ``skipped``: reason → count); ``seconds`` the run's wall time; ``repo`` is named
    (``Reindex of *api* done …``) with several repositories only.
    """
    kind = _kind(full, repo)
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


def failed_text(reason: str, *, repo: str | None = None) -> str:
    """``Reindex failed: <reason>. The previous index is still in use.`` (``Reindex of *api* failed …``
    with several repositories)."""
    return f"{_kind(False, repo)} failed: {reason}. The previous index is still in use."


def _parse(text: str, names: list[str]) -> tuple[bool, str | None]:
    """``(full, name)`` of the command's text: ``full`` and, with several repositories, at most one
    repository name (the configured spelling, matched without case, or :data:`ALL`).

    Raises:
        CommandError: an unknown word, or a name when the bot has one repository.
    """
    full, name = False, None
    by_lower = {n.lower(): n for n in names}
    for word in text.split():
        lower = word.lower()
        if lower == "full" and not full:
            full = True
        elif name is None and len(names) > 1 and (lower in by_lower or lower == ALL):
            name = by_lower.get(lower, ALL)
        elif len(names) > 1:
            raise CommandError(f"Unknown option {word[:60]!r}: name one repository ({', '.join(names)} or all) "
                               "and/or `full`.")
        else:
            raise CommandError(f"Unknown option {word[:60]!r}: the only option is `full`.")
    return full, name


async def _targets(request: CommandRequest, name: str | None) -> list[tuple[str | None, Reindexing]]:
    """``[(repository name or None, reindexer)]`` to update, in order: the one named, every one for
    :data:`ALL`, else the channel's repository (``/sz-repo``), else the default."""
    services = request.services
    several = dict(services.reindexers or {})
    if len(several) <= 1:
        return [(None, services.reindexer)] if services.reindexer is not None else []
    if name is None and services.repos is not None:
        name = (await services.repos.describe(request.channel_id)).get("current")
    if name == ALL:
        return list(several.items())
    if name in several:
        return [(name, several[name])]
    if name is not None:
        raise _NotServing(name)
    return [(None, services.reindexer)] if services.reindexer is not None else []


class _NotServing(Exception):
    """The channel's repository has no reindexer (it could not be opened)."""


async def _run_one(request: CommandRequest, repo: str | None, reindexer: Reindexing, full: bool) -> CommandResult:
    """Announce, update and summarise one repository (``repo`` named in the texts, or ``None``)."""
    user_id, notify = request.user_id, request.services.notify

    async def announce(_record) -> None:
        if notify is not None:
            await notify(started_text(user_id=user_id, full=full, repo=repo))

    try:
        record = await reindexer.run_async(trigger="admin", full=full, user=user_id, on_start=announce)
    except ReindexBusyError as busy:
        running_s = None if busy.started_at is None else max(0.0, reindexer.clock() - busy.started_at)
        text = busy_text(started_by=busy.user, running_s=running_s)
        return CommandResult(text=f"*{repo}*: {text}" if repo else text, ok=False,
                             data={"error": "busy", "repo": repo} if repo else {"error": "busy"})
    data = {**record.to_json(), "repo": repo} if repo else record.to_json()
    if not record.ok:
        return CommandResult(text=failed_text(record.error or "unknown error", repo=repo), ok=False,
                             ephemeral=False, data=data)
    return CommandResult(text=summary_text(stats=record.to_json(), seconds=record.duration_s or 0.0, full=full,
                                           repo=repo), ephemeral=False, data=data)


async def handle(request: CommandRequest) -> CommandResult:
    """Parse ``[NAME|all] [full]``, then announce, update and summarise each repository in turn
    (one busy or failed repository does not stop the others; the result is ``ok`` when all were)."""
    full, name = _parse(request.text, list(request.services.reindexers or {}))
    try:
        targets = await _targets(request, name)
    except _NotServing as missing:
        return CommandResult(text=f"The repository *{missing}* cannot be reindexed right now: it could not be opened "
                                  "(see `/sz-repo`). Name another one, or `all`.", ok=False,
                             data={"error": "not_serving", "repo": str(missing)})
    if not targets:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    results = [await _run_one(request, repo, reindexer, full) for repo, reindexer in targets]
    if len(results) == 1:
        return results[0]
    return CommandResult(text="\n".join(r.text for r in results), ok=all(r.ok for r in results),
                         ephemeral=all(r.ephemeral for r in results), data={"runs": [r.data for r in results]})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-reindex``."""
    register(
        CommandSpec(
            id="reindex",
            description="Update the repository index now (the channel's repository, a named one or `all`); "
                        "`full` rebuilds it from scratch.",
            usage="[NAME|all] [full]",
            category="admin",
            handler=handle,
            admin_only=True,
        )
    )
