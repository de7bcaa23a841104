"""``/sz-help [command]``: the command list, generated from the registry.

Lists only the commands the caller may run (admin-only ones are shown to
admins alone), grouped by category in ``CATEGORIES`` order. ``help <command>``
describes one command. The registry arrives through
``CommandServices.registry`` (``Registry.run`` fills it in).
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CATEGORIES, SLASH_PREFIX, CommandError, CommandRequest, CommandResult, CommandSpec

CATEGORY_TITLES = {"info": "Info", "ai": "Ask", "utility": "Utilities", "fun": "Fun", "admin": "Admin"}
NOT_CONFIGURED = "Help is not available: no command registry was provided."


def _describe(spec: CommandSpec) -> dict:
    return {
        "id": spec.id,
        "slash": spec.slash,
        "usage": spec.usage,
        "description": spec.description,
        "category": spec.category,
        "admin_only": spec.admin_only,
        "ai_safe": spec.ai_safe,
    }


def _overview(specs: list[CommandSpec]) -> CommandResult:
    lines: list[str] = []
    for category in CATEGORIES:
        group = [spec for spec in specs if spec.category == category]
        if not group:
            continue
        lines.append(f"*{CATEGORY_TITLES[category]}*")
        lines.extend(f"• `{spec.usage_line()}` — {spec.description}" for spec in group)
    lines.append(f"Type `{SLASH_PREFIX}help <command>` for details on one command.")
    return CommandResult(
        text="\n".join(lines),
        title="Slackzilla commands",
        data={"commands": [_describe(spec) for spec in specs]},
    )


def handle(request: CommandRequest) -> CommandResult:
    """List the caller's commands, or describe the one named in ``request.text``."""
    registry = request.services.registry
    if registry is None:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    name = request.text
    if not name:
        return _overview(registry.visible_to(is_admin=request.is_admin))
    if len(name.split()) > 1:
        raise CommandError(f"Give one command name, for example `{SLASH_PREFIX}help hash`.")
    spec = registry.get(name)
    if spec is None:
        suggestions = registry.suggest(name, is_admin=request.is_admin)
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        raise CommandError(f"There is no command called {name!r}.{hint}")
    if spec.admin_only and not request.is_admin:
        return CommandResult(text=f"{spec.slash} is restricted to admins.", ok=False, data={"error": "forbidden"})
    fields = [("Usage", spec.usage_line()), ("Category", CATEGORY_TITLES[spec.category])]
    if spec.admin_only:
        fields.append(("Access", "admins only"))
    return CommandResult(text=spec.description, title=spec.slash, fields=fields, data={"command": _describe(spec)})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-help``."""
    register(
        CommandSpec(
            id="help",
            description="List the commands you can run, or describe one.",
            usage="[command]",
            category="info",
            handler=handle,
            ai_safe=True,
        )
    )
