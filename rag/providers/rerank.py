"""Optional reranking of the fused top candidates by a cross-encoder service (off by default).

BM25, vectors and the structure signals pick the candidates; a reranker reads
each candidate *together with* the question and scores how well it answers it,
which is what first-stage retrievers cannot do. It is slow and remote, so only
the fused top ``RetrievalPolicy.rerank_top`` (20) chunks are sent, once per
question, under a short deadline; any failure keeps the fused order.

    Reranker                     the protocol (``name``, ``rerank``)
    └── HttpReranker             the de-facto ``POST {base}/rerank`` JSON API
                                 (Cohere, Jina, Voyage, vLLM, LiteLLM; ``RERANK_URL``
                                 / ``RERANK_API_KEY`` / ``RERANK_MODEL``)

Wire format (Cohere v2 ``/rerank``, mirrored by the others)::

    → {"model": "...", "query": "...", "documents": ["...", ...], "top_n": N}
    ← {"results": [{"index": 0, "relevance_score": 0.93}, ...]}     ("score" accepted too)

Contract:

* ``rerank(query, documents)`` returns one float per document, in input order,
  higher = more relevant; a document the server left out gets ``-inf``.
* Every failure is a :class:`rag.errors.ProviderError` with a one-line message
  that never contains the API key or the query text (server error details are
  reduced to their message fields and scrubbed of both).
* Retries (connection errors, timeouts, HTTP 408/409/429/5xx, honouring a
  numeric ``Retry-After``) happen inside one overall deadline
  (``DEFAULT_DEADLINE_S``): a reranker can delay an answer by that much, never more.
  The loop, the back-off policy and the one-line reasons are the embeddings
  provider's too (:mod:`rag.providers.base`); only the transport differs.

Why the standard library's ``urllib.request`` rather than an HTTP client
package: ``httpx`` is not a dependency of this project (the openai SDK brings
``httpx2``, an implementation detail of the SDK), and one small JSON POST per
question needs no connection pool. Redirects are refused so the bearer key is
never forwarded to another host. ``urlopen``'s timeout bounds each socket
operation, so one attempt is capped at ``min(request_timeout_s, time left)``
per read; a server trickling bytes could overrun the deadline by at most one
such timeout.

The engine's reranking stage, which reorders the top of a ranked candidate
list with a :class:`Reranker`, is :func:`rag.search.rerank.rerank_candidates`.
"""
from __future__ import annotations

import http.client
import json
import logging
import math
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rag.config import RerankConfig
from rag.errors import ProviderError
from rag.providers.base import (Retryable, RetryPolicy, call_with_retries, connect_reason, error_detail,
                                 provider_base_url, status_reason, timeout_reason)

__all__ = [
    "Reranker", "HttpReranker", "build_reranker", "rerank_text",
    "DEFAULT_DEADLINE_S", "DEFAULT_REQUEST_TIMEOUT_S", "DEFAULT_MAX_RETRIES", "DEFAULT_RERANK_TEXT_CHARS",
]

log = logging.getLogger(__name__)

DEFAULT_DEADLINE_S = 5.0            # one rerank() call, retries included: the answer waits this long at most
DEFAULT_REQUEST_TIMEOUT_S = 4.0     # one HTTP attempt (per socket operation, see module docstring)
DEFAULT_MAX_RETRIES = 2             # extra attempts after the first, inside the deadline
DEFAULT_BACKOFF_S = 0.25            # first retry delay, doubled each attempt ...
MAX_BACKOFF_S = 2.0                 # ... up to this, and never past the deadline
DEFAULT_RERANK_TEXT_CHARS = 1500
"""Characters of chunk text sent per document (after the path line). Chunks may hold
3,500; ~1,500 characters of code is ~400–500 tokens, the window of small cross-encoders
(bge-reranker-base: 512 tokens for query + document); larger models read it whole."""
MAX_RESPONSE_BYTES = 1 << 20        # a results list for 20 documents is a few KB


