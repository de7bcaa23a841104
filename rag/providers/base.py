"""Helpers shared by the HTTP providers (embeddings, reranker): base-URL checks, one-line
reasons, and the one retry/deadline loop.

Both providers make a request, retry the retryable failures (connection errors,
timeouts, HTTP 408/409/429/5xx, honouring a numeric ``Retry-After``) with a doubling
back-off, and never run past one overall deadline. :func:`call_with_retries` is that
loop; the provider supplies one attempt (``attempt(timeout_s) -> result``) that
returns, raises :class:`Retryable` with a one-line reason, or raises
:class:`~rag.errors.ProviderError` to stop at once. Why our own loop rather than an
SDK's ``max_retries``: an SDK retries each request with its own timeout, so three
attempts can take three times the deadline.

Every reason is one line, bounded, and scrubbed of the API key and the user's text
(:func:`scrub`): it ends up in user-facing errors and in logs.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from rag.errors import ProviderError

__all__ = [
    "one_line", "provider_base_url", "scrub", "error_detail", "status_reason", "connect_reason",
    "timeout_reason", "RetryPolicy", "Retryable", "call_with_retries", "RETRYABLE_STATUS",
]

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses worth retrying, plus every 5xx (the openai SDK's list)."""
MAX_DETAIL_CHARS = 120
"""Longest server error detail quoted in a reason."""
HIDDEN = "[hidden]"


