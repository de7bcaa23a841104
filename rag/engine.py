"""The engine facade: one repository, one index, the named stages wired together.

    engine = Engine.open(repo=Path("."))          # index at <repo>/.rag/index.sqlite
    stats = engine.update()                       # walk → chunk → parse → index (incremental)
    sources = engine.retrieve("how are routes matched?", limit=8)

Caches (IDF per term, the path list, the code graph) are keyed by the index
generation, so an update by this process or another one invalidates them.
``update()`` is serialised in-process by a lock; ``rag.ingest.reindexer`` adds the
cross-process file lock used by the bot.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rag.search import lexical as _retrieve
from rag.ingest.chunk import DEFAULT_CHUNK_POLICY, ChunkPolicy
from rag.ingest.prepare import Skipped, StructureParser, Unchanged, prepare_file, secret_literals
from rag.ingest.stats import IndexStats
from rag.providers.embeddings import EmbeddingProvider
from rag.errors import RepoNotFoundError
from rag.search.vector_stream import VectorStream, above_floor, safe_query_vector, safe_search, top_margin
from rag.store import queries
from rag.store.index import FileUpdate, Index
from rag.ingest.manifests import read_manifests, repository_names
from rag.search.query import analyze
from rag.providers.rerank import Reranker
from rag.search.rerank import rerank_candidates
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY, RetrievalPolicy
from rag.context import packer as _context
from rag.context.codegraph import CodeGraph
from rag.context.packer import CodeEntry, PackedContext
from rag.parse.parser import PARSE_VERSION, FileStructure, resolve_imports
from rag.text import index_text, light_stem
from rag.types import ImageHit, Source
from rag.ingest.walk import DEFAULT_WALK_POLICY, WalkPolicy, walk

__all__ = ["Engine", "IndexStats", "default_index_path", "MAX_QUESTION_CHARS"]

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 4000
DEFAULT_BUDGET_TOKENS = 4000
ProgressFn = Callable[[int, int], None]


# "Which files import X / would break if X were removed / depend on X?"
_DEPENDANTS_INTENT = re.compile(
    r"\b(import(s|ed|ing)?|requires?|depend(s|ing|ants|ents)?|break|fail to load|need to change|"
    r"were (deleted|removed)|(is|was|were|got) removed|uses? of|who uses)\b", re.I)
# "Which file reads the process environment / environment variables?"
_ENV_INTENT = re.compile(r"\b(process environment|environment variables?|env(ironment)? vars?|process\.env)\b", re.I)


def default_index_path(repo: Path) -> Path:
    """``<repo>/.rag/index.sqlite`` (DESIGN.md §3)."""
    return repo / ".rag" / "index.sqlite"


class _GenerationCache:
    """Values derived from one index generation (dropped when it changes)."""

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.idf: dict[str, float] = {}
        self.paths: list[str] | None = None
        self.total_chunks: int | None = None
        self.extra: dict[str, object] = {}


class Engine:
    """Index and query one repository. Thread-safe for concurrent ``retrieve`` calls.

    Use :meth:`open` rather than the constructor.
    """

    def __init__(
        self,
        repo_root: Path,
        index: Index,
        *,
        walk_policy: WalkPolicy = DEFAULT_WALK_POLICY,
        chunk_policy: ChunkPolicy = DEFAULT_CHUNK_POLICY,
        retrieval_policy: RetrievalPolicy = DEFAULT_RETRIEVAL_POLICY,
        embeddings: EmbeddingProvider | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.repo_root = repo_root
        self.index = index
        self.walk_policy = walk_policy
        self.chunk_policy = chunk_policy
        self.retrieval_policy = retrieval_policy
        self._update_lock = threading.Lock()
        self._cache = _GenerationCache(-1)
        self._cache_lock = threading.Lock()
        self._parser = StructureParser()
        self.vectors: VectorStream | None = VectorStream(index, embeddings) if embeddings is not None else None
        self.reranker = reranker

    @classmethod
    def open(cls, repo: Path | str | None = None, *, index_path: Path | str | None = None, **policies) -> Engine:
        """Open (creating if needed) the index of ``repo``.

        Args:
            repo: repository root; default ``$REPO_PATH`` then the current directory.
            index_path: index file; default ``$RAG_INDEX_PATH`` then ``<repo>/.rag/index.sqlite``.
            **policies: ``walk_policy``, ``chunk_policy``, ``retrieval_policy`` overrides, and
                ``embeddings`` (an :class:`~rag.providers.embeddings.EmbeddingProvider`) for the vector stream,
                ``reranker`` (a :class:`~rag.providers.rerank.Reranker`) to reorder the fused top candidates.

        Raises:
            RepoNotFoundError: ``repo`` is missing or not a directory.
            IndexUnavailableError: the index location cannot be created or opened.
        """
        root = Path(repo or os.environ.get("REPO_PATH") or ".").expanduser()
        if not root.is_dir():
            raise RepoNotFoundError(f"Repository not found: {root} is not a directory.")
        root = root.resolve()
        path = Path(index_path or os.environ.get("RAG_INDEX_PATH") or default_index_path(root)).expanduser()
        return cls(root, Index(path), **policies)

    def close(self) -> None:
        """Close the index connections."""
        self.index.close()

    @property
    def generation(self) -> int:
        """The committed index generation (0 = never built)."""
        return self.index.generation()

    # -- indexing ------------------------------------------------------------------------------

    def update(self, *, full: bool = False, progress: ProgressFn | None = None) -> IndexStats:
        """Bring the index up to date with the working tree, in one transaction.

        Unchanged files (same content hash) are not re-chunked; a content change
        is seen even when size and mtime are unchanged; vanished files are
        removed. ``full=True`` rebuilds every file.

        Args:
            full: rebuild from scratch.
            progress: called as ``progress(done, total)`` while files are processed.

        Returns:
            An :class:`IndexStats`.

        Raises:
            IndexUnavailableError: the index cannot be written; the previous generation stays.
        """
        started = time.perf_counter()
        with self._update_lock:
            report = walk(self.repo_root, self.walk_policy)
            if self.index.meta("parse_version") not in (None, str(PARSE_VERSION)):
                full = True  # stored structures come from another parser version
            literals = secret_literals(self.repo_root, report.secret_files)
            if self.index.meta("secret_values") not in (None, literals.digest):
                full = True  # a secret file changed: re-redact every file
            known = {} if full else self.index.file_rows()
            stats = IndexStats(skipped=dict(report.skipped))
            updates: list[FileUpdate] = []
            seen: set[str] = set()
            total = len(report.files)
            for done, wf in enumerate(report.files, 1):
                if progress and (done % 25 == 0 or done == total):
                    progress(done, total)
                old = known.get(wf.path)
                result = prepare_file(wf, indexed=old, literals=literals, parser=self._parser,
                                      chunk_policy=self.chunk_policy)
                if isinstance(result, Skipped):
                    stats.skip(result.reason)
                    continue
                seen.add(wf.path)
                if isinstance(result, Unchanged):
                    continue
                updates.append(result.update)
                stats.redactions += result.update.redactions
                stats.parse_seconds += result.parse_seconds
                if old is None:
                    stats.added += 1
                else:
                    stats.changed += 1
            removed = [p for p in known if p not in seen]
            stats.removed = len(removed)
            images_changed = sorted(report.images) != self.index.image_paths()
            if updates or removed or full or images_changed or self.index.generation() == 0:
                stats.generation = self.index.apply(
                    updates=updates, removed=removed, images=report.images, full=full,
                    meta={"repo_root": str(self.repo_root), "parse_version": str(PARSE_VERSION),
                          "secret_values": literals.digest},
                )
            else:
                stats.generation = self.index.generation()
            stats.files, stats.chunks = self.index.counts()
            stats.seconds = time.perf_counter() - started
            log.info("index update", extra={"stats": stats.to_json()})
            return stats

    def embed_pending(self, *, batch_size: int = 32, should_stop=None):
        """Embed chunks that have no vector yet (see :meth:`rag.search.vector_stream.VectorStream.embed_pending`).

        Returns the :class:`~rag.store.vectors.EmbedReport`, or ``None`` without an embeddings provider.
        """
        if self.vectors is None:
            return None
        return self.vectors.embed_pending(batch_size=batch_size, should_stop=should_stop)

    def structures(self) -> dict[str, FileStructure]:
        """Parsed structure of every indexed JS-family file, imports resolved (cached per generation)."""
        with self.index.read() as conn:
            return self._structures_in(conn, self._cache_for(conn))

    def code_graph(self) -> CodeGraph:
        """The repository's :class:`~rag.context.codegraph.CodeGraph` (cached per generation)."""
        with self.index.read() as conn:
            return self._graph_in(conn, self._cache_for(conn))

    def _graph_in(self, conn, cache: _GenerationCache) -> CodeGraph:
        graph = cache.extra.get("graph")
        if graph is None:
            graph = CodeGraph(self._structures_in(conn, cache))
            cache.extra["graph"] = graph
        return graph

    def code_context(self, question: str, *, retrieved: list[Source], max_entries: int = 20) -> list[CodeEntry]:
        """Structural context for ``question`` (:func:`rag.context.packer.code_context` on this repository)."""
        return _context.code_context(question, graph=self.code_graph(), retrieved=retrieved,
                                     read_lines=self.read_lines, max_entries=max_entries)

    def pack_context(self, question: str, *, sources: list[Source], budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                     with_code: bool = True) -> PackedContext:
        """Pack retrieved sources and code context into ``budget_tokens`` (:func:`rag.context.packer.pack_context`).

        Args:
            question: the question (drives code-context selection).
            sources: retrieved sources, best first.
            budget_tokens: token budget (estimator: :func:`rag.tokens.estimate_tokens`).
            with_code: include code context entries (symbols, routes, summaries).

        Raises:
            UserError: ``budget_tokens`` is not a positive integer.
        """
        entries = self.code_context(question, retrieved=sources) if with_code else []
        return _context.pack_context(question, sources=sources, code_entries=entries, budget_tokens=budget_tokens)

    def _structures_in(self, conn, cache: _GenerationCache) -> dict[str, FileStructure]:
        cached = cache.extra.get("structures")
        if cached is None:
            cached = {}
            for path, doc in queries.stored_structures(conn):
                try:
                    cached[path] = FileStructure.from_json(json.loads(doc))
                except ValueError:
                    log.warning("stored structure of %s is stale; it is re-parsed on the next full index", path)
            resolve_imports(cached, known_paths=queries.file_paths(conn, ordered=False))
            cache.extra["structures"] = cached
        return cached

    # -- querying -----------------------------------------------------------------------------

    def _cache_for(self, conn) -> _GenerationCache:
        generation = self.index.generation(conn)
        with self._cache_lock:
            if self._cache.generation != generation:
                self._cache = _GenerationCache(generation)
            return self._cache

    def retrieve(self, question: str, *, limit: int = 8, kind: str | None = None) -> list[Source]:
        """Top chunks for ``question`` (see :mod:`rag.search.lexical`); ``[]`` when nothing really matches.

        Args:
            question: any text; FTS5 syntax in it is inert. Capped at ``MAX_QUESTION_CHARS``.
            limit: maximum number of chunks (≥ 1).
            kind: only chunks of this kind (``documentation``, ``source``, ``config``, ``example``, ``test``).
        """
        question = (question or "")[:MAX_QUESTION_CHARS]
        if not question.strip() or limit < 1:
            return []
        query = analyze(question)
        policy = self.retrieval_policy
        query_vector = safe_query_vector(self.vectors, question)
        with self.index.read() as conn:
            all_hits = safe_search(self.vectors, conn, query_vector, k=policy.stream_pool)
            hits = above_floor(all_hits, policy.vector_floor_ratio)
            cache = self._cache_for(conn)
            if cache.paths is None:
                cache.paths = queries.file_paths(conn)
                cache.total_chunks = queries.count_chunks(conn)
            structure = self._symbol_files(conn, cache, query)
            cands, evidence = _retrieve.rank_chunks(
                conn, query, policy=policy, kind=kind, idf_cache=cache.idf,
                total_chunks=cache.total_chunks, known_paths=cache.paths,
                symbol_files=structure,
                extra_ids=[h.chunk_id for h in hits] or None,
                meta_terms=self._repository_names(cache),
            )
        # Lexical evidence decides abstention (cosines of answerable and unanswerable questions
        # overlap), but a question worded unlike the code ("refuse a body that is too large" for
        # bodyLimit) is answered when the vectors' best chunk clearly stands out.
        vectors_decide = top_margin(all_hits) >= policy.min_vector_margin
        if not cands or (evidence.abstain(policy) and not vectors_decide):
            return []
        pinned = {c.id for c in cands if c.score >= _retrieve.HARD_BOOST}  # before fusion rescales scores
        if hits:
            cands = _retrieve.fuse_streams(cands, [h.chunk_id for h in hits], policy=policy, structure=structure)
        if self.reranker is not None:  # optional; outside the read transaction (a network call)
            cands = rerank_candidates(cands, question=question, reranker=self.reranker,
                                      top=policy.rerank_top, pinned=pinned,
                                      min_score=getattr(self.reranker, "min_score", None))
        sources = _retrieve.diversify(cands, limit=limit, per_file=policy.per_file,
                                      relative_threshold=policy.relative_threshold)
        for source in sources:
            source.focus = _retrieve.focus_line(source.text, source.start, query)
        return sources

    def _repository_names(self, cache: _GenerationCache) -> frozenset[str]:
        """The package's own name words (:func:`rag.ingest.manifests.repository_names`), read once per generation."""
        names = cache.extra.get("repository_names")
        if names is None:
            names = repository_names(read_manifests(self.repo_root))
            cache.extra["repository_names"] = names
        return names  # type: ignore[return-value]

    def _symbol_files(self, conn, cache: _GenerationCache, query) -> dict[str, float] | None:
        """Path → bonus in (0, 1] for files that define (1.0) or read (0.6) a name the question writes.

        Names are the question's code-style identifiers (``compileTrust``,
        ``FST_ERR_X``, ``handle_request``) matched case-sensitively against
        definitions, env vars and exported names.
        """
        out: dict[str, float] = {}
        if _DEPENDANTS_INTENT.search(query.text) and query.paths:
            named = _retrieve.explicit_paths(query, cache.paths or [])
            if named:
                graph = self._graph_in(conn, cache)
                deps = sorted({d for p in named for d in graph.dependants(p) if d not in named},
                              key=lambda p: (bool(_retrieve.LOW_VALUE_DIRS.search(p)), p))
                for rank, path in enumerate(deps):
                    out[path] = 10.5 - 0.01 * rank
        if _ENV_INTENT.search(query.text):
            for path, structure in self._structures_in(conn, cache).items():
                if structure.env_vars:
                    out[path] = max(out.get(path, 0.0), 0.3)
        if not query.identifiers:
            return out or None
        table = cache.extra.get("symbol_table")
        if table is None:
            table = {}
            for _path, doc in queries.stored_structures(conn):
                try:
                    data = json.loads(doc)
                except ValueError:
                    continue
                path = data.get("path")
                for d in data.get("definitions", []):
                    table.setdefault(d.get("name"), {})[path] = 1.0
                for e in data.get("exports", []):
                    table.setdefault(e.get("name"), {}).setdefault(path, 0.8)
                for e in data.get("env_vars", []):
                    table.setdefault(e.get("name"), {}).setdefault(path, 0.6)
            cache.extra["symbol_table"] = table
        for name in query.identifiers:
            for path, weight in table.get(name, {}).items():
                out[path] = max(out.get(path, 0.0), 0.5 * weight)
        return out or None

    def retrieve_images(self, question: str, *, limit: int = 6) -> list[ImageHit]:
        """Images whose path tokens match the question (``[]`` when none do)."""
        query = analyze((question or "")[:MAX_QUESTION_CHARS])
        if not query.terms:
            return []
        wanted = {light_stem(t) for t in query.terms}
        hits: list[ImageHit] = []
        with self.index.read() as conn:
            for path in queries.image_paths(conn):
                tokens = {light_stem(t) for t in index_text(path.rsplit(".", 1)[0]).split()}
                common = wanted & tokens
                if common:
                    hits.append(ImageHit(path, None, len(common) / len(wanted)))
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:limit]

    def indexed_paths(self) -> list[str]:
        """Every indexed file path, sorted."""
        with self.index.read() as conn:
            return queries.file_paths(conn)

    def read_lines(self, path: str, start: int, end: int) -> str:
        """Indexed text of ``path`` lines ``start..end`` (redacted), joined from its chunks.

        Reads the index, never the working tree, so secrets stay redacted and the
        text matches the generation that produced the line numbers. Lines past the
        end of the file are simply absent. Raises ``KeyError`` for an unindexed path.
        """
        with self.index.read() as conn:
            rows = queries.chunk_lines(conn, path, start, end)
        if not rows:
            with self.index.read() as conn:
                if not queries.has_file(conn, path):
                    raise KeyError(path)
            return ""
        lines: dict[int, str] = {}
        for first, text in rows:
            for offset, line in enumerate(text.split("\n")):
                lines.setdefault(first + offset, line)
        return "\n".join(lines[n] for n in range(start, end + 1) if n in lines)
