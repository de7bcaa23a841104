"""``/sz-token [length]``: a cryptographically random token (named ``token_cmd``: ``token`` is a stdlib module).

Characters are drawn with :func:`secrets.choice` from the 62 ASCII letters and
digits (≈5.95 bits each; the default 32 characters give ≈190 bits). The result
is always ephemeral, and the command is not ``ai_safe``: a secret should not
pass through the model or its transcript.
"""
from __future__ import annotations

import secrets
import string
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

ALPHABET = string.ascii_letters + string.digits
DEFAULT_TOKEN_LENGTH = 32
MIN_TOKEN_LENGTH = 8
MAX_TOKEN_LENGTH = 256


def make_token(length: int = DEFAULT_TOKEN_LENGTH) -> str:
    """Return ``length`` random characters from ``ALPHABET``."""
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def handle(request: CommandRequest) -> CommandResult:
    """Generate a token of ``length`` characters (``MIN_TOKEN_LENGTH``..``MAX_TOKEN_LENGTH``)."""
    length = DEFAULT_TOKEN_LENGTH
    if request.text:
        try:
            length = int(request.text)
        except ValueError:
            raise CommandError("The length must be a whole number.") from None
        if not MIN_TOKEN_LENGTH <= length <= MAX_TOKEN_LENGTH:
            raise CommandError(f"The length must be between {MIN_TOKEN_LENGTH} and {MAX_TOKEN_LENGTH}.")
    return CommandResult(
        text=f"A random {length}-character token (letters and digits). Only you can see it.",
        title="token",
        code=make_token(length),
        ephemeral=True,
        data={"length": length},
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-token``."""
    register(
        CommandSpec(
            id="token",
            description=f"Generate a cryptographically random token ({MIN_TOKEN_LENGTH}-{MAX_TOKEN_LENGTH} characters, default {DEFAULT_TOKEN_LENGTH}).",
            usage="[length]",
            category="utility",
            handler=handle,
        )
    )
