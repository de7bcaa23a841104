"""The engine at scale: query latency on a synthetic index of about 100k chunks (``slackzilla bench --scale``).

**The index.** A real index (the one ``run_bench`` built from the repository) is copied, row for
row, into a new index file: first as it is, then again under ``synthetic/<k>/`` for k = 1, 2, …
until it holds at least ``chunks`` chunks. Files, chunks, FTS columns and structures are the
real ones (only the paths differ), written through :meth:`rag.store.index.Index.writer` in one
transaction like an update; nothing is parsed or tokenised again. The text repeats, so every
matching term matches every copy: a pessimistic case for BM25, whose cost grows with the number
of matching chunks.

**Vectors.** With an embeddings provider, each distinct chunk key gets a random unit vector of
the provider's dimension under the provider's model name (seeded): the vector stream then searches
every row exactly as it would real vectors (brute force costs the same whatever the values), while
embedding 100k chunks for real would take an hour. What the provider costs is measured on real
text instead: ``embed_chunks_per_s`` over a sample of the repository's chunks (as the index
embeds them, 32 per call) and ``query_embed_ms`` per question; hybrid query latency includes
embedding the question.

**Memory.** Each phase's peak resident memory (:class:`rag.memory.PeakRss`).
"""
from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag.engine import Engine
from rag.memory import PeakRss
from rag.store import queries as index_queries
from rag.store.index import ChunkTerms, FileUpdate
from rag.store.vectors import store_vectors
from rag.types import Chunk

__all__ = ["run_scale_bench", "DEFAULT_SCALE_CHUNKS", "EMBED_SAMPLE", "percentiles_ms"]

DEFAULT_SCALE_CHUNKS = 100_000
"""Chunks of the synthetic index (the issue's "100k-chunk index")."""
EMBED_SAMPLE = 256
"""Real chunk texts embedded to measure the provider's throughput."""
EMBED_BATCH = 32
"""Texts per provider call while measuring throughput (what ``Engine.embed_pending`` sends)."""
VECTOR_WRITE_BATCH = 5_000
"""Synthetic vectors written per ``executemany``."""


def percentiles_ms(times_s: Sequence[float]) -> tuple[float, float]:
    """``(p50, p95)`` in milliseconds of durations in seconds (nearest rank; ``(0, 0)`` for none)."""
    ordered = sorted(times_s)
    if not ordered:
        return 0.0, 0.0
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return round(statistics.median(ordered) * 1000, 3), round(p95 * 1000, 3)


def _timed(fn: Callable[[str], object], questions: Sequence[str]) -> list[float]:
    out = []
    for question in questions:
        started = time.perf_counter()
        fn(question)
        out.append(time.perf_counter() - started)
    return out


def _stored_updates(engine: Engine) -> list[FileUpdate]:
    """Every file of ``engine``'s index as the :class:`FileUpdate` that writes it again, terms included."""
    with engine.index.read() as conn:
        files = index_queries.all_file_rows(conn)
        rows = index_queries.all_chunk_rows(conn)
    chunks: dict[str, list[tuple[Chunk, ChunkTerms]]] = {}
    for path, start, end, heading, symbol, file_type, kind, text, digest, stems, body, fts_heading, symbols in rows:
        chunk = Chunk(path=path, start=start, end=end, text=text, file_type=file_type, kind=kind, heading=heading,
                      symbol=symbol)
        chunks.setdefault(path, []).append((chunk, ChunkTerms(body, fts_heading, symbols, stems, digest)))
    updates = []
    for path, size, mtime_ns, digest, file_type, kind, lines, redactions, structure in files:
        pairs = chunks.get(path, [])
        updates.append(FileUpdate(path=path, size=size, mtime_ns=mtime_ns, hash=digest, file_type=file_type, kind=kind,
                                  lines=lines, redactions=redactions, chunks=[c for c, _ in pairs],
                                  structure=json.loads(structure) if structure else None,
                                  terms=[t for _, t in pairs]))
    return updates


def _copy(update: FileUpdate, prefix: str) -> FileUpdate:
    path = prefix + update.path
    structure = None if update.structure is None else {**update.structure, "path": path}
    return replace(update, path=path, chunks=[replace(c, path=path) for c in update.chunks], structure=structure)


def _build(source: Engine, target: Engine, chunks: int) -> tuple[int, int]:
    """Write the synthetic index into ``target``; returns ``(files, chunks)`` written."""
    updates = _stored_updates(source)
    per_copy = sum(len(u.chunks) for u in updates)
    if per_copy == 0:
        raise ValueError("the repository's index has no chunks to copy")
    copies = max(1, math.ceil(chunks / per_copy))
    meta = {key: source.index.meta(key) or "" for key in ("repo_root", "parse_version", "secret_values")}
    with target.index.writer(full=True) as writer:
        for k in range(copies):
            prefix = "" if k == 0 else f"synthetic/{k:03d}/"
            for update in updates:
                writer.insert(_copy(update, prefix) if prefix else update)
        writer.set_images([])
        writer.set_meta(meta)
    return len(updates) * copies, per_copy * copies


