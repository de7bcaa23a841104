"""The embeddings stream: vectors for chunks, kept in the index, searched by cosine.

Each chunk is embedded as ``"<path>\\n<first EMBED_TEXT_CHARS chars>"`` (the
path helps: measured on the dev set, MRR@10 0.68 → 0.73 for vectors alone;
MiniLM reads 256 word pieces, about 1,000 characters, so longer text would be
cut by the model anyway). Vectors are keyed by a hash of exactly that text and
by the model name (``chunk_vectors``): unchanged chunks are never re-embedded,
identical chunks share a vector, and a model change finds nothing under the
new name, so everything is re-embedded.

Embedding runs after the lexical index is committed, in batches that each
commit (bumping ``meta.vectors_version``, not the generation), so the bot
answers with BM25 meanwhile and a provider failure leaves what was stored.
Search is numpy brute force over the current model's vectors (see
:mod:`rag.store.vectors` for its cost), cached per (generation, vectors_version).
"""
from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rag.providers.embeddings import EmbeddingProvider
from rag.errors import ProviderError
from rag.store import queries
from rag.store.index import Index
from rag.store.vectors import EmbedReport, VectorMatrix, embed_missing, load_vectors, prune_vectors, store_vectors, vector_hashes

__all__ = ["EMBED_TEXT_CHARS", "VectorStream", "VectorHit", "embed_key", "embed_text", "safe_query_vector",
           "safe_search", "above_floor", "top_margin"]

log = logging.getLogger(__name__)

EMBED_TEXT_CHARS = 1200
QUERY_CACHE_SIZE = 256
QUERY_EMBED_DEADLINE_S = 2.0
"""A question's embedding must not hold up an answer longer than this (then: BM25 only)."""


def embed_text(path: str, text: str) -> str:
    """The text sent to the model for one chunk: its path, a newline, then its start."""
    return f"{path}\n{text[:EMBED_TEXT_CHARS]}"


