"""The documents API, under the admin token (``ADMIN_API_TOKEN``; 404 while it is unset, like ``/api/admin/*``):

    POST   /api/documents         {"title", "text", "metadata"?, "repo"?} → 201 {"id", "repo"}
                                  (no "repo": a global document, searched with every repository)
    GET    /api/documents         ?repo=NAME → {"documents": [{"id", "title", "preview" (100 characters),
                                  "length", "metadata", "created_at", "repo", …}]}
    GET    /api/documents/{id}    the document with its "text"; 404 when unknown
    DELETE /api/documents/{id}    {"deleted": 1}; 404 when unknown
    DELETE /api/documents         ?repo=NAME → {"deleted": n}: that repository's own documents, or every one
                                  (without the parameter; an empty ``?repo=`` is a 400, not "every one")

Each route converts the request and calls :class:`bot.documents.DocumentService` (the one the CLI's
``slackzilla docs`` and the Slack shortcut use) in a worker thread. Errors are
``{"error": code, "message": sentence}``: 400 bad input, 401 a missing or wrong token, 404 unknown,
413 over the size cap (``[documents] max_chars``) or a body over :data:`MAX_DOCUMENT_BODY_BYTES`,
503 when the index cannot be written: ``index_busy`` (with ``Retry-After``) while an index update holds it,
``index_unavailable`` when the disk is full or read-only. Nothing was changed then.
"""
from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from bot.api.bodies import BodyTooLargeError, read_json
from bot.api.exposure import bearer_ok
from rag.documents import DocumentError, DocumentTooLargeError, DocumentWriteError
from rag.errors import UserError

__all__ = ["install_documents_api", "MAX_DOCUMENT_BODY_BYTES"]

log = logging.getLogger(__name__)

DOCS_CONTEXT_KEY: web.AppKey = web.AppKey("slackzilla_documents_context", object)
MAX_DOCUMENT_BODY_BYTES = 1024 * 1024
"""Largest accepted request body (bytes; aiohttp's own default); the document cap is in characters, checked after decoding."""
RETRY_AFTER_S = 30
"""``Retry-After`` of an ``index_busy`` answer: an update's write transaction rarely lasts longer."""


def install_documents_api(app: web.Application, ctx) -> web.Application:
    """Add the routes above to ``app``; ``ctx`` is the :class:`bot.context.BotContext` (``documents``, ``settings``)."""
    app[DOCS_CONTEXT_KEY] = ctx
    app.add_routes([
        web.post("/api/documents", add_document),
        web.get("/api/documents", list_documents),
        web.delete("/api/documents", clear_documents),
        web.get("/api/documents/{doc_id}", show_document),
        web.delete("/api/documents/{doc_id}", remove_document),
    ])
    return app


def _error(status: int, code: str, message: str, **headers) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status, headers=headers or None)


def _not_written(request: web.Request, err: DocumentWriteError) -> web.Response:
    log.warning("%s %s: documents not changed: %s", request.method, request.path[:80], err)
    if err.busy:
        return _error(503, "index_busy", str(err), **{"Retry-After": str(RETRY_AFTER_S)})
    return _error(503, "index_unavailable", str(err))


def _service(request: web.Request):
    """``(DocumentService, None)`` for an authorised request, else ``(None, the error response)``."""
    ctx = request.app[DOCS_CONTEXT_KEY]
    token = ctx.settings.admin_api_token
    if not token:
        return None, _error(404, "not_found", "The documents API is off (ADMIN_API_TOKEN is not set).")
    if not bearer_ok(request.headers, token):
        # as the other routes log theirs; the path as sent (percent-encoded: no line breaks of the client's)
        log.info("refused %s %s: unauthorized", request.method, request.rel_url.raw_path[:80])
        return None, _error(401, "unauthorized", "A valid bearer token (ADMIN_API_TOKEN) is required.",
                            **{"WWW-Authenticate": 'Bearer realm="slackzilla"'})
    if ctx.documents is None:
        return None, _error(404, "not_found", "Documents are not available in this process.")
    return ctx.documents, None


