"""Embedding providers: one small interface, three implementations.

The semantic retrieval stream needs one operation, "turn these texts into unit
vectors", and it must not care where the vectors come from:

    EmbeddingProvider            the protocol (``name``, ``dim``, ``embed``; optional ``embed_queries``)
    ├── OpenAIEmbeddings         any OpenAI-compatible ``/embeddings`` endpoint
    │                            (``EMBEDDINGS_URL`` / ``_API_KEY`` / ``_MODEL`` / ``_BATCH_SIZE`` / ``_TIMEOUT_S``)
    ├── OnnxEmbeddings           a sentence-embedding ONNX export on disk, onnxruntime + tokenizers
    │                            (``EMBEDDINGS_LOCAL_PATH``, or the packaged int8 all-MiniLM-L6-v2
    │                            of the ``local-embeddings`` extra: no PyTorch)
    └── LocalEmbeddings          a sentence-transformers model directory run by PyTorch
                                 (the ``local-embeddings-torch`` extra)

The two local ones live in :mod:`rag.providers.local_embeddings` (importable from here too).
``build_embeddings`` picks one from an :class:`rag.config.EmbeddingsConfig`, or
returns ``None``: then retrieval is BM25 + structure only and nothing else changes.

Contract shared by every provider:

* ``embed(texts)`` returns a C-contiguous ``float32`` array of shape
  ``(len(texts), dim)`` whose rows have L2 norm 1 (so a dot product is the
  cosine similarity); an empty input gives shape ``(0, dim)``. ``embed`` is for
  passages (chunks); ``embed_queries`` (same shape), when a provider has it, is for
  questions: models trained with prefixes (e5's ``query: `` / ``passage: ``) get
  them from ``EMBEDDINGS_QUERY_PREFIX`` / ``EMBEDDINGS_PASSAGE_PREFIX`` (:class:`Prefixes`).
* Every failure is a :class:`rag.errors.ProviderError` whose message is one
  line, user-facing, and never contains the texts or the API key.
* ``name`` identifies the model (``openai:<model>``, ``local:<label>@<fp>``, plus
  ``+p<hash>`` with a passage prefix); stored vectors are keyed by it, so a model
  change re-embeds everything.

Why our own retry loop instead of the SDK's ``max_retries``: the SDK retries
each request with its own timeout, so three attempts can take three times the
deadline. Here the SDK runs with ``max_retries=0`` and the retryable failures
(connection errors, timeouts, HTTP 408/409/429/5xx, honouring ``Retry-After``)
are retried by :func:`rag.providers.base.call_with_retries`, the loop the
reranker uses too, while an overall per-call deadline holds. A request whose
inputs are refused (HTTP 400/413/422) raises :class:`~rag.errors.InputRejectedError`;
the embedding loop (:func:`rag.store.vectors.embed_missing`) then splits the batch in
halves down to the one text refused, which is left without a vector and logged with
the provider's reason, so one bad text never costs its batch their vectors.

Importing this module never imports onnxruntime, torch or sentence-transformers: the
local providers import them on their first ``embed`` call.
"""
from __future__ import annotations

import base64
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # numpy is imported when texts are embedded (choosing no provider needs none)
    import numpy as np

from rag.config import DEFAULT_EMBEDDINGS_BATCH_SIZE, DEFAULT_EMBEDDINGS_TIMEOUT_S, EmbeddingsConfig
from rag.errors import InputRejectedError, ProviderError
from rag.providers.embedding_base import EmbeddingProvider, Prefixes, normalise_rows
from rag.providers.base import (Retryable, RetryPolicy, call_with_retries, connect_reason,
                                 error_detail, one_line, provider_base_url, scrub, status_reason, timeout_reason)

__all__ = [
    "EmbeddingProvider", "Prefixes", "OpenAIEmbeddings", "OnnxEmbeddings", "LocalEmbeddings", "build_embeddings",
    "local_extra_installed", "torch_extra_installed", "normalise_rows", "LOCAL_EXTRA_HINT", "TORCH_EXTRA_HINT",
    "DEFAULT_OPENAI_MODEL", "DEFAULT_OPENAI_BATCH_SIZE", "DEFAULT_LOCAL_BATCH_SIZE",
    "DEFAULT_REQUEST_TIMEOUT_S", "DEFAULT_DEADLINE_S", "DEFAULT_MAX_RETRIES",
]

