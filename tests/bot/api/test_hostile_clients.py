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


async def test_json_that_is_not_unicode_text_or_not_strict_json_is_a_400(make_bot):
    r"""A lone surrogate (``"\ud800"``) is valid JSON syntax but no UTF-8 text: the document was refused
    by a UnicodeEncodeError deep in the store (a plain-text 500). ``NaN`` was stored in metadata and every
    later listing answered ``{"a": NaN}``, which is not JSON."""
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
    for payload in (b'{"title": "t", "text": "abc \\ud800 def"}', b'{"title": "\\udfff", "text": "abc"}',
                    b'{"title": "t", "text": "abc", "metadata": {"a": "\\ud800"}}',
                    b'{"title": "t", "text": "abc", "metadata": {"a": NaN}}',
                    b'{"title": "t", "text": "abc", "metadata": {"a": -Infinity}}'):
        async with bot.session.post(bot.base_url + "/api/documents", data=payload, headers=auth) as response:
            assert response.status == 400, payload
            assert (await response.json())["error"] == "bad_request", payload
    async with bot.session.post(bot.base_url + "/api/ask", data=b'{"question": "why \\ud800?", "with_ai": false}',
                                headers=auth) as response:
        assert response.status == 400
    async with bot.session.get(bot.base_url + "/api/documents", headers=auth) as listed:
        assert (await listed.json()) == {"documents": []}


async def test_a_title_with_control_or_direction_characters_is_a_400_naming_the_character(make_bot):
    """A title is one line of plain text, shown in listings, Slack and the terminal. Whitespace runs were
    folded but an escape sequence (ESC [ 31 m), a NUL or a right-to-left override (U+202E, which makes
    "txt.exe" read "exe.txt") was stored and shown as given."""
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    for title, named in (("\x1b[31mDeploy runbook", "U+001B"), ("Deploy\x00runbook", "U+0000"),
                         ("Runbook \u202egnp.exe", "U+202E"), ("\ufeffRunbook", "U+FEFF"),
                         ("Runbook" + "".join(chr(0xE0000 + ord(c)) for c in "ignore prior"), "U+E0069")):
        async with bot.session.post(bot.base_url + "/api/documents", headers=auth,
                                    json={"title": title, "text": "Roll back with the deploy tool."}) as response:
            body = await response.json()
            assert response.status == 400 and body["error"] == "bad_request", title
            assert named in body["message"] and "title" in body["message"], body
    for invisible in ("\u200b", "\u200b\u200c \u2060"):   # nothing visible: no title
        async with bot.session.post(bot.base_url + "/api/documents", headers=auth,
                                    json={"title": invisible, "text": "Roll back."}) as response:
            assert response.status == 400 and "needs a title" in (await response.json())["message"]
    async with bot.session.post(bot.base_url + "/api/documents", headers=auth,
                                json={"title": "Deploy\trunbook\u0085 (v2) — ünïcode 👨‍👩‍👧", "text": "Roll back."}) as response:
        assert response.status == 201
    async with bot.session.get(bot.base_url + "/api/documents", headers=auth) as listed:
        assert [d["title"] for d in (await listed.json())["documents"]] == ["Deploy runbook (v2) — ünïcode 👨‍👩‍👧"]


async def test_secrets_in_a_documents_metadata_are_redacted_before_it_is_stored(make_bot, caplog):
    """The title and text were redacted, the metadata not: a token in it, or a password in its ``url``,
    came back from ``GET /api/documents`` and ``/api/documents/{id}``, and the url was the link posted in
    Slack beside every answer citing the document."""
    import logging

    caplog.set_level(logging.DEBUG)
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    token, password = "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "pa55word-Xy9"
    async with bot.session.post(bot.base_url + "/api/documents", headers=auth, json={
            "title": "Deploy webhook rotation", "text": "Rotate the deploy webhook secret every quarter.",
            "metadata": {"url": f"https://deployer:{password}@ci.example.com/runbook", "token": token,
                         "nested": {"password": "hunter2-hunter2"}, "team": "sre"}}) as created:
        assert created.status == 201
        doc_id = (await created.json())["id"]
    async with bot.session.get(bot.base_url + "/api/documents", headers=auth) as listed:
        listing = await listed.text()
    async with bot.session.get(f"{bot.base_url}/api/documents/{doc_id}", headers=auth) as shown:
        full = await shown.json()
    for secret in (token, password, "hunter2-hunter2"):
        assert secret not in listing and secret not in json.dumps(full) and secret not in caplog.text, secret
    assert full["metadata"]["team"] == "sre" and full["metadata"]["url"].startswith("https://deployer:")
    assert full["redactions"] >= 3  # counted with the title's and text's


