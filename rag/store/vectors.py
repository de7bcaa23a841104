"""Vector storage and similarity search for the embeddings stream.

Three small pieces, each usable alone:

* **BLOB codec** — ``pack_vector`` / ``unpack_vector``: a vector is stored as
  its raw little-endian float32 bytes (``ndarray.tobytes()``, read back with
  ``np.frombuffer``), 4 × dim bytes, no header; the ``dim`` column says how
  to read it.
* **Search** — :class:`VectorMatrix` holds ``(ids, matrix)`` in memory and
  answers the exact cosine top-k (rows are unit vectors, so the dot product
  is the cosine). A float32 matrix-vector product is bound by memory
  bandwidth (100,000 × 384: 154 MB read, 9-10 ms on one core here), so a
  matrix of more than :data:`~rag.store.vector_screen.SCREEN_MIN_ROWS` rows is
  first screened with int8 codes of its rows (a quarter of the bytes, SIMD
  dot products) and only the rows that can still be in the top k are scored
  in float64 (:mod:`rag.store.vector_screen`: same top k, 4-4.5 ms instead of
  10). The matrix takes 4 × dim bytes per chunk (154 MB at 100k × 384) and
  its codes dim bytes more. Exact results, nothing to maintain; an ANN
  index is only worth it if it measures better end to end.
* **Table helpers and planning** against the index's table::

      chunk_vectors(chunk_hash TEXT, model TEXT, dim INT, vec BLOB,
                    PRIMARY KEY(chunk_hash, model))

  Vectors are keyed by chunk content hash *and* model name: unchanged chunks
  are never re-embedded, and a model change finds no vectors under the new
  name, so everything is re-embedded. ``plan_embedding`` and
  ``embed_missing`` are storage-agnostic: the caller passes callbacks that
  fetch texts and store vectors, so they can run in a background thread
  with their own connection.

None of the helpers commits: writes join the caller's transaction.
"""
from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Collection, Iterable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from rag.providers.embeddings import EmbeddingProvider
from rag.errors import InputRejectedError, ProviderError
from rag.store.vector_screen import SCREEN_MIN_ROWS, QuantizedRows, exact_top_k

__all__ = [
    "VECTOR_DTYPE",
    "CHUNK_VECTORS_DDL",
    "DEFAULT_EMBED_BATCH",
    "pack_vector",
    "unpack_vector",
    "VectorMatrix",
    "store_vectors",
    "load_vectors",
    "vector_hashes",
    "prune_vectors",
    "plan_embedding",
    "EmbedReport",
    "embed_missing",
]

log = logging.getLogger(__name__)

VECTOR_DTYPE = np.dtype("<f4")   # little-endian float32, whatever the host
CHUNK_VECTORS_DDL = (
    "CREATE TABLE IF NOT EXISTS chunk_vectors(chunk_hash TEXT, model TEXT, dim INT, vec BLOB, "
    "PRIMARY KEY(chunk_hash, model))"
)
DEFAULT_EMBED_BATCH = 64         # chunks per provider call in embed_missing (≈ 1–3 s on CPU MiniLM)


def pack_vector(vector: np.ndarray | Sequence[float]) -> bytes:
    """Encode a 1-D vector as little-endian float32 bytes (4 × dim bytes).

    Raises:
        ValueError: the vector is not 1-D or is empty.
    """
    arr = np.asarray(vector, dtype=VECTOR_DTYPE)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"expected a non-empty 1-D vector, got shape {arr.shape}")
    return arr.tobytes()


def unpack_vector(blob: bytes, *, dim: int) -> np.ndarray:
    """Decode ``pack_vector`` bytes into a read-only float32 array of shape ``(dim,)``.

    Raises:
        ValueError: ``len(blob) != 4 * dim``.
    """
    if len(blob) != dim * VECTOR_DTYPE.itemsize:
        raise ValueError(f"vector blob has {len(blob)} bytes, expected {dim * VECTOR_DTYPE.itemsize} for dim {dim}")
    return np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32, copy=False)


