"""``/sz-hash <algorithm> <text>`` and ``/sz-hash pbkdf2 <digest> <iterations> <password>``.

Digests come from :mod:`hashlib`; output is lower-case hex. The input text is
never echoed back (people hash passwords): results show the algorithm, the
input size and the digest. PBKDF2 (RFC 8018) uses a fresh 16-byte random salt
(NIST SP 800-132 asks for at least 128 bits), shown in hex so the hash can be
reproduced; the iteration count is bounded so one request cannot hold a CPU
for long, and the derivation runs in a worker thread off the event loop.
"""
from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

ALGORITHMS: dict[str, str] = {
    "md5": "md5",
    "sha1": "sha1",
    "sha256": "sha256",
    "sha384": "sha384",
    "sha512": "sha512",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
    "blake2b": "blake2b",
    "blake2s": "blake2s",
}
"""Display name → :func:`hashlib.new` name."""

PBKDF2_DIGESTS: tuple[str, ...] = ("sha1", "sha256", "sha384", "sha512")
DEFAULT_PBKDF2_MIN_ITERATIONS = 1
DEFAULT_PBKDF2_MAX_ITERATIONS = 1_000_000
"""Upper bound on iterations: above OWASP's 2023 advice (600,000 for SHA-256),
about a second of CPU for SHA-512 on a small server."""
DEFAULT_SALT_BYTES = 16

_ALIASES = {"sha-1": "sha1", "sha-256": "sha256", "sha-384": "sha384", "sha-512": "sha512"}


def normalise_algorithm(name: str) -> str:
    """``"SHA3_256"`` → ``"sha3-256"``, ``"SHA-256"`` → ``"sha256"``; unknown names are returned lower-cased."""
    key = name.strip().lower().replace("_", "-")
    return _ALIASES.get(key, key)


def digest_hex(algorithm: str, text: str) -> str:
    """Hex digest of the UTF-8 bytes of ``text``. Raises ``CommandError`` on an unknown algorithm."""
    key = normalise_algorithm(algorithm)
    if key not in ALGORITHMS:
        # The bad name is not quoted back: it may be the text (or password) itself.
        raise CommandError(f"Unknown algorithm. Choose one of: {', '.join(ALGORITHMS)}, pbkdf2.")
    return hashlib.new(ALGORITHMS[key], text.encode("utf-8"), usedforsecurity=False).hexdigest()


def parse_iterations(raw: str) -> int:
    """Parse and bound a PBKDF2 iteration count. Raises ``CommandError``."""
    try:
        iterations = int(raw)
    except ValueError:
        raise CommandError(f"Iterations must be a whole number, not {raw!r}.") from None
    if not DEFAULT_PBKDF2_MIN_ITERATIONS <= iterations <= DEFAULT_PBKDF2_MAX_ITERATIONS:
        raise CommandError(
            f"Iterations must be between {DEFAULT_PBKDF2_MIN_ITERATIONS:,} and {DEFAULT_PBKDF2_MAX_ITERATIONS:,}."
        )
    return iterations


async def _pbkdf2(args: str) -> CommandResult:
    parts = args.split(None, 2)
    if len(parts) < 3:
        raise CommandError("pbkdf2 needs a digest, an iteration count and a password.")
    digest = normalise_algorithm(parts[0])
    if digest not in PBKDF2_DIGESTS:
        raise CommandError(f"pbkdf2 digest must be one of: {', '.join(PBKDF2_DIGESTS)}.")
    iterations = parse_iterations(parts[1])
    salt = secrets.token_bytes(DEFAULT_SALT_BYTES)
    password = parts[2].encode("utf-8")
    derived = await asyncio.to_thread(hashlib.pbkdf2_hmac, digest, password, salt, iterations)
    return CommandResult(
        text=f"PBKDF2-HMAC-{digest.upper()} with {iterations:,} iterations and a random salt.",
        title="pbkdf2",
        fields=[("Digest", digest), ("Iterations", str(iterations)), ("Salt (hex)", salt.hex()), ("Length", f"{len(derived)} bytes")],
        code=derived.hex(),
        data={"algorithm": "pbkdf2", "digest": digest, "iterations": iterations, "salt": salt.hex(), "hash": derived.hex()},
    )


async def handle(request: CommandRequest) -> CommandResult:
    """Hash ``<text>`` with ``<algorithm>``, or derive a PBKDF2 key."""
    parts = request.text.split(None, 1)
    if not parts:
        raise CommandError("Give an algorithm and the text to hash.")
    if parts[0].lower() == "pbkdf2":
        return await _pbkdf2(parts[1] if len(parts) > 1 else "")
    if len(parts) < 2:
        raise CommandError("Give the text to hash after the algorithm.")
    algorithm = normalise_algorithm(parts[0])
    hex_digest = digest_hex(algorithm, parts[1])
    size = len(parts[1].encode("utf-8"))
    return CommandResult(
        text=f"{algorithm} of {size} bytes of UTF-8 input",
        title=algorithm,
        fields=[("Algorithm", algorithm), ("Input", f"{size} bytes")],
        code=hex_digest,
        data={"algorithm": algorithm, "hash": hex_digest, "input_bytes": size},
    )


# -- reading the arguments from a question (the engine's command inference calls this) ----------

QUESTION_DIGESTS = ("sha3-224", "sha3-256", "sha3-384", "sha3-512", "sha224", "sha256", "sha384", "sha512",
                    "sha1", "md5", "blake2b", "blake2s")
"""Digest names looked for in a question, longest names first so ``sha3-256`` wins over ``sha256``."""
DEFAULT_QUESTION_DIGEST = "sha512"

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


def from_question(question: str) -> str | None:
    """``"algorithm digest iterations password"`` for a password-hash request in ``question``, else ``None``.

    A question that names a password or passphrase and an iteration count becomes
    ``pbkdf2 <digest> <n> <password>`` when it mentions PBKDF2, else ``sha256 <digest> <n>
    <password>``; the digest is the first of :data:`QUESTION_DIGESTS` named, else ``sha512``.
    The result holds the password: never log it.
    """
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
            iterations = re.sub(r"[,_]", "", match.group(1))
            break
    if not iterations:
        return None
    lowered = without_password.lower()
    algorithm = "pbkdf2" if "pbkdf2" in lowered else "sha256"
    named = [d for d in QUESTION_DIGESTS if re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", lowered)]
    digest = named[0] if named else DEFAULT_QUESTION_DIGEST
    return f"{algorithm} {digest} {iterations} {password}"


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-hash``."""
    register(
        CommandSpec(
            id="hash",
            description="Hash text (md5, sha1, sha2, sha3, blake2) or derive a PBKDF2 key with a random salt.",
            usage="<algorithm> <text> | pbkdf2 <digest> <iterations> <password>",
            category="utility",
            handler=handle,
            ai_safe=True,
            from_question=from_question,
        )
    )