log = logging.getLogger(__name__)

INPUT_REJECTED_STATUS = frozenset({400, 413, 422})   # the inputs were refused, not the request: InputRejectedError
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_BATCH_SIZE = DEFAULT_EMBEDDINGS_BATCH_SIZE   # texts per /embeddings request (EMBEDDINGS_BATCH_SIZE)
DEFAULT_REQUEST_TIMEOUT_S = DEFAULT_EMBEDDINGS_TIMEOUT_S    # one HTTP attempt (EMBEDDINGS_TIMEOUT_S)
DEFAULT_DEADLINE_S = 120.0              # one embed() call, all batches and retries included
DEFAULT_MAX_RETRIES = 3                 # extra attempts per batch after the first
DEFAULT_BACKOFF_S = 0.5                 # first retry delay, doubled each attempt ...
MAX_BACKOFF_S = 8.0                     # ... up to this (same shape as the openai SDK)
_LOCAL_NAMES = frozenset({"OnnxEmbeddings", "LocalEmbeddings", "local_extra_installed", "torch_extra_installed",
                          "LOCAL_EXTRA_HINT", "TORCH_EXTRA_HINT", "DEFAULT_LOCAL_BATCH_SIZE"})


def __getattr__(name: str):  # PEP 562: the local providers, importable from here, loaded on first use
    if name in _LOCAL_NAMES:
        from rag.providers import local_embeddings

        return getattr(local_embeddings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- OpenAI-compatible



class OpenAIEmbeddings(Prefixes):
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Texts are sent in batches of ``batch_size``; rows come back in input order
    (the response's ``index`` field is honoured) and are L2-normalised here, so
    providers that do not normalise behave like those that do.

    Example::

        provider = OpenAIEmbeddings(base_url="https://api.openai.com/v1",
                                    api_key=key, model="text-embedding-3-small")
        vectors = provider.embed(["how are routes matched?"])   # (1, 1536) float32

    Args:
        base_url: endpoint root; a trailing ``/`` or ``/embeddings`` is dropped.
        api_key: bearer key, or ``None`` for servers without auth (a placeholder
            is sent; ``OPENAI_API_KEY`` from the environment is never used, so a
            key meant for OpenAI cannot leak to another host).
        model: model name sent with each request; part of ``name``.
        batch_size: texts per request (≥ 1).
        request_timeout_s: timeout of one HTTP attempt, seconds.
        deadline_s: default overall deadline of one ``embed`` call, seconds.
        max_retries: extra attempts for a retryable failure of one batch.
        encoding_format: ``"float"`` (default, widest server support) or ``"base64"``.
        query_prefix, passage_prefix: put before questions / chunks (:class:`Prefixes`).

    Raises:
        ProviderError: bad ``base_url`` (at construction); any failure in ``embed``.
    """

    def __init__(self, *, base_url: str, api_key: str | None = None, model: str = DEFAULT_OPENAI_MODEL,
                 batch_size: int = DEFAULT_OPENAI_BATCH_SIZE,
                 request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float = DEFAULT_DEADLINE_S,
                 max_retries: int = DEFAULT_MAX_RETRIES, encoding_format: str = "float",
                 query_prefix: str = "", passage_prefix: str = "") -> None:
        import openai  # a core dependency; imported here to keep module import light

        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if encoding_format not in ("float", "base64"):
            raise ValueError("encoding_format must be 'float' or 'base64'")
        self.base_url = provider_base_url(base_url, suffix="embeddings", variable="EMBEDDINGS_URL",
                                          example="https://api.openai.com/v1")
        self.model = model
        super().__init__(query_prefix=query_prefix, passage_prefix=passage_prefix)
        self.name = self.prefixed_name(f"openai:{model}")
        self.dim: int | None = None
        self.batch_size = batch_size
        self.request_timeout_s = request_timeout_s
        self.deadline_s = deadline_s
        self.max_retries = max(0, max_retries)
        self.retry = RetryPolicy(max_retries=self.max_retries, backoff_s=DEFAULT_BACKOFF_S, max_backoff_s=MAX_BACKOFF_S)
        self.encoding_format = encoding_format
        self._openai = openai
        self._api_key = api_key or None
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "no-key",
                                     timeout=request_timeout_s, max_retries=0)

    def close(self) -> None:
        """Close the underlying HTTP connection pool (also on leaving a ``with`` block)."""
        self._client.close()

    def __enter__(self) -> OpenAIEmbeddings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIEmbeddings(base_url={self.base_url!r}, model={self.model!r})"

    def _embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed ``texts`` (see the module contract), ``batch_size`` per request.

        Args:
            texts: strings to embed (prefixes already added); an empty string is sent as ``" "``
                because OpenAI rejects empty inputs.
            deadline_s: overall deadline for this call (default ``self.deadline_s``).

        Returns:
            float32 array ``(len(texts), dim)`` with unit rows.

        Raises:
            InputRejectedError: the endpoint refused a request's inputs (HTTP 400/413/422); the
                caller may split the batch (:func:`rag.store.vectors.embed_missing` does).
            ProviderError: HTTP error, timeout, deadline exceeded, malformed or
                inconsistent response (wrong count, ragged or non-finite vectors,
                dimension change between batches).
        """
        import numpy as np

        texts = [t if t else " " for t in texts]
        budget = self.deadline_s if deadline_s is None else deadline_s
        deadline = time.monotonic() + budget
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            parts.append(self._embed_batch(batch, deadline=deadline, budget=budget))
        return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    def _embed_batch(self, batch: list[str], *, deadline: float, budget: float) -> np.ndarray:
        openai = self._openai
        secrets = [s for s in (self._api_key, *batch) if s and s.strip()]  # never quoted back in a reason

        def attempt(timeout: float) -> np.ndarray:
            try:
                response = self._client.embeddings.create(
                    input=batch,
                    model=self.model,
                    encoding_format=self.encoding_format,  # type: ignore[arg-type]
                    timeout=timeout,
                )
            except openai.APIStatusError as exc:
                reason = status_reason(exc.status_code, error_detail(getattr(exc, "body", None)), secrets)
                if not self.retry.retryable(exc.status_code):
                    error = InputRejectedError if exc.status_code in INPUT_REJECTED_STATUS else ProviderError
                    raise error(f"embeddings provider refused the request: {reason}") from exc
                headers = getattr(getattr(exc, "response", None), "headers", None)
                raise Retryable(reason, self.retry.retry_after_s(headers.get("retry-after") if headers else None))
            except openai.APITimeoutError:
                raise Retryable(timeout_reason(timeout)) from None
            except openai.APIConnectionError as exc:
                raise Retryable(connect_reason(self.base_url, exc.__cause__ or exc, secrets)) from None
            except openai.OpenAIError as exc:
                raise ProviderError(f"embeddings provider failed: {one_line(scrub(str(exc), secrets))}") from exc
            except ValueError as exc:  # the SDK lets a non-JSON 200 body raise json.JSONDecodeError
                raise ProviderError(
                    f"embeddings provider returned a malformed response ({one_line(exc, 100)})") from exc
            return self._parse(response, expected=len(batch))

        return call_with_retries(
            attempt, policy=self.retry, deadline=deadline, budget_s=budget,
            request_timeout_s=self.request_timeout_s, failed="embeddings provider", deadline_name="embeddings",
            on_failure=lambda number, reason: log.warning(
                "embeddings batch failed: model=%s n=%d attempt=%d reason=%s", self.model, len(batch), number, reason),
            on_success=lambda number, ms: log.debug(
                "embeddings batch ok: model=%s n=%d attempt=%d ms=%.0f", self.model, len(batch), number, ms),
        )

    def _parse(self, response: Any, *, expected: int) -> np.ndarray:
        import numpy as np

        try:
            items = sorted(response.data, key=lambda item: item.index)
            if len(items) != expected or [item.index for item in items] != list(range(expected)):
                raise ProviderError(
                    f"embeddings provider returned {len(items)} vectors for {expected} texts")
            rows = [_decode_embedding(item.embedding) for item in items]
            matrix = np.asarray(rows, dtype=np.float32)
        except ProviderError:
            raise
        except (AttributeError, TypeError, ValueError) as exc:
            raise ProviderError(f"embeddings provider returned a malformed response ({one_line(exc, 100)})") from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise ProviderError("embeddings provider returned vectors of inconsistent length")
        if not np.isfinite(matrix).all():
            raise ProviderError("embeddings provider returned non-finite numbers")
        if self.dim is None:
            self.dim = int(matrix.shape[1])
        elif matrix.shape[1] != self.dim:
            raise ProviderError(
                f"embeddings provider changed dimension from {self.dim} to {matrix.shape[1]}")
        return normalise_rows(matrix)


def _decode_embedding(value: Any) -> Any:
    """A float list as is; a base64 string (some servers ignore ``encoding_format``) as float32."""
    import numpy as np

    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4")
    return value


# --------------------------------------------------------------------------- selection


def build_embeddings(config: EmbeddingsConfig, *, threads: int | None = None) -> EmbeddingProvider | None:
    """The embeddings provider described by ``config`` (see :mod:`rag.config`), or ``None``.

    ``threads``: the caller's default for an ONNX model's intra-op threads when
    ``config.local_threads`` (``EMBEDDINGS_LOCAL_THREADS``) is unset; ``None``:
    :data:`rag.providers.local_embeddings.DEFAULT_ONNX_THREADS` (one: what the bot wants, its
    answers sharing the machine). A one-off job that embeds a whole index (``slackzilla index``,
    ``eval``) passes one per CPU: eslint 9.39.5's chunks with the packaged model on an idle 2-core
    machine, 11.5 chunks/s with one thread, 20 with two.

    Order: ``mode == "off"`` → ``None``; ``url`` → :class:`OpenAIEmbeddings` (with
    ``api_key``, ``model`` defaulting to ``DEFAULT_OPENAI_MODEL``, ``batch_size``, ``timeout_s``);
    ``local_path`` → :class:`OnnxEmbeddings` when it holds an ONNX export with its
    ``tokenizer.json`` (unless onnxruntime is missing and sentence-transformers is there), else
    :class:`LocalEmbeddings` (PyTorch); the ``local-embeddings`` extra installed →
    :class:`OnnxEmbeddings` on the packaged int8 all-MiniLM-L6-v2; the ``local-embeddings-torch``
    extra installed → :class:`LocalEmbeddings` on its packaged model; otherwise ``None``
    (retrieval is BM25 + structure only). Every provider gets ``query_prefix`` and ``passage_prefix``.

    Imports neither onnxruntime nor torch: local models load on their first ``embed``.

    Example::

        provider = build_embeddings(EmbeddingsConfig.from_env(os.environ))

    Raises:
        ProviderError: a ``url`` that is not http(s) or a ``local_path`` that is not a
            directory (possible only for a hand-built config: the parser checks both).
    """
    if config.mode == "off":
        return None
    prefixes = {"query_prefix": config.query_prefix, "passage_prefix": config.passage_prefix}
    if config.url:
        return OpenAIEmbeddings(base_url=config.url, api_key=config.api_key,
                                model=config.model or DEFAULT_OPENAI_MODEL, batch_size=config.batch_size,
                                request_timeout_s=config.timeout_s, **prefixes)
    from rag.providers import local_embeddings as local

    onnx_threads = {"num_threads": config.local_threads or threads or local.DEFAULT_ONNX_THREADS}
    if config.local_path:
        path = Path(config.local_path)
        if not path.is_dir():
            raise ProviderError(f"local embeddings model directory not found: {path}")
        if local.is_onnx_model_dir(path) and (local.onnx_runtime_installed() or not local.torch_extra_installed()):
            return local.OnnxEmbeddings(path=path, **prefixes, **onnx_threads)
        return local.LocalEmbeddings(path=path, **prefixes)
    if local.local_extra_installed():
        return local.OnnxEmbeddings(**prefixes, **onnx_threads)
    if local.torch_extra_installed():
        return local.LocalEmbeddings(**prefixes)
    return None
