"""Helpers shared by the HTTP providers (embeddings, reranker): base-URL checks and one-line reasons."""
from __future__ import annotations

from urllib.parse import urlsplit

from rag.errors import ProviderError

__all__ = ["one_line", "provider_base_url"]


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
