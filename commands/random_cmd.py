"""``/sz-random [<min> <max>]``: a random integer, both ends included (default 1 to 100).

Drawn with :func:`secrets.randbelow` (unpredictable, so usable for fair
draws) and posted in the channel so everyone sees the draw. Bounds are
limited to ±``MAX_ABS_BOUND``.
"""
from __future__ import annotations

import secrets
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

DEFAULT_MIN = 1
DEFAULT_MAX = 100
MAX_ABS_BOUND = 10**12


def _parse_bound(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise CommandError("The bounds must be whole numbers.") from None
    if abs(value) > MAX_ABS_BOUND:
        raise CommandError(f"The bounds must be between -{MAX_ABS_BOUND:,} and {MAX_ABS_BOUND:,}.")
    return value


def handle(request: CommandRequest) -> CommandResult:
    """Draw an integer in ``[min, max]``."""
    parts = request.text.split()
    if not parts:
        low, high = DEFAULT_MIN, DEFAULT_MAX
    elif len(parts) == 2:
        low, high = _parse_bound(parts[0]), _parse_bound(parts[1])
    else:
        raise CommandError("Give both a minimum and a maximum, or nothing for 1 to 100.")
    if low > high:
        raise CommandError("The minimum must not be larger than the maximum.")
    value = low + secrets.randbelow(high - low + 1)
    return CommandResult(
        text=f"Random number between {low} and {high}: *{value}*",
        ephemeral=False,
        data={"min": low, "max": high, "value": value},
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-random``."""
    register(
        CommandSpec(
            id="random",
            description="Pick a random whole number between min and max (default 1 to 100).",
            usage="[<min> <max>]",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
