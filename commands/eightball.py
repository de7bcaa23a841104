"""``/sz-8ball <question>``: the Magic 8 Ball's answer, posted in the channel.

The 20 answers are the classic toy's set (10 affirmative, 5 non-committal,
5 negative; see Wikipedia, "Magic 8 Ball"). Not ``ai_safe``: a random oracle
has no place in a grounded answer.
"""
from __future__ import annotations

import secrets
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

ANSWERS: tuple[str, ...] = (
    "It is certain.",
    "It is decidedly so.",
    "Without a doubt.",
    "Yes definitely.",
    "You may rely on it.",
    "As I see it, yes.",
    "Most likely.",
    "Outlook good.",
    "Yes.",
    "Signs point to yes.",
    "Reply hazy, try again.",
    "Ask again later.",
    "Better not tell you now.",
    "Cannot predict now.",
    "Concentrate and ask again.",
    "Don't count on it.",
    "My reply is no.",
    "My sources say no.",
    "Outlook not so good.",
    "Very doubtful.",
)


def handle(request: CommandRequest) -> CommandResult:
    """Answer a yes/no question with one of ``ANSWERS``."""
    if not request.text:
        raise CommandError("Ask a yes-or-no question.")
    answer = secrets.choice(ANSWERS)
    return CommandResult(text=f"> {request.text}\n:8ball: {answer}", ephemeral=False, data={"answer": answer})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-8ball``."""
    register(
        CommandSpec(
            id="8ball",
            description="Ask the Magic 8 Ball a yes-or-no question.",
            usage="<question>",
            category="fun",
            handler=handle,
        )
    )
