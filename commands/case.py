"""``/sz-case <upper|lower|title|camel|snake|kebab> <text>``: change the case of text.

``camel``, ``snake`` and ``kebab`` first split the text into words: on any
run of non-alphanumeric characters, then on case changes (``getHTTPResponse``
→ ``get``, ``HTTP``, ``Response``), the usual identifier-splitting rule.
"""
from __future__ import annotations

import re
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

_SEPARATORS = re.compile(r"[\W_]+")
_CASE_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"\S+")


def split_words(text: str) -> list[str]:
    """``"getHTTPResponse now"`` → ``["get", "HTTP", "Response", "now"]``."""
    words: list[str] = []
    for chunk in _SEPARATORS.split(text):
        words.extend(part for part in _CASE_BOUNDARY.split(chunk) if part)
    return words


def _title(text: str) -> str:
    # str.title() would give "Don'T"; capitalise each white-space separated word instead.
    return _TOKEN.sub(lambda match: match[0][:1].upper() + match[0][1:].lower(), text)


def _camel(words: list[str]) -> str:
    return words[0].lower() + "".join(word.capitalize() for word in words[1:])


STYLES: dict[str, Callable[[str], str]] = {
    "upper": str.upper,
    "lower": str.lower,
    "title": _title,
    "camel": lambda text: _camel(split_words(text)),
    "snake": lambda text: "_".join(word.lower() for word in split_words(text)),
    "kebab": lambda text: "-".join(word.lower() for word in split_words(text)),
}


def convert(style: str, text: str) -> str:
    """Apply ``style`` to ``text``. Raises ``CommandError`` on an unknown style or no words."""
    key = style.lower()
    if key not in STYLES:
        raise CommandError(f"Unknown case. Choose one of: {', '.join(STYLES)}.")
    if key in ("camel", "snake", "kebab") and not split_words(text):
        raise CommandError("The text has no letters or digits to convert.")
    return STYLES[key](text)


def handle(request: CommandRequest) -> CommandResult:
    """Convert ``<text>`` to the requested case."""
    parts = request.text.split(None, 1)
    if len(parts) < 2:
        raise CommandError("Give a case style and the text to convert.")
    converted = convert(parts[0], parts[1])
    return CommandResult(text=f"{parts[0].lower()} case", title="case", code=converted, data={"style": parts[0].lower(), "text": converted})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-case``."""
    register(
        CommandSpec(
            id="case",
            description="Change text to upper, lower, title, camel, snake or kebab case.",
            usage="upper|lower|title|camel|snake|kebab <text>",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
