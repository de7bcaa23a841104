"""Sanitising live-tool output before it reaches the model, Slack or a terminal.

Tool handlers return the running bot's state (status, logs, errors, metrics,
command results). Such data can hold credentials: request headers, config
dumps, environment maps, error messages quoting a connection string. Three
rules, applied in one walk over the value (:func:`sanitize`):

1. **Keys.** A key that names a secret (normalised to lower-case letters and
   digits, then matched against :data:`SECRET_KEY_RE`: authorization, cookie,
   password, passphrase, secret, token, api key, private key, access key,
   credential, session id) has its string values replaced by ``[REDACTED]``;
   inside a container under such a key every string is redacted. Numbers,
   booleans and ``null`` are kept (``"tokens": 1234`` in metrics is a count,
   and so are keys ending in ``tokens``). Environment maps (``env``,
   ``environment``, ``processEnv`` …) are replaced whole. ``telemetryHistory``
   is omitted (bulky, and never needed to answer a question).
2. **Strings.** :func:`rag.secrets.redact_text` (the one free-text redactor, also
   used for questions and what is posted) removes bearer/basic credentials, inline
   ``key=value`` / ``password: value`` pairs whose key names a secret, URL
   user-info passwords, and every provider-token pattern known to
   :func:`rag.secrets.redact_secrets` (``xoxb-``, ``sk-``, ``ghp_``, AWS keys,
   private-key blocks …), and the values of the repository's secret files.
3. **Shape.** Nesting deeper than :data:`DEFAULT_MAX_DEPTH` is cut with a
   marker; values that are not JSON types are converted (dataclasses,
   ``to_json()`` objects, dates, bytes, sets) or stringified.

:func:`cap_json` then bounds the serialised size, replacing an oversized
value by a truncation object that is itself valid JSON.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from collections.abc import Mapping
from typing import Any

from rag.secrets import COUNT_KEY_RE as _COUNT_KEY_RE
from rag.secrets import LiteralRedactor, redact_text
from rag.secrets import normalize_key as _norm_key

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "REDACTED",
    "SECRET_KEY_RE",
    "cap_json",
    "is_secret_key",
    "redact_text",
    "sanitize",
]

REDACTED = "[REDACTED]"
DEFAULT_MAX_DEPTH = 8
"""Deepest nesting kept; deeper containers become :data:`DEPTH_MARKER`."""
DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024
"""Cap on one tool output as UTF-8 JSON (DESIGN.md section 3, Live tools)."""
DEPTH_MARKER = "[depth limit reached]"
MIN_CAP_BYTES = 512
"""Smallest cap :func:`cap_json` accepts (room for the truncation object itself)."""

SECRET_KEY_RE = re.compile(
    r"authorization|cookie|passw(?:or)?d|passphrase|secret|token|apikey|privatekey|accesskey"
    r"|credential|sessionid|^auth$|^pwd$"
)
"""Matched against a key normalised to ``[a-z0-9]`` (``X-Api-Key`` → ``xapikey``)."""
_ENV_KEYS = frozenset({"env", "environ", "environment", "processenv", "envvars", "environmentvariables"})
_OMIT_KEYS = frozenset({"telemetryhistory"})

def is_secret_key(key: str) -> bool:
    """True when ``key`` names a credential (see :data:`SECRET_KEY_RE`); counts like ``promptTokens`` are not."""
    norm = _norm_key(key)
    return bool(SECRET_KEY_RE.search(norm)) and not _COUNT_KEY_RE.search(norm)


def _plain(value: Any) -> Any:
    """Convert a non-JSON value to a JSON-friendly one (one level)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def sanitize(value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH,
             literals: LiteralRedactor | None = None) -> tuple[Any, int]:
    """Return a JSON-safe, redacted copy of ``value`` (see the module docstring).

    Args:
        value: any handler output.
        max_depth: deepest container level kept (the top level is depth 0).
        literals: the values found in the repository's secret files (``.env`` …), redacted
            wherever they appear in strings (a log line quoting ``SESSION_KEY=…``).

    Returns:
        ``(clean, redactions)``; ``clean`` contains only dict/list/str/int/float/bool/None.
    """
    count = 0

    def walk(item: Any, depth: int, forced: bool) -> Any:
        nonlocal count
        if item is None or isinstance(item, bool) or isinstance(item, (int, float)):
            if isinstance(item, float) and item != item:  # NaN is not JSON
                return None
            return item
        if isinstance(item, str):
            if forced:
                count += 1
                return REDACTED
            clean, found = redact_text(item, literals=literals)
            count += found
            return clean
        if not isinstance(item, (Mapping, list)):
            converted = _plain(item)
            return walk(str(item) if converted is item else converted, depth, forced)
        if depth >= max_depth:
            return DEPTH_MARKER
        if isinstance(item, list):
            return [walk(x, depth + 1, forced) for x in item]
        out: dict[str, Any] = {}
        for key, sub in item.items():
            name = str(key)
            norm = _norm_key(name)
            if norm in _OMIT_KEYS:
                continue
            if norm in _ENV_KEYS and sub not in (None, {}, []):
                count += 1
                out[name] = REDACTED
                continue
            out[name] = walk(sub, depth + 1, forced or is_secret_key(name))
        return out

    return walk(value, 0, False), count


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def cap_json(value: Any, *, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> tuple[str, bool]:
    """Serialise ``value`` (already JSON-safe) to at most ``max_bytes`` UTF-8 bytes.

    A value that fits is returned as compact JSON. Otherwise the result is a
    truncation object — valid JSON — ``{"truncated": true, "original_bytes",
    "max_bytes", "note", ...}`` holding either the first ``items`` of a list
    (``"total_items"`` says how many there were) or, for other values, a
    ``preview`` string with the start of the JSON text.

    Returns:
        ``(json_text, truncated)``.

    Raises:
        ValueError: ``max_bytes`` is below :data:`MIN_CAP_BYTES`.
    """
    if max_bytes < MIN_CAP_BYTES:
        raise ValueError(f"max_bytes must be at least {MIN_CAP_BYTES}, got {max_bytes}")
    text = _dumps(value)
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return text, False
    envelope: dict[str, Any] = {
        "truncated": True,
        "original_bytes": size,
        "max_bytes": max_bytes,
        "note": "Output was larger than the limit and was cut; ask for less (filters, a smaller limit).",
    }

    def fits(candidate: dict) -> bool:
        return len(_dumps(candidate).encode("utf-8")) <= max_bytes

    if isinstance(value, list) and value:
        low, high = 0, len(value)
        while low < high:  # largest prefix that fits
            mid = (low + high + 1) // 2
            if fits({**envelope, "total_items": len(value), "items": value[:mid]}):
                low = mid
            else:
                high = mid - 1
        if low:
            return _dumps({**envelope, "total_items": len(value), "items": value[:low]}), True
    raw = text.encode("utf-8")
    budget = max_bytes - len(_dumps({**envelope, "preview": ""}).encode("utf-8"))
    while True:  # escaping can grow the preview: shrink by the overshoot until it fits
        candidate = _dumps({**envelope, "preview": raw[: max(budget, 0)].decode("utf-8", "ignore")})
        overshoot = len(candidate.encode("utf-8")) - max_bytes
        if overshoot <= 0:
            return candidate, True
        budget -= overshoot
