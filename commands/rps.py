"""``/sz-rps <rock|paper|scissors>``: play rock-paper-scissors against the bot.

The bot's move is drawn with :func:`secrets.choice`, so it cannot be
predicted from earlier games. Posted in the channel. Not ``ai_safe``: a game
is for people.
"""
from __future__ import annotations

import secrets
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

MOVES: tuple[str, ...] = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
_ALIASES = {"r": "rock", "p": "paper", "s": "scissors", "stone": "rock"}
_EMOJI = {"rock": ":rock:", "paper": ":page_facing_up:", "scissors": ":scissors:"}


def outcome(player: str, bot: str) -> str:
    """``"win"``, ``"lose"`` or ``"draw"`` from the player's point of view."""
    if player == bot:
        return "draw"
    return "win" if BEATS[player] == bot else "lose"


def handle(request: CommandRequest) -> CommandResult:
    """Play one round."""
    choice = request.text.lower()
    player = _ALIASES.get(choice, choice)
    if player not in MOVES:
        raise CommandError("Choose rock, paper or scissors.")
    bot = secrets.choice(MOVES)
    result = outcome(player, bot)
    verdict = {"win": "You win!", "lose": "I win!", "draw": "It's a draw."}[result]
    return CommandResult(
        text=f"You: {_EMOJI[player]} {player} · Me: {_EMOJI[bot]} {bot} — {verdict}",
        ephemeral=False,
        data={"player": player, "bot": bot, "outcome": result},
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-rps``."""
    register(
        CommandSpec(
            id="rps",
            description="Play rock-paper-scissors against the bot.",
            usage="rock|paper|scissors",
            category="fun",
            handler=handle,
        )
    )