@dataclass(frozen=True, slots=True)
class VectorMatrix:
    """Vectors of one model in memory, for exact cosine top-k by brute force.

    Attributes:
        ids: the id of each row (chunk content hashes), ``len(ids) == matrix.shape[0]``.
        matrix: C-contiguous float32 ``(n, dim)``; rows are expected to be unit
            vectors (providers return them so), making ``matrix @ q`` the cosine.

    A matrix of more than :data:`~rag.store.vector_screen.SCREEN_MIN_ROWS` rows also keeps their
    int8 codes (:class:`~rag.store.vector_screen.QuantizedRows`, made here: about 0.2 s at
    100k × 384) for :meth:`top_k`'s screen.

    Example::

        vm = VectorMatrix.from_pairs([("h1", v1), ("h2", v2)])
        vm.top_k(query_vector, k=20)        # [("h2", 0.71), ("h1", 0.33)]
    """

    ids: tuple[str, ...]
    matrix: np.ndarray
    _codes: QuantizedRows | None = field(default=None, init=False, repr=False, compare=False)
    _row_of: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.ids):
            raise ValueError(f"matrix shape {self.matrix.shape} does not match {len(self.ids)} ids")
        if self.matrix.dtype != np.float32 or not self.matrix.flags.c_contiguous:
            object.__setattr__(self, "matrix", np.ascontiguousarray(self.matrix, dtype=np.float32))
        object.__setattr__(self, "_row_of", {ident: i for i, ident in enumerate(self.ids)})
        if len(self.ids) > SCREEN_MIN_ROWS:  # made once, with the matrix (once per index generation)
            object.__setattr__(self, "_codes", QuantizedRows(self.matrix))

    @classmethod
    def empty(cls, dim: int = 0) -> VectorMatrix:
        """A matrix with no rows (every search returns ``[]``)."""
        return cls((), np.zeros((0, dim), dtype=np.float32))

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, np.ndarray]]) -> VectorMatrix:
        """Build from ``(id, vector)`` pairs; all vectors must share one dimension.

        Raises:
            ValueError: vectors of different dimensions.
        """
        ids: list[str] = []
        rows: list[np.ndarray] = []
        for ident, vec in pairs:
            ids.append(ident)
            rows.append(np.asarray(vec, dtype=np.float32).reshape(-1))
        if not rows:
            return cls.empty()
        if len({row.shape[0] for row in rows}) != 1:
            raise ValueError("vectors of different dimensions cannot share a VectorMatrix")
        return cls(tuple(ids), np.stack(rows))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dim(self) -> int:
        """Vector dimension (0 for an empty matrix built without one)."""
        return int(self.matrix.shape[1])

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``query`` to every row, float32 ``(n,)``.

        The query is normalised here (a zero query scores 0 everywhere).

        Raises:
            ValueError: the query's dimension differs from the matrix's.
        """
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if len(self) and q.shape[0] != self.dim:
            raise ValueError(f"query has dimension {q.shape[0]}, vectors have {self.dim}")
        norm = float(np.linalg.norm(q))
        if norm > 0:
            q = q / norm
        if not len(self):
            return np.zeros(0, dtype=np.float32)
        # One BLAS thread: a multi-threaded matrix-vector product wakes OpenBLAS's
        # spinning workers, which then fight the embedding model's threads (measured:
        # a hybrid query went from ~80 ms to ~23 ms on 2 cores with this limit).
        with threadpool_limits(limits=1, user_api="blas"):
            return self.matrix @ q

    def _unit_query(self, query: np.ndarray) -> np.ndarray:
        """``query`` as a float64 unit vector (a zero query stays zero); ValueError on a dimension mismatch."""
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has dimension {q.shape[0]}, vectors have {self.dim}")
        norm = float(np.linalg.norm(q))
        return q / norm if norm > 0 else q

    def similarities_of(self, query: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """Cosine of ``query`` to the rows of ``ids`` (ids not in the matrix are left out): a few rows
        read by their index, not the whole matrix (the chunks of a handful of files).

        Raises:
            ValueError: the query's dimension differs from the matrix's.
        """
        row_of = self._row_of
        wanted = [(ident, row_of[ident]) for ident in dict.fromkeys(ids) if ident in row_of]
        if not wanted:
            return {}
        q = self._unit_query(query)
        sims = self.matrix[[row for _, row in wanted]].astype(np.float64) @ q
        return {ident: float(sim) for (ident, _), sim in zip(wanted, sims.tolist())}

    def top_k(self, query: np.ndarray, *, k: int, min_score: float | None = None) -> list[tuple[str, float]]:
        """The ``k`` rows most similar to ``query``, best first, exactly: an int8 screen finds the rows
        that can be among them and only those are scored in float64 (:mod:`rag.store.vector_screen`).

        Args:
            query: 1-D vector of the matrix's dimension (normalised here, in float64).
            k: how many results at most (``k <= 0`` → ``[]``).
            min_score: if set, drop results whose cosine is below it.

        Returns:
            ``[(id, cosine)]`` sorted by cosine descending, ties by row order; cosines are float64
            dot products of the stored float32 rows with the normalised query.

        Raises:
            ValueError: dimension mismatch.
        """
        n = len(self)
        if k <= 0 or n == 0:
            return []
        q = self._unit_query(query)
        rows, sims = exact_top_k(self.matrix, self._codes, q, k)
        out = [(self.ids[i], s) for i, s in zip(rows.tolist(), sims.tolist())]
        if min_score is not None:
            out = [pair for pair in out if pair[1] >= min_score]
        return out


# --------------------------------------------------------------------------- chunk_vectors table


def store_vectors(conn: sqlite3.Connection, *, model: str, pairs: Iterable[tuple[str, np.ndarray]]) -> int:
    """Insert or replace ``(chunk_hash, vector)`` pairs for ``model``; return the number written.

    Runs inside the caller's transaction (no commit here).
    """
    rows = [(chunk_hash, model, int(np.asarray(vec).size), pack_vector(vec)) for chunk_hash, vec in pairs]
    conn.executemany(
        "INSERT OR REPLACE INTO chunk_vectors(chunk_hash, model, dim, vec) VALUES (?, ?, ?, ?)", rows)
    return len(rows)


def vector_hashes(conn: sqlite3.Connection, *, model: str) -> set[str]:
    """Chunk hashes that already have a vector for ``model``."""
    return {row[0] for row in conn.execute("SELECT chunk_hash FROM chunk_vectors WHERE model = ?", (model,))}


def load_vectors(conn: sqlite3.Connection, *, model: str, only: Collection[str] | None = None) -> VectorMatrix:
    """Load every vector of ``model`` (optionally only hashes in ``only``) into a :class:`VectorMatrix`.

    Rows are read in ``chunk_hash`` order, each copied straight into one preallocated float32 matrix
    (no list of rows and no joined buffer beside it: at 102,342 × 384 the load's peak memory was
    three copies of the vectors, 584 → 268 MB, and it took 3.6 → 1.4 s). Rows whose ``dim`` differs
    from the most common one among those loaded (the smaller on a tie), or whose blob has the wrong
    length, are skipped with a warning (they cannot share a matrix); pass ``set(result.ids)`` as
    ``have`` to ``plan_embedding`` to get them re-embedded.
    """
    select = "SELECT chunk_hash, dim, vec FROM chunk_vectors WHERE model = ? ORDER BY chunk_hash"
    if only is None:
        counts = conn.execute("SELECT dim, COUNT(*) FROM chunk_vectors WHERE model = ? GROUP BY dim",
                              (model,)).fetchall()
        rows = conn.execute(select, (model,))
    else:  # a few rows: read them first, their dimensions counted here
        wanted = set(only)
        rows = [row for row in conn.execute(select, (model,)) if row[0] in wanted]
        counts = list(Counter(dim for _, dim, _ in rows).items())
    if not counts:
        return VectorMatrix.empty()
    dim, most = min(counts, key=lambda dim_count: (-dim_count[1], dim_count[0]))
    size = dim * VECTOR_DTYPE.itemsize
    matrix = np.empty((most, dim), dtype=np.float32)
    ids: list[str] = []
    skipped = 0
    for chunk_hash, row_dim, blob in rows:
        if row_dim != dim or len(blob) != size:
            skipped += 1
            continue
        matrix[len(ids)] = np.frombuffer(blob, dtype=VECTOR_DTYPE)
        ids.append(chunk_hash)
    if skipped:
        log.warning("chunk_vectors: skipped %d malformed rows for model %s", skipped, model)
    if not ids:
        return VectorMatrix.empty()
    return VectorMatrix(tuple(ids), matrix[:len(ids)])


def prune_vectors(conn: sqlite3.Connection, *, keep_model: str, live_hashes: Collection[str] | None = None) -> int:
    """Delete vectors of every other model, and of ``keep_model`` for hashes not in ``live_hashes``.

    Args:
        keep_model: the current model name; other models' rows are removed.
        live_hashes: chunk hashes still in the index; ``None`` keeps all of
            ``keep_model``'s rows.

    Returns:
        Number of rows deleted. Runs inside the caller's transaction.
    """
    deleted = conn.execute("DELETE FROM chunk_vectors WHERE model <> ?", (keep_model,)).rowcount
    if live_hashes is not None:
        stale = vector_hashes(conn, model=keep_model) - set(live_hashes)
        conn.executemany("DELETE FROM chunk_vectors WHERE chunk_hash = ? AND model = ?",
                         [(h, keep_model) for h in stale])
        deleted += len(stale)
    return deleted


# --------------------------------------------------------------------------- planning and filling


def plan_embedding(chunk_hashes: Iterable[str], have: Collection[str]) -> list[str]:
    """Hashes that need a vector: those not in ``have``, deduplicated, in first-seen order."""
    have_set = have if isinstance(have, (set, frozenset)) else set(have)
    seen: set[str] = set()
    todo: list[str] = []
    for chunk_hash in chunk_hashes:
        if chunk_hash not in have_set and chunk_hash not in seen:
            seen.add(chunk_hash)
            todo.append(chunk_hash)
    return todo


@dataclass(slots=True)
class EmbedReport:
    """What one ``embed_missing`` run did.

    Attributes:
        model: provider name the vectors were stored under.
        planned: hashes that needed a vector.
        embedded: hashes embedded and stored.
        batches: provider calls that succeeded.
        seconds: wall time of the run.
        error: the provider's one-line reason if the run stopped on a failure, else ``None``.
        stopped: ``True`` if ``should_stop`` ended the run early.
        rejected: chunks the provider refused one by one (found by splitting a failed
            batch) while it embedded their neighbours; skipped, retried on the next run.
        rejected_reason: the provider's reason for the first of them.
    """

    model: str
    planned: int = 0
    embedded: int = 0
    batches: int = 0
    seconds: float = 0.0
    error: str | None = None
    stopped: bool = False
    rejected: int = 0
    rejected_reason: str | None = None
    durations_s: list[float] = field(default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        """Every planned hash got its vector."""
        return self.embedded == self.planned and self.error is None


def embed_missing(
    *,
    provider: EmbeddingProvider,
    chunk_hashes: Iterable[str],
    have: Collection[str],
    fetch_texts: Callable[[list[str]], Sequence[str]],
    store: Callable[[list[tuple[str, np.ndarray]]], None],
    batch_size: int = DEFAULT_EMBED_BATCH,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedReport:
    """Embed the chunks that have no vector yet, batch by batch, storing each batch as it completes.

    Storage-agnostic: ``fetch_texts(hashes)`` returns the text to embed for
    each hash (same order), ``store(pairs)`` persists ``[(hash, vector)]`` (and
    commits, if it wants progress to survive a crash). A ``ProviderError``
    stops the run and is recorded in the report, never raised: what was
    stored stays stored and BM25 keeps working. A batch whose inputs the provider
    refuses (:class:`~rag.errors.InputRejectedError`: HTTP 400/413/422) is split
    in halves until the chunk it refuses is found (one bad chunk must not keep
    every other chunk of its batch without a vector, run after run); that chunk
    is skipped and counted in ``rejected``. When two single-chunk requests in a
    row are refused and nothing in the batch succeeded, the provider refuses
    everything: the run stops (at most ~log2(batch_size) + 2 calls for it).

    Args:
        provider: the embeddings provider (its ``name`` is the model key).
        chunk_hashes: hashes of the current chunks (duplicates allowed).
        have: hashes that already have a vector for ``provider.name``.
        fetch_texts: hashes → texts, called once per batch.
        store: called once per embedded batch.
        batch_size: hashes per provider call.
        should_stop: polled before each batch; returning ``True`` ends the run.
        progress: called as ``progress(done, planned)`` after each batch (``done``: chunks embedded or
            refused so far; ``planned``: chunks without a vector at the start).

    Returns:
        An :class:`EmbedReport`.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    started = time.monotonic()
    todo = plan_embedding(chunk_hashes, have)
    report = EmbedReport(model=provider.name, planned=len(todo))
    for start in range(0, len(todo), batch_size):
        if should_stop is not None and should_stop():
            report.stopped = True
            break
        batch = todo[start : start + batch_size]
        texts = list(fetch_texts(batch))
        if len(texts) != len(batch):
            raise ValueError(f"fetch_texts returned {len(texts)} texts for {len(batch)} hashes")
        try:
            _embed_batch(provider, batch, texts, store, report)
        except ProviderError as exc:
            report.error = str(exc)
            log.warning("embedding stopped: model=%s embedded=%d/%d reason=%s",
                        provider.name, report.embedded, report.planned, exc)
            break
        if progress is not None:
            progress(start + len(batch), report.planned)  # the plan is the list batched
    report.seconds = time.monotonic() - started
    log.info("embedding run: model=%s planned=%d embedded=%d batches=%d rejected=%d s=%.2f error=%s",
             provider.name, report.planned, report.embedded, report.batches, report.rejected, report.seconds,
             report.error is not None)
    return report


