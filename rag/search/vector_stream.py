"""The embeddings stream: vectors for chunks, kept in the index, searched by cosine.

Each chunk is embedded with its context, so a vector knows where it lives
(:func:`embed_text`): ``"<path> · <symbol path or Markdown heading>\\n<header>\\n<text>"``
cut to EMBED_TEXT_CHARS characters of header and text (the path helps: measured on the dev
set, MRR@10 0.68 → 0.73 for vectors alone; the symbol path and the enclosing signature tell
the model that a piece of a long function belongs to ``proto.handle``; MiniLM reads 256 word
pieces, about 1,000 characters, so longer text would be cut by the model anyway). Vectors
are keyed by a hash of exactly that text, :data:`EMBED_TEXT_VERSION` and the model name
(``chunk_vectors``): unchanged chunks are never re-embedded, identical chunks share a
vector, and a model or format change finds nothing under the new key, so everything is
re-embedded.

Embedding runs after the lexical index is committed, in batches that each
commit (bumping ``meta.vectors_version``, not the generation), so the bot
answers with BM25 meanwhile and a provider failure leaves what was stored.
Search is exact over the current model's vectors (:class:`rag.store.vectors.VectorMatrix`: an
int8 screen, then a float64 rescoring of the rows it cannot rule out), the matrix cached per
(generation, vectors_version); a question's embedding and search run in a worker thread while
the lexical stage runs (:func:`start_search`).
"""
from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from rag.providers.embeddings import EmbeddingProvider
from rag.errors import ProviderError
from rag.store import queries
from rag.store.index import Index
from rag.store.vectors import EmbedReport, VectorMatrix, embed_missing, load_vectors, prune_vectors, store_vectors, vector_hashes

__all__ = ["EMBED_TEXT_CHARS", "EMBED_TEXT_VERSION", "VectorStream", "VectorHit", "PendingHits", "embed_key",
           "embed_text", "start_search", "above_floor", "top_zscore",
           "DEFAULT_MIN_VECTOR_Z", "SEARCH_THREADS"]

log = logging.getLogger(__name__)

EMBED_TEXT_CHARS = 1200
EMBED_TEXT_VERSION = 2
"""Part of every vector's key: bump when :func:`embed_text` changes, so stored vectors are re-embedded.
2: the symbol path (or heading) and the enclosing signatures of symbol chunks."""
QUERY_CACHE_SIZE = 256
QUERY_EMBED_DEADLINE_S = 2.0
"""A question's embedding must not hold up an answer longer than this (then: BM25 only)."""
SEARCH_THREADS = 4
"""Worker threads that embed questions and search the vectors beside the lexical stage
(:func:`start_search`), shared by every stream of the process."""


def embed_text(path: str, text: str, *, symbol: str | None = None, header: str | None = None,
               heading: str | None = None) -> str:
    """The text sent to the model for one chunk: its context line (the path, then `` · `` and its
    symbol path, or its Markdown heading when it has no symbol), a newline, then the start of
    its header (enclosing signatures, :attr:`rag.types.Chunk.header`) and text, at most
    :data:`EMBED_TEXT_CHARS` characters of them."""
    label = symbol or heading
    context = f"{path} · {label}" if label else path
    body = f"{header}\n{text}" if header else text
    return f"{context}\n{body[:EMBED_TEXT_CHARS]}"


def embed_key(path: str, text: str, *, symbol: str | None = None, header: str | None = None,
              heading: str | None = None) -> str:
    """Content key of a chunk's vector: BLAKE2b-128 of :data:`EMBED_TEXT_VERSION` and :func:`embed_text`."""
    embedded = embed_text(path, text, symbol=symbol, header=header, heading=heading)
    return hashlib.blake2b(f"{EMBED_TEXT_VERSION}\n{embedded}".encode("utf-8", "surrogatepass"),
                           digest_size=16).hexdigest()


