"""How a command is named: the ``/sz-`` slash prefix, id normalisation, and the command never run for a question.

The one place for these rules. ``commands.registry`` (a layer above) imports
them from here, so the registry, the live tools and the engine's command
inference always agree on what ``"/sz-Hash"`` means.
"""
from __future__ import annotations

__all__ = ["NEVER_RUN", "SLASH_PREFIX", "normalize_command_id", "slash_name"]

SLASH_PREFIX = "/sz-"
"""Every command's Slack name is ``SLASH_PREFIX + id``."""

NEVER_RUN = frozenset({"ask"})
"""Command ids never run on a question's behalf (by ``runCommand`` or command inference):
answering must not recurse into answering."""


def normalize_command_id(value: str | None) -> str:
    """``"/sz-Hash"``, ``"sz-hash"``, ``" HASH "`` → ``"hash"``: stripped, lower-case, one leading
    ``/`` and one ``sz-`` removed; ``None`` → ``""``."""
    name = (value or "").strip().lower().removeprefix("/")
    return name.removeprefix(SLASH_PREFIX.removeprefix("/"))


def slash_name(command_id: str) -> str:
    """``"hash"`` → ``"/sz-hash"``."""
    return SLASH_PREFIX + command_id
