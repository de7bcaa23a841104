"""``/sz-base64 encode|decode <text>`` (named ``base64_cmd`` so it never shadows the stdlib).

Encoding uses the standard alphabet with padding (RFC 4648 §4). Decoding is
strict about the alphabet but forgiving about presentation: white space is
removed, the URL-safe alphabet (RFC 4648 §5) is accepted, and missing ``=``
padding is restored. Bytes that are not UTF-8 are shown as hex.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

_WHITESPACE = re.compile(r"\s+")


def encode(text: str) -> str:
    """Standard base64 of the UTF-8 bytes of ``text``."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def decode(text: str) -> bytes:
    """Decode base64 (standard or URL-safe, padding optional). Raises ``CommandError`` on invalid input."""
    compact = _WHITESPACE.sub("", text)
    if "-" in compact or "_" in compact:
        compact = compact.replace("-", "+").replace("_", "/")
    if not compact.rstrip("="):
        raise CommandError("That is not valid base64: there is no data to decode.")
    remainder = len(compact.rstrip("=")) % 4
    if remainder == 1:
        raise CommandError("That is not valid base64: its length is impossible for base64 data.")
    compact = compact.rstrip("=") + "=" * ((4 - remainder) % 4)
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise CommandError("That is not valid base64: it has characters outside the base64 alphabet.") from None


def handle(request: CommandRequest) -> CommandResult:
    """``encode <text>`` or ``decode <base64>``."""
    parts = request.text.split(None, 1)
    if not parts or parts[0].lower() not in ("encode", "decode"):
        raise CommandError("Start with `encode` or `decode`.")
    if len(parts) < 2:
        raise CommandError(f"Give the text to {parts[0].lower()}.")
    mode, payload = parts[0].lower(), parts[1]
    if mode == "encode":
        encoded = encode(payload)
        return CommandResult(text="Base64 (standard alphabet)", title="base64 encode", code=encoded, data={"base64": encoded})
    raw = decode(payload)
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return CommandResult(
            text=f"Decoded {len(raw)} bytes that are not UTF-8 text; shown as hex.",
            title="base64 decode",
            code=raw.hex(),
            data={"hex": raw.hex(), "utf8": False},
        )
    return CommandResult(text=f"Decoded {len(raw)} bytes", title="base64 decode", code=decoded, data={"text": decoded, "utf8": True})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-base64``."""
    register(
        CommandSpec(
            id="base64",
            description="Encode text to base64 or decode base64 to text.",
            usage="encode|decode <text>",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
