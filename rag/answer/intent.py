"""Command inference: which registered ``/sz-*`` command a question asks to run.

Follows the seed: a ``/sz-<id>`` mention that matches a registered command
(other than ``ask``) is run before the model is asked, with the text after
the mention as its arguments. Hash requests that mention a password or
passphrase and an iteration count are rewritten to the ``hash`` command's
``algorithm digest iterations password`` form: ``pbkdf2`` when PBKDF2 is
mentioned, else ``sha256``; digest ``sha512`` unless another supported digest
is named. A question that asks to run/execute/use/call/invoke a command skips
code-context expansion (its answer is the command's output, not the code).

The registered ids come from the caller (the tools adapter's ``get_commands``),
so ``rag`` never imports ``commands``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CommandIntent", "HASH_DIGESTS", "infer_command", "asks_to_run_command", "hash_command_text",
           "strip_command_mentions"]

HASH_DIGESTS = ("sha3-224", "sha3-256", "sha3-384", "sha3-512", "sha224", "sha256", "sha384", "sha512",
                "sha1", "md5", "blake2b", "blake2s")
"""Digests the ``hash`` command supports, longest names first so ``sha3-256`` wins over ``sha256``."""
DEFAULT_HASH_DIGEST = "sha512"
NEVER_INFERRED = frozenset({"ask"})

_MENTION_RE = re.compile(r"(?<![\w/-])/sz-([a-z0-9][a-z0-9_-]*)", re.I)
_RUN_VERB_RE = re.compile(r"\b(?:run|runs|running|execute|executing|use|using|call|calling|invoke|invoking)\b", re.I)
_COMMAND_WORD_RE = re.compile(r"\bcommands?\b|(?<![\w/-])/sz-[a-z0-9]", re.I)
_ITERATIONS_RES = (
    re.compile(r"(?<![\w.-])(\d[\d,_]*)\s*(?:iterations?|rounds?|iters?)\b", re.I),
    re.compile(r"\b(?:iterations?|rounds?|iters?)\s*(?:count\s*)?(?:of|=|:|is|to)?\s*(\d[\d,_]*)", re.I),
)
_SECRET_WORD = r"\b(?:password|passphrase)\b"
_PASSWORD_RES = (
    re.compile(_SECRET_WORD + r"\s*(?:is|=|:|of)?\s*([\"'`])(.+?)\1", re.I),
    re.compile(_SECRET_WORD + r"\s*(?:is|=|:)\s*([^\s\"'`,;]+)", re.I),
    re.compile(_SECRET_WORD + r"\s+(?!(?:with|using|and|for|of|the|a|an|in|to|by|via|from|at)\b)([^\s\"'`,;]+)",
               re.I),
)
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


def _number(text: str) -> str:
    return re.sub(r"[,_]", "", text)


def hash_command_text(question: str) -> str | None:
    """``"algorithm digest iterations password"`` for a password-hash request, else ``None``."""
    password = None
    for pattern in _PASSWORD_RES:
        match = pattern.search(question)
        if match:
            password = match.group(match.lastindex or 1)
            without_password = question[: match.start()] + question[match.end():]
            break
    if not password:
        return None
    iterations = None
    for pattern in _ITERATIONS_RES:
        match = pattern.search(without_password)
        if match:
            iterations = _number(match.group(1))
            break
    if not iterations:
        return None
    lowered = without_password.lower()
    algorithm = "pbkdf2" if "pbkdf2" in lowered else "sha256"
    named = [d for d in HASH_DIGESTS if re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", lowered)]
    digest = named[0] if named else DEFAULT_HASH_DIGEST
    return f"{algorithm} {digest} {iterations} {password}"


def infer_command(question: str, command_ids: Iterable[str], *, command_id: str | None = None) -> CommandIntent | None:
    """The command to run first, if any.

    Args:
        question: the user's question.
        command_ids: registered command ids (``hash``, ``uuid`` …).
        command_id: an explicit command chosen by the caller; wins over mentions
            (``ask`` is still never inferred).

    Returns:
        A :class:`CommandIntent`, or ``None`` when no registered command is named.
    """
    known = {c.strip().lower().removeprefix("/").removeprefix("sz-"): c for c in command_ids if c}
    skip = asks_to_run_command(question)
    chosen: str | None = None
    text = ""
    if command_id:
        wanted = command_id.strip().lower().removeprefix("/").removeprefix("sz-")
        if wanted in NEVER_INFERRED:
            return None
        chosen = wanted
        mention = next((m for m in _MENTION_RE.finditer(question) if m.group(1).lower() == wanted), None)
        text = _arguments_after(question, mention.end(), mention.start()) if mention else question.strip()
    else:
        for mention in _MENTION_RE.finditer(question):
            name = mention.group(1).lower()
            if name in known and name not in NEVER_INFERRED:
                chosen = name
                text = _arguments_after(question, mention.end(), mention.start())
                break
    if chosen is None:
        return None
    if chosen == "hash":
        text = hash_command_text(question) or text
    return CommandIntent(known.get(chosen, chosen), text, skip)
