"""``/sz-reindex [full]``: rebuild the repository index (admins only).

The work is done by ``CommandServices.reindex(full, user_id)`` wired by
``bot/`` (which also keeps a single reindex running at a time). Not
``ai_safe``: an expensive, state-changing admin action stays with people.
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

NOT_CONFIGURED = "Reindexing is not available: the bot did not provide an indexer."


async def handle(request: CommandRequest) -> CommandResult:
    """Call ``services.reindex(full, user_id)``; ``full`` is the only accepted option."""
    option = request.text.lower()
    if option not in ("", "full"):
        raise CommandError(f"Unknown option {request.text!r}: the only option is `full`.")
    reindex = request.services.reindex
    if reindex is None:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    return await reindex(option == "full", request.user_id)


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