def _store_random_vectors(engine: Engine, dim: int) -> int:
    """A seeded random unit vector per distinct chunk key, stored under the stream's model name."""
    from rag.search.vector_stream import embed_key

    with engine.index.read() as conn:
        keys = sorted({embed_key(path, text, symbol=symbol, header=header, heading=heading)
                       for _, path, text, heading, symbol, header in index_queries.chunk_embedding_rows(conn)})
    rng = np.random.default_rng(7)
    model = engine.vectors.model
    for start in range(0, len(keys), VECTOR_WRITE_BATCH):
        batch = keys[start:start + VECTOR_WRITE_BATCH]
        vectors = rng.standard_normal((len(batch), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with engine.index.write(bump="vectors_version") as conn:
            store_vectors(conn, model=model, pairs=zip(batch, vectors))
    return len(keys)


def run_scale_bench(source: Engine, *, work_dir: Path, questions: Sequence[str], chunks: int = DEFAULT_SCALE_CHUNKS,
                    embeddings=None, reranker=None, progress: Callable[[str], None] | None = None) -> dict:
    """Build the synthetic index (module docstring) from ``source`` and time queries on it.

    Args:
        source: an engine whose index is built (the scratch copy of ``run_bench``).
        work_dir: where the synthetic index file goes (a temporary directory).
        questions: the questions to time (``run_bench``'s mix).
        chunks: at least this many chunks.
        embeddings: an embeddings provider: also time embedding, and hybrid queries over
            random vectors of its dimension.
        reranker: the configured reranker, used by every query as ``retrieve`` does.
        progress: told each phase.

    Returns:
        ``{"files", "chunks", "build_s", "query_p50_ms", "query_p95_ms", "peak_rss_mb": {phase: MiB}}``
        plus, with ``embeddings``: ``"vectors"``, ``"embed_chunks_per_s"``, ``"query_embed_p50_ms"``,
        ``"query_embed_p95_ms"``, ``"hybrid_query_p50_ms"``, ``"hybrid_query_p95_ms"``.
    """
    say = progress or (lambda _message: None)
    peaks: dict[str, float] = {}
    out: dict = {}
    index_path = work_dir / "scale.sqlite"
    lexical = Engine.open(source.repo_root, index_path=index_path, reranker=reranker)
    try:
        say(f"synthetic index of {chunks} chunks")
        with PeakRss() as peak:
            started = time.perf_counter()
            out["files"], out["chunks"] = _build(source, lexical, chunks)
            out["build_s"] = round(time.perf_counter() - started, 3)
        peaks["build"] = peak.mb
        say(f"{len(questions)} queries at {out['chunks']} chunks")
        with PeakRss() as peak:
            lexical.retrieve("warm up the caches")
            out["query_p50_ms"], out["query_p95_ms"] = percentiles_ms(_timed(lexical.retrieve, questions))
        peaks["queries"] = peak.mb
    finally:
        lexical.close()
    if embeddings is not None:
        hybrid = Engine.open(source.repo_root, index_path=index_path, embeddings=embeddings, reranker=reranker)
        try:
            say(f"embedding {EMBED_SAMPLE} chunks with {embeddings.name}")
            from rag.search.vector_stream import embed_text

            with source.index.read() as conn:
                sample = [embed_text(p, t, symbol=sym, header=hdr, heading=hd)
                          for _, p, t, hd, sym, hdr in index_queries.chunk_embedding_rows(conn)][:EMBED_SAMPLE]
            with PeakRss() as peak:
                embeddings.embed(sample[:1])  # loads a local model: its load is not throughput
                started = time.perf_counter()
                for start in range(0, len(sample), EMBED_BATCH):
                    embeddings.embed(sample[start:start + EMBED_BATCH])
                out["embed_chunks_per_s"] = round(len(sample) / (time.perf_counter() - started), 2)
                embed_query = getattr(embeddings, "embed_queries", None) or embeddings.embed
                timed = _timed(lambda q: embed_query([q]), questions)
                out["query_embed_p50_ms"], out["query_embed_p95_ms"] = percentiles_ms(timed)
            peaks["embed"] = peak.mb
            say(f"{out['chunks']} random vectors of dimension {embeddings.dim}")
            with PeakRss() as peak:
                out["vectors"] = _store_random_vectors(hybrid, int(embeddings.dim))
            peaks["vectors"] = peak.mb
            say(f"{len(questions)} hybrid queries at {out['chunks']} chunks")
            with PeakRss() as peak:
                hybrid.retrieve("warm up the vector matrix")
                out["hybrid_query_p50_ms"], out["hybrid_query_p95_ms"] = percentiles_ms(
                    _timed(hybrid.retrieve, questions))
            peaks["hybrid_queries"] = peak.mb
        finally:
            hybrid.close()
    out["peak_rss_mb"] = {phase: round(mb, 1) for phase, mb in peaks.items()}
    return out
