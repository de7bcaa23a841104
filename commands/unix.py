"""``/sz-unix [timestamp | ISO 8601]``: convert between Unix time and ISO 8601 (UTC).

* no argument (or ``now``) → the current time;
* a number → seconds since 1970-01-01T00:00:00Z; values of magnitude
  ≥ ``MILLISECONDS_THRESHOLD`` are read as milliseconds (1e11 s is the year
  5138, so such values are almost always JavaScript ``Date.now()`` output);
* anything else → parsed by :meth:`datetime.fromisoformat` (Python 3.11 reads
  most ISO 8601 forms, including a ``Z`` suffix); a time without an offset is
  taken as UTC.
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

MILLISECONDS_THRESHOLD = 100_000_000_000
_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?$")


def to_iso(timestamp: float) -> str:
    """``1700000000`` → ``"2023-11-14T22:13:20Z"`` (fractions kept when present)."""
    try:
        moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    except (OverflowError, ValueError, OSError):
        raise CommandError("That timestamp is outside the supported range (years 1 to 9999).") from None
    return moment.isoformat().replace("+00:00", "Z")


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def from_iso(text: str) -> int | float:
    """``"2023-11-14T22:13:20Z"`` → ``1700000000``. Raises ``CommandError`` on unparseable input."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError("Give a Unix timestamp or an ISO 8601 date/time such as 2024-05-01T12:00:00Z.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return _number(moment.timestamp())


def handle(request: CommandRequest) -> CommandResult:
    """Convert the argument (see the module docstring) and show both forms."""
    arg = request.text
    if not arg or arg.lower() == "now":
        timestamp: int | float = int(time.time())
    elif _NUMBER.match(arg):
        value = float(arg)
        timestamp = _number(value / 1000 if abs(value) >= MILLISECONDS_THRESHOLD else value)
    else:
        timestamp = from_iso(arg)
    iso = to_iso(timestamp)
    return CommandResult(
        text=f"{timestamp} = {iso}",
        title="unix",
        fields=[("Unix timestamp", str(timestamp)), ("ISO 8601 (UTC)", iso)],
        data={"timestamp": timestamp, "iso": iso},
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-unix``."""
    register(
        CommandSpec(
            id="unix",
            description="Convert a Unix timestamp to ISO 8601 (UTC) or back; no argument shows now.",
            usage="[timestamp | ISO 8601]",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