async def test_a_document_write_while_an_update_holds_the_index_is_a_503_to_retry(make_bot, caplog, monkeypatch):
    """An index update (``serve`` runs it in another process) holds the index's write lock for its whole
    transaction, more than 30 s when it builds a large repository. A document added, removed or cleared
    meanwhile waited out SQLite's busy timeout and failed with ``database is locked``: a plain-text 500
    and a traceback, with nothing to tell the client it could simply try again."""
    import logging
    import sqlite3

    import rag.store.index

    monkeypatch.setattr(rag.store.index, "BUSY_TIMEOUT_S", 0.2)  # the real 30 s wait, shortened
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    url = bot.base_url + "/api/documents"
    async with bot.session.post(url, headers=auth, json={"title": "Kept", "text": "Stays as it was."}) as created:
        kept = (await created.json())["id"]
    [engine] = bot.context.documents.engines.values()
    updater = sqlite3.connect(engine.index.path, isolation_level=None)  # another process's update
    updater.execute("BEGIN IMMEDIATE")
    try:
        caplog.set_level(logging.INFO)
        for method, target, body in (("POST", url, {"title": "Runbook", "text": "Roll back with the deploy tool."}),
                                     ("DELETE", f"{url}/{kept}", None), ("DELETE", url, None)):
            async with bot.session.request(method, target, headers=auth, json=body) as refused:
                assert refused.status == 503, (method, target, await refused.text())
                assert refused.headers["Retry-After"].isdigit()
                answer = await refused.json()
            assert answer["error"] == "index_busy" and "try again" in answer["message"], answer
        assert "Traceback" not in caplog.text
    finally:
        updater.execute("ROLLBACK")
        updater.close()
    async with bot.session.get(url, headers=auth) as listed:
        assert [d["id"] for d in (await listed.json())["documents"]] == [kept]
    async with bot.session.post(url, headers=auth, json={"title": "Runbook", "text": "Roll back."}) as created:
        assert created.status == 201


async def test_sigterm_during_an_api_answer_ends_its_stream_with_a_reason(slack_fake, bot_repo, tmp_path, caplog,
                                                                          monkeypatch):
    """``slackzilla serve`` stopping (SIGTERM) while ``POST /api/ask`` streamed: Slack's answers were drained,
    the API's not. The answers' loop was closed under it, so the client read "the connection to the model
    provider was lost mid-answer", then a stream cut without its last chunk (no ``done``, no ``error``), and the
    log had "Task was destroyed but it is pending!" and "Event loop is closed" errors."""
    import gc
    import logging

    import aiohttp
    from openai._streaming import SSEDecoder
    from openai_server import FakeOpenAIServer, Reply, chunk

    import bot.server
    from bot.settings import Settings

    monkeypatch.setattr(bot.server, "ASK_DRAIN_S", 0.5)
    words = [chunk({"role": "assistant", "content": "word "})] * 100 + [chunk({}, finish_reason="stop"), "[DONE]"]
    caplog.set_level(logging.INFO)
    async with FakeOpenAIServer() as model:
        model.script(Reply(events=words, gap_s=0.1))  # ten seconds of streaming
        settings = Settings.from_env({
            "SLACK_BOT_TOKEN": "xoxb-test-bot-token", "SLACK_SIGNING_SECRET": "secret", "REPO_PATH": str(bot_repo),
            "RAG_INDEX_PATH": str(tmp_path / "served.sqlite"), "SLACK_API_URL": slack_fake.api_url,
            "HOST": "127.0.0.1", "PORT": "0", "AI_URL": model.base_url, "AI_API_KEY": "sk-test",
            "AI_MODEL": "fake-model", "EMBEDDINGS": "off",
        }, dotenv_path=None)
        server = await bot.server.start(settings)
        stopping = None
        try:
            await asyncio.wait_for(server.startup_task, timeout=20)
            async with aiohttp.ClientSession() as session:
                async with session.post(f"http://127.0.0.1:{server.port}/api/ask",
                                        json={"question": "how is the deploy webhook verified?"}) as response:
                    raw = b""
                    async for line in response.content:
                        raw += line
                        if stopping is None and line.startswith(b"event: token"):
                            stopping = asyncio.ensure_future(server.stop())
        finally:
            await (stopping if stopping is not None else server.stop())
    gc.collect()  # an answer task left pending on the closed answers' loop is reported when collected
    stream = list(SSEDecoder().iter_bytes(iter([raw])))
    assert stream[-1].event == "error" and stream[-1].json()["error"] == "shutting_down", raw[-400:]
    assert not any("lost mid-answer" in e.data for e in stream)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]


async def test_an_empty_repo_parameter_does_not_delete_every_document(make_bot):
    """``DELETE /api/documents?repo=`` (a script's ``?repo=$REPO`` with the variable unset) was read as no
    repository at all and deleted every document of every repository, the global ones included."""
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    url = bot.base_url + "/api/documents"
    for body in ({"title": "Own", "text": "This repository's runbook.", "repo": "repo"},
                 {"title": "Global", "text": "Every repository's on-call rota."}):
        async with bot.session.post(url, headers=auth, json=body) as created:
            assert created.status == 201
    for query in ("?repo=", "?repo=%20", "?repo"):
        for method in ("DELETE", "GET"):
            async with bot.session.request(method, url + query, headers=auth) as refused:
                assert refused.status == 400, (method, query)
                assert "repo" in (await refused.json())["message"], (method, query)
    async with bot.session.get(url, headers=auth) as listed:
        assert sorted(d["title"] for d in (await listed.json())["documents"]) == ["Global", "Own"]


async def test_refused_document_requests_are_logged_without_the_token(make_bot, caplog):
    """The other API routes log each refusal ("refused POST /api/ask: unauthorized"); the documents API
    refused a missing or wrong token silently, so guessing at the admin token left no trace in the log."""
    import logging

    caplog.set_level(logging.INFO)
    bot = await make_bot(ADMIN_API_TOKEN=ADMIN_TOKEN)
    for method, path in (("GET", "/api/documents"), ("DELETE", "/api/documents"), ("DELETE", "/api/documents/abc123")):
        async with bot.session.request(method, bot.base_url + path,
                                       headers={"Authorization": "Bearer guess-0123456789"}) as refused:
            assert refused.status == 401
        assert f"refused {method} {path}: unauthorized" in caplog.text
    assert "guess-0123456789" not in caplog.text and ADMIN_TOKEN not in caplog.text
