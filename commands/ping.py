"""``/sz-ping``: check that the bot is alive. Takes no arguments."""
from __future__ import annotations

from typing import Callable

from commands.registry import SLASH_PREFIX, CommandError, CommandRequest, CommandResult, CommandSpec


def handle(request: CommandRequest) -> CommandResult:
    """Answer ``Pong!``. Raises ``CommandError`` when given arguments."""
    if request.text:
        raise CommandError(f"{SLASH_PREFIX}ping takes no arguments.")
    return CommandResult(text="Pong!", data={"pong": True})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-ping``."""
    register(
        CommandSpec(
            id="ping",
            description="Check that the bot is alive.",
            usage="",
            category="info",
            handler=handle,
            ai_safe=True,
        )
    )
