"""``/sz-roll [NdM+K]``: roll dice in the usual tabletop notation (default ``1d6``).

``N`` dice (1..``MAX_DICE``) with ``M`` sides (2..``MAX_SIDES``), plus or
minus an optional modifier ``K`` (|K| ≤ ``MAX_MODIFIER``). Rolls use
:mod:`secrets` so nobody can predict them. The result is posted in the channel:
a roll is meant to be seen.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

MAX_DICE = 100
MAX_SIDES = 1_000
MAX_MODIFIER = 10_000
DEFAULT_NOTATION = "1d6"
_NOTATION = re.compile(r"^(\d{1,6})?d(\d{1,6})(?:([+-])(\d{1,6}))?$")


@dataclass(frozen=True)
class Dice:
    """Parsed dice notation: ``count`` dice of ``sides`` sides plus ``modifier``."""

    count: int
    sides: int
    modifier: int = 0

    def __str__(self) -> str:
        suffix = f"{self.modifier:+d}" if self.modifier else ""
        return f"{self.count}d{self.sides}{suffix}"


def parse_dice(text: str) -> Dice:
    """``"2d6+3"`` → ``Dice(2, 6, 3)``. Raises ``CommandError`` on bad notation or bounds."""
    match = _NOTATION.match(text.replace(" ", "").lower())
    if not match:
        raise CommandError("Use dice notation such as 2d6, d20 or 3d8+2.")
    count = int(match[1]) if match[1] else 1
    sides = int(match[2])
    modifier = int(match[4]) * (-1 if match[3] == "-" else 1) if match[4] else 0
    if not 1 <= count <= MAX_DICE:
        raise CommandError(f"Roll between 1 and {MAX_DICE} dice.")
    if not 2 <= sides <= MAX_SIDES:
        raise CommandError(f"Dice need between 2 and {MAX_SIDES} sides.")
    if abs(modifier) > MAX_MODIFIER:
        raise CommandError(f"The modifier must be between -{MAX_MODIFIER} and +{MAX_MODIFIER}.")
    return Dice(count, sides, modifier)


def handle(request: CommandRequest) -> CommandResult:
    """Roll the dice and post the individual rolls and the total in the channel."""
    dice = parse_dice(request.text or DEFAULT_NOTATION)
    rolls = [secrets.randbelow(dice.sides) + 1 for _ in range(dice.count)]
    total = sum(rolls) + dice.modifier
    modifier = f" {'+' if dice.modifier > 0 else '-'} {abs(dice.modifier)}" if dice.modifier else ""
    return CommandResult(
        text=f":game_die: {dice}: {', '.join(map(str, rolls))}{modifier} = *{total}*",
        ephemeral=False,
        data={"notation": str(dice), "rolls": rolls, "modifier": dice.modifier, "total": total},
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-roll``."""
    register(
        CommandSpec(
            id="roll",
            description=f"Roll dice, e.g. 2d6+3 (up to {MAX_DICE} dice of {MAX_SIDES} sides).",
            usage="[NdM+K]",
            category="fun",
            handler=handle,
            ai_safe=True,
        )
    )
