"""Slackzilla's command registry: ``CommandSpec``s, one module per ``/sz-*`` command.

``bot/`` builds the registry with :func:`build_registry`, injects runtime
services through :class:`CommandServices` and runs every slash command and
model ``runCommand`` through :meth:`Registry.run`; the question command
(``/sz-ask``, ``kind="ask"``) is answered by the bot's one ask path instead.
A spec may read its arguments from a whole question (``from_question``, e.g.
``commands.hash``), which the engine's command inference receives. Commands
return a :class:`CommandResult`; they never import ``bot/`` or build Slack payloads.
"""
from __future__ import annotations

from commands.registry import (
    DEFAULT_COMMAND_MODULES,
    CommandError,
    CommandRequest,
    CommandResult,
    CommandServices,
    CommandSpec,
    Registry,
    build_registry,
)

__all__ = [
    "DEFAULT_COMMAND_MODULES",
    "CommandError",
    "CommandRequest",
    "CommandResult",
    "CommandServices",
    "CommandSpec",
    "Registry",
    "build_registry",
]