@runtime_checkable
class Reranker(Protocol):
    """What the engine needs from a reranker.

    Attributes:
        name: model identity for logs (``"rerank:<model>"``).
    """

    name: str

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Relevance of each document to ``query``, in input order (higher is better). Raises ``ProviderError``."""
        ...


def rerank_text(path: str, text: str, *, max_chars: int = DEFAULT_RERANK_TEXT_CHARS) -> str:
    """The document sent for one chunk: its path, a newline, then its first ``max_chars`` characters.

    Same shape as :func:`rag.search.vector_stream.embed_text` (the path tells the model what file it reads).
    """
    return f"{path}\n{text[:max_chars]}"



class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would resend the Authorization header to the new location."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 (urllib API)
        return None


class HttpReranker:
    """A reranker behind ``POST {base_url}/rerank`` (Cohere/Jina-style JSON, bearer auth).

    Example::

        reranker = HttpReranker(base_url="https://api.jina.ai/v1", api_key=key,
                                model="jina-reranker-v2-base-multilingual")
        reranker.rerank("how are routes matched?", ["lib/router.js\\n...", "README.md\\n..."])
        # → [0.91, 0.12]

    Args:
        base_url: endpoint root; a trailing ``/`` or ``/rerank`` is dropped.
        api_key: bearer key, or ``None`` for servers without auth (no header sent).
        model: model name sent with each request; omitted when ``None`` (servers
            hosting one model, such as vLLM, use theirs).
        request_timeout_s: timeout of one HTTP attempt, seconds.
        deadline_s: overall deadline of one ``rerank`` call, seconds.
        max_retries: extra attempts after a retryable failure.
        min_score: relevance floor on the service's own scale (``RERANK_MIN_SCORE``): when
            every reranked chunk scores below it, retrieval abstains (nothing really matches;
            a file the question names is still given, alone).
            ``None`` (the default): never abstain on reranker scores. A cross-encoder's scores
            are calibrated per model (Cohere and Jina return 0..1 relevance), so the floor is
            the operator's choice for the model they run.

    Raises:
        ProviderError: bad ``base_url`` (at construction); any failure in ``rerank``.
    """

    def __init__(self, *, base_url: str, api_key: str | None = None, model: str | None = None,
                 request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float = DEFAULT_DEADLINE_S,
                 max_retries: int = DEFAULT_MAX_RETRIES, min_score: float | None = None) -> None:
        self.base_url = provider_base_url(base_url, suffix="rerank", variable="RERANK_URL",
                                          example="https://api.cohere.com/v2")
        self.url = self.base_url + "/rerank"
        self.model = model or None
        self.name = f"rerank:{self.model or 'default'}"
        self.request_timeout_s = request_timeout_s
        self.deadline_s = deadline_s
        self.max_retries = max(0, max_retries)
        self.retry = RetryPolicy(max_retries=self.max_retries, backoff_s=DEFAULT_BACKOFF_S, max_backoff_s=MAX_BACKOFF_S)
        self.min_score = min_score
        self._api_key = api_key or None
        self._opener = urllib.request.build_opener(_NoRedirect)

    def __repr__(self) -> str:  # never shows the key
        return f"HttpReranker(url={self.url!r}, model={self.model!r})"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score ``documents`` against ``query`` (see the module contract).

        Returns:
            One float per document, input order; ``[]`` for no documents (no request).

        Raises:
            ProviderError: HTTP error, timeout, deadline exceeded, or a malformed
                response (not JSON, no ``results`` list, an index out of range or
                repeated, a non-numeric or non-finite score).
        """
        if not documents:
            return []
        body: dict[str, Any] = {"query": query, "documents": list(documents), "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        payload = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        secrets = [s for s in (self._api_key, query, json.dumps(query)[1:-1]) if s]

        def attempt(timeout: float) -> list[float]:
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            try:
                with self._opener.open(request, timeout=timeout) as response:
                    raw = response.read(MAX_RESPONSE_BYTES + 1)
            except urllib.error.HTTPError as exc:
                try:
                    detail = error_detail(exc.read(8192))
                except OSError:
                    detail = ""
                reason = status_reason(exc.code, detail, secrets)
                exc.close()
                if not self.retry.retryable(exc.code):
                    raise ProviderError(f"reranker refused the request: {reason}") from None
                retry_after = exc.headers.get("Retry-After") if exc.headers is not None else None
                raise Retryable(reason, self.retry.retry_after_s(retry_after)) from None
            except (OSError, http.client.HTTPException) as exc:  # URLError and TimeoutError are OSErrors
                cause = getattr(exc, "reason", exc)
                if isinstance(exc, TimeoutError) or isinstance(cause, TimeoutError):
                    raise Retryable(timeout_reason(timeout)) from None
                raise Retryable(connect_reason(self.base_url, cause, secrets)) from None
            return _parse(raw, expected=len(documents))

        return call_with_retries(
            attempt, policy=self.retry, deadline=time.monotonic() + self.deadline_s, budget_s=self.deadline_s,
            request_timeout_s=self.request_timeout_s, failed="reranker", deadline_name="reranker",
            on_failure=lambda number, reason: log.warning(
                "rerank attempt failed: model=%s n=%d attempt=%d reason=%s", self.model, len(documents), number, reason),
            on_success=lambda number, ms: log.debug(
                "rerank ok: model=%s n=%d attempt=%d ms=%.0f", self.model, len(documents), number, ms),
        )


def _parse(raw: bytes, *, expected: int) -> list[float]:
    """``{"results": [{"index", "relevance_score" | "score"}]}`` → scores in input order."""
    if len(raw) > MAX_RESPONSE_BYTES:
        raise ProviderError("reranker returned a malformed response (larger than 1 MiB)")
    try:
        results = json.loads(raw)["results"]
        scores = [-math.inf] * expected
        seen: set[int] = set()
        for item in results:
            index = item["index"]
            value = item["relevance_score"] if "relevance_score" in item else item["score"]
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected or index in seen:
                raise ProviderError(f"reranker returned an invalid document index for {expected} documents")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ProviderError("reranker returned a non-numeric or non-finite score")
            seen.add(index)
            scores[index] = float(value)
    except ProviderError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ProviderError(f"reranker returned a malformed response ({type(exc).__name__})") from None
    if len(seen) < expected:
        log.debug("rerank: server scored %d of %d documents", len(seen), expected)
    return scores


def build_reranker(config: RerankConfig) -> HttpReranker | None:
    """The reranker described by ``config`` (see :mod:`rag.config`), else ``None``.

    Reranking is off by default: with ``config.url`` unset this returns ``None`` and
    retrieval is unchanged.

    Example::

        reranker = build_reranker(RerankConfig.from_env(os.environ))

    Raises:
        ProviderError: ``config.url`` is not an http(s) URL (possible only for a
            hand-built config: the parser checks it).
    """
    if not config.url:
        return None
    return HttpReranker(base_url=config.url, api_key=config.api_key, model=config.model,
                        min_score=config.min_score)
