"""``/sz-status``: the bot's runtime status (version, uptime, index, schedule).

The status dict comes from ``CommandServices.status`` (built by ``bot/``);
this module only formats it. Nested dicts are flattened one level into
``parent.child`` labels.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from commands.registry import SLASH_PREFIX, CommandError, CommandRequest, CommandResult, CommandSpec

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


def _duration(seconds: float) -> str:
    """``3725`` → ``1h 2m``; ``42.5`` → ``42s``."""
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] * bool(days) + [f"{hours}h"] * bool(hours) + [f"{minutes}m"] * bool(minutes)
    return " ".join(parts[:2]) if parts else f"{secs}s"


def format_field(key: str, value: Any) -> str:
    """Like :func:`format_value`, reading the key's unit: ``*_at`` epoch seconds → ISO 8601 UTC,
    ``*_s`` seconds → ``1h 2m``; lists of records → their count."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if key.endswith("_at"):
            return datetime.fromtimestamp(value, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        if key.endswith("_s"):
            return _duration(value)
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
        return f"{len(value)} record{'s' if len(value) != 1 else ''}"
    return format_value(value)


def _label(key: str) -> str:
    return key.removesuffix("_s").removesuffix("_at").replace("_", " ") or key


def status_fields(status: dict) -> list[tuple[str, str]]:
    """Flatten ``status`` into human-readable ``(label, value)`` pairs, keeping key order."""
    fields: list[tuple[str, str]] = []
    for key, value in status.items():
        if isinstance(value, dict):
            fields.extend((f"{_label(str(key))}: {_label(str(sub))}", format_field(str(sub), item))
                          for sub, item in value.items())
        else:
            fields.append((_label(str(key)), format_field(str(key), value)))
    return fields


async def handle(request: CommandRequest) -> CommandResult:
    """Read ``services.status()`` and return it as fields (and as ``data``)."""
    if request.text:
        raise CommandError(f"{SLASH_PREFIX}status takes no arguments.")
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