DEFAULT_MIN_VECTOR_Z = 2.0
"""A best hit at least this many standard deviations above its neighbours stands out (:func:`top_zscore`).

Two standard deviations, the looser of the usual outlier rules: above the top of an evenly spread
neighbourhood (the best of evenly spaced cosines stands √3 ≈ 1.73 out: nothing stands out), below
where answerable descriptions sit. Measured with MiniLM on the five eval sets (issue 15): the z of
the best hit does not separate answerable questions from ``none`` ones (medians 2.94 and 2.62), and
at 3.0 four answerable descriptions (z 2.28–2.98) that BM25 matched by one or two words went
unanswered, while no ``none`` question of eight or more topical words is that weak lexically
(they name the missing feature, and three or more of their words match)."""


def top_zscore(hits: list["VectorHit"]) -> float:
    """How far the best hit stands above the others: ``(best − mean) / std`` of the distinct cosines.

    A calibrated floor for vector-only evidence: absolute cosines of answerable and
    unanswerable questions overlap (MiniLM gives 0.2–0.6 to both), and every question gets
    neighbours, but a question the repository answers tends to have one chunk that is an
    outlier among its nearest ~50 (the z-score normalises away the model's and the
    corpus's scale). The floor is two standard deviations (:data:`DEFAULT_MIN_VECTOR_Z`).
    It does not separate answerable from unanswerable questions by itself (issue 15, MiniLM on
    the three eval sets: of the 8 ``none`` questions BM25 abstains on, 4 stand out at z 3.2–4.5),
    so it only decides long descriptions (:meth:`rag.search.lexical.Evidence.abstain`).
    Fewer than 3 distinct values, or no spread: 0.0 (no signal).
    """
    sims = sorted({h.similarity for h in hits}, reverse=True)
    if len(sims) < 3:
        return 0.0
    std = float(np.std(sims))
    return 0.0 if std <= 0.0 else (sims[0] - float(np.mean(sims))) / std


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
        self._key_by_id: dict[int, str] = {}

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
        for chunk_id, path, text, heading, symbol, header in queries.chunk_embedding_rows(conn):
            keys.setdefault(embed_key(path, text, symbol=symbol, header=header, heading=heading), []).append(chunk_id)
        return keys

    def pending(self) -> int:
        """Number of distinct chunk texts that still need a vector for this model."""
        with self.index.read() as conn:
            keys = self._chunk_keys(conn)
            have = vector_hashes(conn, model=self.model)
        return len(set(keys) - have)

    def embed_pending(self, *, batch_size: int = 32, should_stop: Callable[[], bool] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> EmbedReport:
        """Embed every chunk that has no vector yet; each batch commits on its own; ``progress(done, planned)``
        after each batch (:func:`rag.store.vectors.embed_missing`).

        Vectors of other models and of chunks no longer indexed are pruned first.
        A provider failure is recorded in the returned report (``error``), never raised.
        """
        keys: set[str] = set()
        texts: dict[str, str] = {}
        with self.index.read() as conn:
            for _, path, text, heading, symbol, header in queries.chunk_embedding_rows(conn):
                key = embed_key(path, text, symbol=symbol, header=header, heading=heading)
                if key not in texts:
                    keys.add(key)
                    texts[key] = embed_text(path, text, symbol=symbol, header=header, heading=heading)
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
                               batch_size=batch_size, should_stop=should_stop, progress=progress)
        log.info("embedding: planned=%d embedded=%d seconds=%.1f error=%s",
                 report.planned, report.embedded, report.seconds, report.error)
        return report

    def _load(self, conn: sqlite3.Connection) -> tuple[VectorMatrix, dict[str, list[int]]]:
        generation, vectors_version = queries.content_versions(conn)
        key = (generation, vectors_version, self.model)
        with self._lock:
            if key != self._cache_key:
                self._matrix = load_vectors(conn, model=self.model)
                self._ids_by_key = self._chunk_keys(conn) if len(self._matrix) else {}
                self._key_by_id = {cid: key for key, ids in self._ids_by_key.items() for cid in ids}
                self._cache_key = key
            return self._matrix, self._ids_by_key

    def search(self, conn: sqlite3.Connection, query: np.ndarray, *, k: int) -> list[VectorHit]:
        """The ``k`` chunks most similar to the question vector ``query`` (from :meth:`embed_query`),
        inside the caller's read transaction. Returns ``[]`` when no vector is stored yet."""
        matrix, ids_by_key = self._load(conn)
        return _hits(matrix, ids_by_key, query, k=k)

    def chunk_similarities(self, conn: sqlite3.Connection, question: str, chunk_ids: Iterable[int]) -> dict[int, float]:
        """Cosine of ``question`` to each of ``chunk_ids`` that has a vector, inside the caller's read
        transaction (the chunks of a few files: :mod:`rag.search.within_file`). The question's
        vector comes from :meth:`embed_query`'s cache when the question was just searched. ``{}``
        when another generation's vectors were loaded meanwhile (a concurrent question on a newer
        generation): the caller keeps its fused order.

        Raises:
            ProviderError: the provider failed embedding the question.
        """
        matrix, ids_by_key = self._load(conn)
        if not len(matrix):
            return {}
        with self._lock:
            key_of = self._key_by_id if self._ids_by_key is ids_by_key else {}
        keyed = {cid: key_of[cid] for cid in chunk_ids if cid in key_of}
        sims = matrix.similarities_of(self.embed_query(question), keyed.values())
        return {cid: sims[key] for cid, key in keyed.items() if key in sims}

    def matrix_of(self, conn: sqlite3.Connection) -> tuple[VectorMatrix, dict[str, list[int]]]:
        """``(vectors, content key → chunk ids)`` of the generation ``conn``'s read transaction sees,
        loaded once per ``(generation, vectors_version)``; an empty matrix when no vector is stored."""
        return self._load(conn)