def embed_key(path: str, text: str) -> str:
    """Content key of a chunk's vector: BLAKE2b-128 of :func:`embed_text`."""
    return hashlib.blake2b(embed_text(path, text).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def top_margin(hits: list["VectorHit"], *, depth: int = 10) -> float:
    """Cosine of the best hit minus that of the ``depth``-th next distinct one.

    A query-performance signal: a question the repository really answers has a
    best chunk that stands out from the rest. With fewer than ``depth + 1``
    distinct values (a tiny repository) the last one is the reference; with
    fewer than 3 there is no signal (0.0).
    """
    sims = sorted({h.similarity for h in hits}, reverse=True)
    if len(sims) < 3:
        return 0.0
    return sims[0] - sims[min(depth, len(sims) - 1)]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A chunk found by the vector stream: its row id and cosine similarity (-1..1)."""

    chunk_id: int
    similarity: float


class VectorStream:
    """Vectors of one index for one provider; thread-safe.

    Args:
        index: the index whose ``chunk_vectors`` table holds the vectors.
        provider: the embeddings provider (its ``name`` keys the vectors).
    """

    def __init__(self, index: Index, provider: EmbeddingProvider) -> None:
        self.index = index
        self.provider = provider
        self._lock = threading.Lock()
        self._cache_key: tuple | None = None
        self._matrix: VectorMatrix = VectorMatrix.empty()
        self._ids_by_key: dict[str, list[int]] = {}
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def has_vectors(self) -> bool:
        """Whether any vector of this model is stored (no vectors: no need to embed questions)."""
        with self.index.read() as conn:
            return queries.has_model_vectors(conn, self.model)

    def embed_query(self, question: str) -> np.ndarray:
        """The question's vector; the last :data:`QUERY_CACHE_SIZE` questions are remembered.

        Raises:
            ProviderError: the provider failed.
        """
        with self._lock:
            cached = self._query_vectors.get(question)
            if cached is not None:
                self._query_vectors.move_to_end(question)
                return cached
        embed = getattr(self.provider, "embed_queries", None) or self.provider.embed  # query prefix, if any
        vector = embed([question], deadline_s=QUERY_EMBED_DEADLINE_S)[0]
        with self._lock:
            self._query_vectors[question] = vector
            while len(self._query_vectors) > QUERY_CACHE_SIZE:
                self._query_vectors.popitem(last=False)
        return vector

    @property
    def model(self) -> str:
        """The provider's model name (the vectors' key)."""
        return self.provider.name

    def _chunk_keys(self, conn: sqlite3.Connection) -> dict[str, list[int]]:
        keys: dict[str, list[int]] = {}
        for chunk_id, path, text in queries.chunk_ids_paths_texts(conn):
            keys.setdefault(embed_key(path, text), []).append(chunk_id)
        return keys

    def pending(self) -> int:
        """Number of distinct chunk texts that still need a vector for this model."""
        with self.index.read() as conn:
            keys = self._chunk_keys(conn)
            have = vector_hashes(conn, model=self.model)
        return len(set(keys) - have)

    def embed_pending(self, *, batch_size: int = 32, should_stop: Callable[[], bool] | None = None) -> EmbedReport:
        """Embed every chunk that has no vector yet; each batch commits on its own.

        Vectors of other models and of chunks no longer indexed are pruned first.
        A provider failure is recorded in the returned report (``error``), never raised.
        """
        keys: set[str] = set()
        texts: dict[str, str] = {}
        with self.index.read() as conn:
            for path, text in queries.chunk_paths_texts(conn):
                key = embed_key(path, text)
                if key not in texts:
                    keys.add(key)
                    texts[key] = embed_text(path, text)
        with self.index.write(bump="vectors_version") as conn:
            pruned = prune_vectors(conn, keep_model=self.model, live_hashes=keys)
            have = vector_hashes(conn, model=self.model)
        if pruned:
            log.info("pruned %d stale vectors", pruned)

        def store(pairs: list[tuple[str, np.ndarray]]) -> None:
            with self.index.write(bump="vectors_version") as wconn:
                store_vectors(wconn, model=self.model, pairs=pairs)

        report = embed_missing(provider=self.provider, chunk_hashes=sorted(keys), have=have,
                               fetch_texts=lambda hs: [texts[h] for h in hs], store=store,
                               batch_size=batch_size, should_stop=should_stop)
        log.info("embedding: planned=%d embedded=%d seconds=%.1f error=%s",
                 report.planned, report.embedded, report.seconds, report.error)
        return report

    def _load(self, conn: sqlite3.Connection) -> tuple[VectorMatrix, dict[str, list[int]]]:
        generation, vectors_version = queries.content_versions(conn)
        key = (generation, vectors_version, self.model)
        with self._lock:
            if key != self._cache_key:
                self._matrix = load_vectors(conn, model=self.model)
                self._ids_by_key = self._chunk_keys(conn)
                self._cache_key = key
            return self._matrix, self._ids_by_key

    def search(self, conn: sqlite3.Connection, query: np.ndarray, *, k: int) -> list[VectorHit]:
        """The ``k`` chunks most similar to the question vector ``query`` (from :meth:`embed_query`),
        inside the caller's read transaction. Returns ``[]`` when no vector is stored yet."""
        matrix, ids_by_key = self._load(conn)
        if len(matrix) == 0:
            return []
        hits: list[VectorHit] = []
        for key, similarity in matrix.top_k(query, k=k):
            hits.extend(VectorHit(chunk_id, similarity) for chunk_id in ids_by_key.get(key, ()))
        return hits[: k * 2]


def safe_query_vector(stream: VectorStream | None, question: str) -> np.ndarray | None:
    """The question's vector, or ``None`` (logged) without a stream or when the provider fails.

    Call it before opening the read transaction: embedding may take up to
    :data:`QUERY_EMBED_DEADLINE_S`.
    """
    if stream is None or not stream.has_vectors():
        return None
    try:
        return stream.embed_query(question)
    except ProviderError as exc:
        log.warning("vector search unavailable, BM25 only: %s", exc)
        return None


def safe_search(stream: VectorStream | None, conn: sqlite3.Connection, query: np.ndarray | None, *,
                k: int) -> list[VectorHit]:
    """:meth:`VectorStream.search` for a vector from :func:`safe_query_vector`; ``[]`` without one."""
    if stream is None or query is None:
        return []
    return stream.search(conn, query, k=k)


def above_floor(hits: list[VectorHit], ratio: float) -> list[VectorHit]:
    """Hits whose cosine is at least ``ratio`` × the best one's (all of them for ``ratio`` ≤ 0)."""
    if not hits or ratio <= 0:
        return hits
    floor = max(h.similarity for h in hits) * ratio
    return [h for h in hits if h.similarity >= floor]