def _embed_batch(provider: EmbeddingProvider, batch: list[str], texts: list[str],
                 store: Callable[[list[tuple[str, np.ndarray]]], None], report: EmbedReport) -> None:
    """Embed and store one batch, splitting it on failure (see :func:`embed_missing`).

    Raises:
        ProviderError: any failure other than refused inputs; refused inputs when two
            single-chunk requests in a row fail with no success in this batch, or when
            the batch itself holds one chunk.
    """
    pending: list[tuple[list[str], list[str]]] = [(batch, texts)]
    succeeded = False
    single_failures = 0
    while pending:
        hashes, inputs = pending.pop(0)
        t0 = time.monotonic()
        try:
            vectors = provider.embed(inputs)
        except InputRejectedError as exc:
            if len(hashes) == 1:
                single_failures += 1
                if len(batch) == 1 or (not succeeded and single_failures >= 2):
                    raise
                report.rejected += 1
                report.rejected_reason = report.rejected_reason or str(exc)
                log.warning("embedding: the provider refused one chunk, skipped: model=%s reason=%s",
                            provider.name, exc)
                continue
            half = len(hashes) // 2
            pending[:0] = [(hashes[:half], inputs[:half]), (hashes[half:], inputs[half:])]
            continue
        succeeded = True
        single_failures = 0
        report.durations_s.append(time.monotonic() - t0)
        store(list(zip(hashes, vectors)))
        report.embedded += len(hashes)
        report.batches += 1
