"""Reading a request's JSON body under a byte cap, whatever its framing.

A ``Content-Length`` over the cap is refused before anything is read; a chunked body (no
``Content-Length``) is read as it arrives and refused as soon as it passes the cap. aiohttp's own
``client_max_size`` (1 MiB, a plain-text 413) is not relied on: the routes' caps differ from it
and their errors are JSON (``{"error": "too_large", "message": …}``).

    try:
        body = await read_json(request, limit=MAX_QUESTION_BODY_BYTES)
    except BodyTooLargeError: ...        # 413
    except ValueError: ...               # 400: not UTF-8, not JSON, or not text
"""
from __future__ import annotations

import json

from aiohttp import web

__all__ = ["BodyTooLargeError", "read_json"]

_READ_CHUNK = 64 * 1024


class BodyTooLargeError(ValueError):
    """The body has more than ``limit`` bytes (``str()`` says so in one sentence)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"The body is larger than {limit} bytes.")
        self.limit = limit


async def read_json(request: web.Request, *, limit: int):
    """The body parsed as JSON (any JSON value).

    Args:
        request: the aiohttp request; its body is consumed.
        limit: the most bytes accepted.

    Raises:
        BodyTooLargeError: more than ``limit`` bytes (by ``Content-Length`` or as read).
        ValueError: the body is not UTF-8 (``UnicodeDecodeError``), not JSON (``json.JSONDecodeError``; ``NaN``
            and ``Infinity`` are not JSON either), nested too deeply for the parser, or holds a string with a
            lone surrogate (``"\\ud800"``: JSON syntax, but no text; ``UnicodeEncodeError``).
    """
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLargeError(limit)
    parts: list[bytes] = []
    size = 0
    async for data in request.content.iter_chunked(_READ_CHUNK):
        size += len(data)
        if size > limit:
            raise BodyTooLargeError(limit)
        parts.append(data)
    try:
        value = json.loads(b"".join(parts).decode("utf-8"), parse_constant=_not_json)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # every string (keys too) is text
        return value
    except RecursionError:  # nested deeper than Python's recursion limit ("[[[[…")
        raise ValueError("the JSON is nested too deeply") from None


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")
