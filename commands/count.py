"""``/sz-count <text>``: count characters, words and lines.

Characters are Unicode code points (what Python's ``len`` counts); words are
runs of non-white-space; lines follow :meth:`str.splitlines`. The UTF-8 byte
size is reported too, since limits are often in bytes.
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec


def counts(text: str) -> dict[str, int]:
    """``{"characters", "characters_no_spaces", "words", "lines", "bytes"}`` for ``text``."""
    return {
        "characters": len(text),
        "characters_no_spaces": sum(1 for char in text if not char.isspace()),
        "words": len(text.split()),
        "lines": len(text.splitlines()),
        "bytes": len(text.encode("utf-8")),
    }


def handle(request: CommandRequest) -> CommandResult:
    """Count ``request.text``."""
    if not request.text:
        raise CommandError("Give the text to count.")
    numbers = counts(request.text)
    labels = {
        "characters": "Characters",
        "characters_no_spaces": "Characters (no spaces)",
        "words": "Words",
        "lines": "Lines",
        "bytes": "Bytes (UTF-8)",
    }
    return CommandResult(
        text=f"{numbers['characters']} characters, {numbers['words']} words, {numbers['lines']} lines",
        title="count",
        fields=[(labels[key], str(value)) for key, value in numbers.items()],
        data=numbers,
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-count``."""
    register(
        CommandSpec(
            id="count",
            description="Count the characters, words and lines of text.",
            usage="<text>",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
