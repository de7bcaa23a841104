"""Command inference: which registered ``/sz-*`` command a question asks to run.

Follows the seed: a ``/sz-<id>`` mention that matches a registered command
(never one of :data:`rag.tools.command_names.NEVER_RUN`) is run before the model
is asked, with the text after the mention as its arguments. A command may read
its own arguments from the whole question: its ``from_question`` hook, injected
by the caller as ``parsers`` (the ``hash`` command turns "hash the password X
with 1000 iterations" into ``pbkdf2 sha512 1000 X``; see ``commands.hash``). A
question that asks to run/execute/use/call/invoke a command skips code-context
expansion (its answer is the command's output, not the code).

The registered ids and the parsers come from the caller (the tools adapter's
``get_commands``, the command specs), so ``rag`` never imports ``commands``.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rag.tools.command_names import NEVER_RUN, SLASH_PREFIX, normalize_command_id

__all__ = ["CommandIntent", "QuestionParser", "infer_command", "asks_to_run_command", "strip_command_mentions"]

QuestionParser = Callable[[str], "str | None"]
"""A command's ``from_question(question)``: its argument text read from the whole question, or ``None``."""

_PREFIX = re.escape(SLASH_PREFIX)
_MENTION_RE = re.compile(r"(?<![\w/-])" + _PREFIX + r"([a-z0-9][a-z0-9_-]*)", re.I)
_RUN_VERB_RE = re.compile(r"\b(?:run|runs|running|execute|executing|use|using|call|calling|invoke|invoking)\b", re.I)
_COMMAND_WORD_RE = re.compile(r"\bcommands?\b|(?<![\w/-])" + _PREFIX + r"[a-z0-9]", re.I)
_CLOSERS = {"`": "`", '"': '"', "'": "'", "(": ")"}


@dataclass(frozen=True)
class CommandIntent:
    """A command to run before answering.

    Attributes:
        command_id: registered id (lower-case, without ``/sz-``).
        text: argument text for the command (may be empty); may hold a
            password — never log it.
        skip_code_context: the question asks to run a command, so code-context
            expansion is skipped.
    """

    command_id: str
    text: str
    skip_code_context: bool


def asks_to_run_command(question: str) -> bool:
    """True when the question asks to run/execute/use/call/invoke a command."""
    return bool(_RUN_VERB_RE.search(question) and _COMMAND_WORD_RE.search(question))


def strip_command_mentions(question: str) -> str:
    """``/sz-hash`` → ``hash`` everywhere: the repository search then matches the command's
    name instead of being diluted by the ``sz`` prefix (measured: a question naming a
    command could make retrieval abstain on a small repository)."""
    return _MENTION_RE.sub(lambda m: m.group(1), question)


def _arguments_after(question: str, end: int, start: int) -> str:
    """Text after a mention: up to the closing quote/backtick if the mention was quoted, else the line."""
    opener = question[start - 1] if start > 0 else ""
    rest = question[end:]
    if opener in _CLOSERS:
        close = rest.find(_CLOSERS[opener])
        if close >= 0:
            rest = rest[:close]
    rest = rest.split("\n", 1)[0].strip()
    return rest.rstrip("?").strip()


def infer_command(question: str, command_ids: Iterable[str], *, command_id: str | None = None,
                  parsers: Mapping[str, QuestionParser] | None = None) -> CommandIntent | None:
    """The command to run first, if any.

    Args:
        question: the user's question.
        command_ids: registered command ids (``hash``, ``uuid`` …).
        command_id: an explicit command chosen by the caller; wins over mentions
            (a :data:`NEVER_RUN` command is still never inferred).
        parsers: command id → ``from_question`` hook; when the chosen command has one and it
            returns text, that text replaces the words after the mention.

    Returns:
        A :class:`CommandIntent`, or ``None`` when no registered command is named.
    """
    known = {normalize_command_id(c): c for c in command_ids if c}
    hooks = {normalize_command_id(name): hook for name, hook in (parsers or {}).items()}
    skip = asks_to_run_command(question)
    chosen: str | None = None
    text = ""
    if command_id:
        wanted = normalize_command_id(command_id)
        if wanted in NEVER_RUN:
            return None
        chosen = wanted
        mention = next((m for m in _MENTION_RE.finditer(question) if m.group(1).lower() == wanted), None)
        text = _arguments_after(question, mention.end(), mention.start()) if mention else question.strip()
    else:
        for mention in _MENTION_RE.finditer(question):
            name = mention.group(1).lower()
            if name in known and name not in NEVER_RUN:
                chosen = name
                text = _arguments_after(question, mention.end(), mention.start())
                break
    if chosen is None:
        return None
    if chosen in hooks:
        text = hooks[chosen](question) or text
    return CommandIntent(known.get(chosen, chosen), text, skip)