def _hits(matrix: VectorMatrix, ids_by_key: dict[str, list[int]], query: np.ndarray, *, k: int) -> list[VectorHit]:
    """The chunks of the ``k`` vectors nearest ``query`` (a key shared by several chunks gives each),
    at most ``2k`` hits."""
    if len(matrix) == 0:
        return []
    hits: list[VectorHit] = []
    for key, similarity in matrix.top_k(query, k=k):
        hits.extend(VectorHit(chunk_id, similarity) for chunk_id in ids_by_key.get(key, ()))
    return hits[: k * 2]


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _search_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=SEARCH_THREADS, thread_name_prefix="sz-vector-search")
        return _pool


class PendingHits:
    """The vector stream's hits for one question, being computed in a worker thread
    (:func:`start_search`); :meth:`result` waits for them."""

    def __init__(self, future: Future | None = None) -> None:
        self._future = future

    def result(self) -> list[VectorHit]:
        """The hits (``[]`` without vectors, or when the provider failed: logged, BM25 only).

        Raises:
            Exception: whatever else the search raised.
        """
        if self._future is None:
            return []
        try:
            return self._future.result()
        except ProviderError as exc:
            log.warning("vector search unavailable, BM25 only: %s", exc)
            return []


def start_search(stream: VectorStream | None, conn: sqlite3.Connection, question: str, *, k: int) -> PendingHits:
    """Start embedding ``question`` and searching the ``k`` nearest chunks in a worker thread, while
    the caller goes on with the lexical stage: a question costs the longer of the two instead of
    their sum (the model, SQLite and the int8 screen all run outside the GIL for most of their time).

    The vectors are those of the generation ``conn``'s read transaction sees (loaded here, in the
    caller's thread, when that generation's are not loaded yet), so the chunk ids of the hits are
    that generation's. Without a stream, or with no vector stored, no question is embedded.
    The caller's transaction stays open while it waits (at most :data:`QUERY_EMBED_DEADLINE_S`
    for the question's embedding): a WAL reader blocks no writer.
    """
    if stream is None:
        return PendingHits()
    matrix, ids_by_key = stream.matrix_of(conn)
    if len(matrix) == 0:
        return PendingHits()

    def search() -> list[VectorHit]:
        return _hits(matrix, ids_by_key, stream.embed_query(question), k=k)

    return PendingHits(_search_pool().submit(search))


def above_floor(hits: list[VectorHit], ratio: float) -> list[VectorHit]:
    """Hits whose cosine is at least ``ratio`` × the best one's (all of them for ``ratio`` ≤ 0)."""
    if not hits or ratio <= 0:
        return hits
    floor = max(h.similarity for h in hits) * ratio
    return [h for h in hits if h.similarity >= floor]