def one_line(text: object, limit: int = 160) -> str:
    """``text`` with white space folded to single spaces, cut to ``limit`` characters (``…`` marks a cut)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def provider_base_url(url: str, *, suffix: str, variable: str, example: str) -> str:
    """``https://host/v1/<suffix>/`` → ``https://host/v1``.

    Raises:
        ProviderError: not an ``http(s)://host…`` URL (the message names ``variable`` and an example).
    """
    url = url.strip().rstrip("/")
    if url.endswith("/" + suffix):
        url = url[: -len(suffix) - 1]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ProviderError(f"{variable} must be an http:// or https:// URL, e.g. {example}")
    return url


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each non-empty ``secrets`` string replaced by ``[hidden]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, HIDDEN)
    return text


def error_detail(body: Any) -> str:
    """The message of an HTTP error body, never echoed inputs (such as FastAPI's ``input``).

    Args:
        body: the body as parsed JSON (``{"error": {"message": …}}``, ``{"error": "…"}``,
            ``{"message"|"detail"|"msg": …}``, FastAPI's ``{"detail": [{"loc", "msg"}]}``),
            a plain-text body (``str``, returned as is), or raw ``bytes`` (decoded as JSON;
            undecodable bytes that look like HTML/JSON give ``""``, other bytes their text).

    Returns:
        The detail text (possibly multi-line, unbounded: see :func:`status_reason`), or ``""``.
    """
    if isinstance(body, (bytes, bytearray)):
        try:
            body = json.loads(body)
        except ValueError:
            return "" if body.lstrip()[:1] in (b"<", b"{", b"[") else bytes(body).decode("utf-8", "replace")
        if isinstance(body, str):
            return ""
    if isinstance(body, str):
        return body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, str):
            return err
        if isinstance(err, dict):
            for key in ("message", "detail", "msg"):
                value = err.get(key)
                if isinstance(value, str):
                    return value
                if isinstance(value, list):  # FastAPI/pydantic: [{"loc": [...], "msg": "..."}]
                    return "; ".join(f"{'.'.join(map(str, v.get('loc', [])))}: {v.get('msg', '')}"
                                     for v in value if isinstance(v, dict))
    return ""


def status_reason(status: int, detail: str, secrets: Sequence[str] = ()) -> str:
    """``"HTTP 503: model overloaded"``: the status and the detail, scrubbed, one line, bounded."""
    detail = one_line(scrub(detail, secrets), MAX_DETAIL_CHARS) if detail else ""
    return f"HTTP {status}" + (f": {detail}" if detail else "")


def connect_reason(base_url: str, cause: object, secrets: Sequence[str] = ()) -> str:
    """``"cannot connect to https://host/v1 (Connection refused)"``, scrubbed, one line."""
    return f"cannot connect to {base_url} ({one_line(scrub(str(cause), secrets), 100)})"


def timeout_reason(timeout_s: float) -> str:
    """``"request timed out after 4.0 s"``."""
    return f"request timed out after {timeout_s:.1f} s"


class Retryable(Exception):
    """Raised by an attempt: a failure worth retrying.

    Args:
        reason: one line for errors and logs (no key, no user text).
        retry_after_s: the server's ``Retry-After`` in seconds (already capped), or ``None``.
    """

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RetryPolicy:
    """How a provider retries inside its deadline.

    Attributes:
        max_retries: extra attempts after the first (≥ 0).
        backoff_s: first retry delay in seconds, doubled each attempt ...
        max_backoff_s: ... up to this; also the cap of a ``Retry-After``.
        retryable_status: HTTP statuses retried besides every 5xx.
    """

    max_retries: int
    backoff_s: float
    max_backoff_s: float
    retryable_status: frozenset[int] = RETRYABLE_STATUS

    def retryable(self, status: int) -> bool:
        """Whether HTTP ``status`` is worth another attempt (408/409/429 and every 5xx)."""
        return status in self.retryable_status or status >= 500

    def retry_after_s(self, value: object) -> float | None:
        """Seconds from a numeric ``Retry-After`` header value (clamped to 0..``max_backoff_s``), else ``None``."""
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        if seconds != seconds:
            return None
        return min(max(seconds, 0.0), self.max_backoff_s)

    def delay_s(self, attempt: int, retry_after_s: float | None = None) -> float:
        """The pause after failed attempt number ``attempt`` (0-based): ``Retry-After`` if given, else
        ``backoff_s * 2**attempt`` capped at ``max_backoff_s``."""
        if retry_after_s is not None:
            return retry_after_s
        return min(self.backoff_s * 2**attempt, self.max_backoff_s)


def call_with_retries(
    attempt: Callable[[float], T],
    *,
    policy: RetryPolicy,
    deadline: float,
    budget_s: float,
    request_timeout_s: float,
    failed: str,
    deadline_name: str,
    on_failure: Callable[[int, str], None] | None = None,
    on_success: Callable[[int, float], None] | None = None,
) -> T:
    """Run ``attempt(timeout_s)`` until it returns, retrying :class:`Retryable` failures within ``deadline``.

    Each attempt gets ``timeout_s = min(request_timeout_s, time left)``; no attempt starts
    after the deadline and no pause runs past it.

    Args:
        attempt: one request; returns the result, raises :class:`Retryable`, or raises
            ``ProviderError`` (not retried, propagated as is).
        policy: retries and back-off.
        deadline: the overall deadline, a ``time.monotonic()`` value (several calls may share it).
        budget_s: the deadline's length in seconds, for the message.
        request_timeout_s: the cap of one attempt, seconds.
        failed: who failed, for ``"<failed> failed after N attempts: <reason>"``.
        deadline_name: for ``"<deadline_name> deadline of B s exceeded (<reason>)"``.
        on_failure: called as ``on_failure(attempt_number, reason)`` after each failed attempt (logging).
        on_success: called as ``on_success(attempt_number, elapsed_ms)`` before returning (logging).

    Returns:
        What ``attempt`` returned.

    Raises:
        ProviderError: from ``attempt``; after the last retry; or when the deadline passed.
    """
    last_reason = "no attempt made"
    for number in range(policy.max_retries + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        started = time.monotonic()
        try:
            result = attempt(min(request_timeout_s, remaining))
        except Retryable as exc:
            last_reason, retry_after = exc.reason, exc.retry_after_s
        else:
            if on_success is not None:
                on_success(number + 1, (time.monotonic() - started) * 1000)
            return result
        if on_failure is not None:
            on_failure(number + 1, last_reason)
        if number == policy.max_retries:
            raise ProviderError(f"{failed} failed after {number + 1} attempts: {last_reason}")
        time.sleep(max(0.0, min(policy.delay_s(number, retry_after), deadline - time.monotonic())))
    raise ProviderError(f"{deadline_name} deadline of {budget_s:g} s exceeded ({last_reason})")
