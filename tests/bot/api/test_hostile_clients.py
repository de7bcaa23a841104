"""The HTTP API against hostile clients: headers and bodies no well-behaved client sends."""
from __future__ import annotations

import asyncio
import json
from urllib.parse import urlsplit

from slack_fake import ADMIN_TOKEN


async def raw_request(bot, request: bytes) -> tuple[int, bytes]:
    """Send ``request`` as is (aiohttp's client will not send a header that is not text) → (status, body)."""
    url = urlsplit(bot.base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(request)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def test_a_bearer_token_that_is_not_utf8_is_a_401_not_a_500(make_bot):
    """``Authorization: Bearer \\xff\\xfe`` reached the server as surrogates, and encoding them to compare
    with the token raised UnicodeEncodeError: a plain-text 500 and a traceback in the log, on every route."""
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    for method, path, body in (("GET", "/api/documents", b""), ("GET", "/api/admin/errors", b""),
                               ("GET", "/api/logs?include_stack=1", b""), ("POST", "/api/ask", b'{"question": "q"}')):
        status, answer = await raw_request(bot, (
            f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n").encode() + b"Authorization: Bearer \xff\xfe\r\n\r\n" + body)
        assert status == (403 if "include_stack" in path else 401), (path, answer)
        assert json.loads(answer)["error"] in ("unauthorized", "forbidden"), path
