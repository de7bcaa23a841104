"""``/sz-status``: the bot's runtime status (version, uptime, index, schedule).

The status dict comes from ``CommandServices.status`` (built by ``bot/``);
this module only formats it. Nested dicts are flattened one level into
``parent.child`` labels.
"""
from __future__ import annotations

from typing import Any, Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

NOT_CONFIGURED = "Status is not available: the bot did not provide a status source."


def format_value(value: Any) -> str:
    """Render one status value: ``None`` → ``n/a``, bools → ``yes``/``no``, floats → 4 significant digits."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(item) for item in value) or "none"
    return str(value)


def status_fields(status: dict) -> list[tuple[str, str]]:
    """Flatten ``status`` into ``(label, value)`` pairs, keeping key order."""
    fields: list[tuple[str, str]] = []
    for key, value in status.items():
        if isinstance(value, dict):
            fields.extend((f"{key}.{sub}", format_value(item)) for sub, item in value.items())
        else:
            fields.append((str(key), format_value(value)))
    return fields


async def handle(request: CommandRequest) -> CommandResult:
    """Read ``services.status()`` and return it as fields (and as ``data``)."""
    if request.text:
        raise CommandError("/sz-status takes no arguments.")
    source = request.services.status
    if source is None:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    status = await source()
    if not isinstance(status, dict):
        raise TypeError(f"status source returned {type(status).__name__}, not dict")
    return CommandResult(text="Slackzilla status", title="Status", fields=status_fields(status), data=status)


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-status``."""
    register(
        CommandSpec(
            id="status",
            description="Show the bot's version, uptime, index age and next scheduled reindex.",
            usage="",
            category="info",
            handler=handle,
            ai_safe=True,
        )
    )
