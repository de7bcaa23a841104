"""``/sz-uuid [count]``: random (version 4, RFC 9562) UUIDs, at most ``MAX_UUIDS`` at once."""
from __future__ import annotations

import uuid
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

MAX_UUIDS = 10


def handle(request: CommandRequest) -> CommandResult:
    """Generate ``count`` (default 1, 1..``MAX_UUIDS``) UUIDv4 strings, one per line in ``code``."""
    count = 1
    if request.text:
        try:
            count = int(request.text)
        except ValueError:
            raise CommandError("The count must be a whole number.") from None
        if not 1 <= count <= MAX_UUIDS:
            raise CommandError(f"The count must be between 1 and {MAX_UUIDS}.")
    values = [str(uuid.uuid4()) for _ in range(count)]
    return CommandResult(text=f"{count} UUIDv4", title="uuid", code="\n".join(values), data={"uuids": values})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-uuid``."""
    register(
        CommandSpec(
            id="uuid",
            description=f"Generate random UUIDs (version 4), up to {MAX_UUIDS} at once.",
            usage="[count]",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