def _repo(request: web.Request) -> tuple[str | None, web.Response | None]:
    """``(?repo=NAME or None, None)``, or ``(None, a 400)`` for an empty ``?repo=``: leaving a repository out
    means every one, so ``DELETE /api/documents?repo=$REPO`` with the variable unset must not mean that."""
    if "repo" not in request.query:
        return None, None
    repo = request.query["repo"]
    if not repo.strip():
        return None, _error(400, "bad_request", "The repo parameter is empty: name a repository, or leave the "
                                                "parameter out for every repository.")
    return repo, None


async def add_document(request: web.Request) -> web.Response:
    docs, refused = _service(request)
    if refused is not None:
        return refused
    try:
        body = await read_json(request, limit=MAX_DOCUMENT_BODY_BYTES)
    except BodyTooLargeError as err:
        return _error(413, "too_large", str(err))
    except ValueError:  # not UTF-8, not JSON
        return _error(400, "bad_request", 'The body must be JSON like {"title": "...", "text": "..."}.')
    if not isinstance(body, dict):
        return _error(400, "bad_request", 'The body must be a JSON object with "title" and "text".')
    unknown = sorted(set(body) - {"title", "text", "metadata", "repo"})
    if unknown:
        return _error(400, "bad_request", f"Unknown field(s): {', '.join(unknown)[:200]}.")
    title, text, metadata, repo = body.get("title"), body.get("text"), body.get("metadata"), body.get("repo")
    if not isinstance(title, str) or not isinstance(text, str):
        return _error(400, "bad_request", '"title" and "text" must be strings.')
    if metadata is not None and not isinstance(metadata, dict):
        return _error(400, "bad_request", '"metadata" must be a JSON object.')
    if repo is not None and not isinstance(repo, str):
        return _error(400, "bad_request", '"repo" must be a repository name.')
    try:
        stored = await asyncio.to_thread(docs.add, title, text, metadata=metadata, repo=repo)
    except DocumentTooLargeError as err:
        return _error(413, "too_large", str(err))
    except DocumentWriteError as err:
        return _not_written(request, err)
    except UserError as err:  # DocumentError, UnknownDocumentRepositoryError
        return _error(400, "bad_request", str(err))
    log.info("document %s added (%d characters, repo %s)", stored.document.id, len(stored.document.text),
             stored.repo or "all")
    return web.json_response({"id": stored.document.id, "repo": stored.repo}, status=201)


async def list_documents(request: web.Request) -> web.Response:
    docs, refused = _service(request)
    if refused is not None:
        return refused
    repo, refused = _repo(request)
    if refused is not None:
        return refused
    try:
        found = await asyncio.to_thread(docs.list, repo=repo)
    except UserError as err:  # an unknown repository
        return _error(400, "bad_request", str(err))
    return web.json_response({"documents": [d.to_json() for d in found]})


async def show_document(request: web.Request) -> web.Response:
    docs, refused = _service(request)
    if refused is not None:
        return refused
    found = await asyncio.to_thread(docs.get, request.match_info["doc_id"])
    if found is None:
        return _error(404, "not_found", "There is no document with that id.")
    return web.json_response(found.to_json(full=True))


async def remove_document(request: web.Request) -> web.Response:
    docs, refused = _service(request)
    if refused is not None:
        return refused
    try:
        removed = await asyncio.to_thread(docs.remove, request.match_info["doc_id"])
    except DocumentWriteError as err:
        return _not_written(request, err)
    if not removed:
        return _error(404, "not_found", "There is no document with that id.")
    log.info("document %s removed", request.match_info["doc_id"][:40])
    return web.json_response({"deleted": 1})


async def clear_documents(request: web.Request) -> web.Response:
    docs, refused = _service(request)
    if refused is not None:
        return refused
    repo, refused = _repo(request)
    if refused is not None:
        return refused
    try:
        count = await asyncio.to_thread(docs.clear, repo=repo)
    except DocumentWriteError as err:
        return _not_written(request, err)
    except UserError as err:  # an unknown repository
        return _error(400, "bad_request", str(err))
    log.info("documents cleared: %d (repo %s)", count, repo or "all")
    return web.json_response({"deleted": count})
