"""The engine facade: one repository, one index, the named stages wired together.

    engine = Engine.open(repo=Path("."))          # index at <repo>/.rag/index.sqlite
    stats = engine.update()                       # walk → chunk → parse → index (incremental)
    sources = engine.retrieve("how are routes matched?", limit=8)

Wiring only; each stage owns its logic:

- ``update`` walks (:func:`rag.ingest.walk.walk`), runs the per-file ingest step
  (:func:`rag.ingest.prepare.prepare_file`, in worker processes for large updates:
  :mod:`rag.ingest.pool`) and applies the result in one transaction
  (:meth:`rag.store.index.Index.apply`; a full rebuild writes each file as it comes back,
  :meth:`rag.store.index.Index.writer`), copy detection included
  (:func:`rag.ingest.copies.update_copies`), reporting an :class:`~rag.ingest.stats.IndexStats`;
- ``retrieve``, ``retrieve_images``, ``structures`` and ``code_graph`` delegate to the
  :class:`~rag.search.retriever.Retriever`, which owns the caches keyed by the index
  generation (an update by this process or another one invalidates them);
- ``code_context`` and ``pack_context`` call :mod:`rag.context.packer` (``pack_context`` first
  builds the packer's pool with :func:`rag.context.packer.context_sources` from two more
  retrievals: a deeper one and one of source files only); ``read_lines`` and
  ``indexed_paths`` read the index (:class:`~rag.store.index.Index`).

``update()`` is serialised in-process by a lock; ``rag.ingest.reindexer`` adds the
cross-process file lock used by the bot.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.errors import IndexOfAnotherRepositoryError, RepoNotFoundError
from rag.ingest.chunk import DEFAULT_CHUNK_POLICY, ChunkPolicy
from rag.ingest.copies import COPY_RULES_VERSION, SharedLines, update_copies
from rag.ingest.pool import DEFAULT_POOL_POLICY, PoolPolicy, prepare_files
from rag.ingest.scope import PathScope
from rag.ingest.prepare import Skipped, StructureParser, Unchanged, secret_literals
from rag.ingest.stats import IndexStats
from rag.ingest.walk import DEFAULT_WALK_POLICY, KINDS_VERSION, WalkPolicy, walk
from rag.parse.records import PARSE_VERSION
from rag.secrets import REDACTION_VERSION, LiteralRedactor
from rag.store.index import FileUpdate, Index

if TYPE_CHECKING:  # the retrieval side is imported when first used (an index update needs none of it)
    from rag.context.codegraph import CodeGraph
    from rag.context.packer import CodeEntry, PackedContext
    from rag.parse.parser import FileStructure
    from rag.providers.embeddings import EmbeddingProvider
    from rag.providers.rerank import Reranker
    from rag.search.lexical import Depth, RetrievalPolicy
    from rag.search.retriever import Retriever
    from rag.search.vector_stream import VectorStream
    from rag.types import ImageHit, Source, WalkedFile

__all__ = ["Engine", "IndexStats", "default_index_path", "MAX_QUESTION_CHARS"]

log = logging.getLogger(__name__)

DEFAULT_BUDGET_TOKENS = 4000
ProgressFn = Callable[[int, int], None]


def __getattr__(name: str) -> Any:
    """``MAX_QUESTION_CHARS`` (:data:`rag.search.retriever.MAX_QUESTION_CHARS`), imported on first use."""
    if name == "MAX_QUESTION_CHARS":
        from rag.search.retriever import MAX_QUESTION_CHARS

        return MAX_QUESTION_CHARS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_index_path(repo: Path) -> Path:
    """``<repo>/.rag/index.sqlite`` (DESIGN.md §3)."""
    return repo / ".rag" / "index.sqlite"


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
        retrieval_policy: RetrievalPolicy | None = None,
        pool_policy: PoolPolicy = DEFAULT_POOL_POLICY,
        embeddings: EmbeddingProvider | None = None,
        reranker: Reranker | None = None,
        name: str | None = None,
        scope: PathScope | None = None,
    ) -> None:
        self.repo_root = repo_root
        self.name = name or repo_root.name
        self.scope = scope
        self.index = index
        self.walk_policy = walk_policy
        self.chunk_policy = chunk_policy
        self.pool_policy = pool_policy
        self._update_lock = threading.Lock()
        self._secret_values: LiteralRedactor | None = None
        self._parser = StructureParser()
        self._shared_lines = SharedLines()  # copy detection's pair counts, moved by difference between updates
        self._retriever: Retriever | None = None
        self._retriever_lock = threading.Lock()
        self._retriever_args = (retrieval_policy, embeddings, reranker)

    @property
    def retriever(self) -> Retriever:
        """The :class:`~rag.search.retriever.Retriever` of this engine, built (and its modules imported)
        on first use: a process that only updates the index never loads the retrieval side."""
        retriever = self._retriever
        if retriever is None:
            with self._retriever_lock:
                if self._retriever is None:
                    from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY
                    from rag.search.retriever import Retriever
                    from rag.search.vector_stream import VectorStream

                    policy, embeddings, reranker = self._retriever_args
                    self._retriever = Retriever(
                        self.repo_root, self.index, policy=policy or DEFAULT_RETRIEVAL_POLICY, reranker=reranker,
                        vectors=VectorStream(self.index, embeddings) if embeddings is not None else None,
                    )
                retriever = self._retriever
        return retriever

    @classmethod
    def open(cls, repo: Path | str | None = None, *, index_path: Path | str | None = None, **policies) -> Engine:
        """Open (creating if needed) the index of ``repo``.

        Args:
            repo: repository root; default the current directory. No environment is read here:
                ``$REPO_PATH``/``$RAG_INDEX_PATH`` are applied by :mod:`rag.config` and passed in by
                the caller (``EngineConfig.repo``/``.index_path``, the CLI's ``--repo``/``--index``).
            index_path: index file; default ``<repo>/.rag/index.sqlite``.
            **policies: ``walk_policy``, ``chunk_policy``, ``retrieval_policy``, ``pool_policy`` (a
                :class:`~rag.ingest.pool.PoolPolicy`: worker processes for preparing files) overrides,
                ``name`` (the repository's name, default the folder's; sources carry it),
                ``scope`` (a :class:`~rag.ingest.scope.PathScope` of include/exclude patterns), and
                ``embeddings`` (an :class:`~rag.providers.embeddings.EmbeddingProvider`) for the vector stream,
                ``reranker`` (a :class:`~rag.providers.rerank.Reranker`) to reorder the fused top candidates.

        Raises:
            RepoNotFoundError: ``repo`` is missing or not a directory.
            IndexUnavailableError: the index location cannot be created or opened.
        """
        root = Path(repo or ".").expanduser()
        if not root.is_dir():
            raise RepoNotFoundError(f"Repository not found: {root} is not a directory.")
        root = root.resolve()
        path = Path(index_path or default_index_path(root)).expanduser()
        return cls(root, Index(path), **policies)

    def secret_redactor(self) -> LiteralRedactor:
        """The values found in the repository's secret files (``.env`` …) as a redactor.

        From the last :meth:`update` of this process; before one, read from a walk
        (secret files are found by name, their values never indexed). Used for text
        that does not come from the index: live-tool output, questions, answers.
        """
        if self._secret_values is None:
            self._secret_values = secret_literals(self.repo_root, walk(self.repo_root, self.walk_policy).secret_files)
        return self._secret_values

    def use_secret_redactor(self, redactor: LiteralRedactor) -> None:
        """Adopt the secret-file values an update made elsewhere found (an update in a child
        process), as :meth:`update` does for its own."""
        self._secret_values = redactor

    def close(self) -> None:
        """Close the index connections."""
        self.index.close()

    @property
    def generation(self) -> int:
        """The committed index generation (0 = never built)."""
        return self.index.generation()

    # -- indexing ------------------------------------------------------------------------------

    _OWN_SUFFIXES = ("", "-wal", "-shm", "-journal", ".lock", ".lock.json")
    """What lives beside an index file: SQLite's WAL, shared memory and journal, the reindex lock
    and its holder record (:mod:`rag.ingest.reindexer`)."""

    def _drop_own_files(self, report) -> None:
        """Remove the index's own files from ``report`` when the index lies inside the repository
        outside ``.rag/`` (``RAG_INDEX_PATH=index.sqlite``), counted as ``skipped["index_file"]``:
        the lock's JSON record would otherwise be indexed, and re-read on every update."""
        index = Path(self.index.path).resolve()
        try:
            rel = index.relative_to(self.repo_root.resolve()).as_posix()
        except ValueError:
            return  # outside the repository: the walk never sees it
        own = {rel + suffix for suffix in self._OWN_SUFFIXES}
        kept = [f for f in report.files if f.path not in own and not f.path.startswith(rel + ".broken-")]
        if len(kept) != len(report.files):
            report.skipped["index_file"] = report.skipped.get("index_file", 0) + len(report.files) - len(kept)
            report.files = kept

    def _check_owner(self) -> None:
        """Refuse to update an index built for another repository that still exists (its
        ``repo_root`` meta value): it would replace that repository's files, and documents added to it
        would answer for this one. An index whose repository is gone (moved) is adopted.

        Raises:
            IndexOfAnotherRepositoryError: naming both roots and the way out.
        """
        stored = self.index.meta("repo_root")
        if not stored:
            return
        try:
            same = os.path.samefile(stored, self.repo_root)
        except OSError:  # the recorded repository is gone (moved, deleted): this one takes the index over
            return
        if not same and os.path.isdir(stored):
            raise IndexOfAnotherRepositoryError(
                f"{self.index.path} is the index of {stored}, not of {self.repo_root}: give each repository its "
                f"own index (--index, RAG_INDEX_PATH, index_path) or rebuild this one with `slackzilla index --full`")

    def update(self, *, full: bool = False, progress: ProgressFn | None = None,
               should_stop: Callable[[], bool] | None = None) -> IndexStats:
        """Bring the index up to date with the working tree, in one transaction.

        Unchanged files are not re-chunked, nor read when their stat says so (size, mtime, inode
        change time and inode number as stored, :func:`rag.ingest.prepare.stat_unchanged`); a file
        whose stat changed is read and hashed, so a content change is seen even when size and mtime
        are unchanged; vanished files are removed. ``full=True`` rebuilds every file.

        Args:
            full: rebuild from scratch.
            progress: called as ``progress(done, total)`` while files are processed.
            should_stop: polled before each directory and file; when it returns true the update
                raises :class:`~rag.errors.UpdateCancelledError` before writing anything.

        Returns:
            An :class:`IndexStats`.

        Raises:
            IndexUnavailableError: the index cannot be written; the previous generation stays.
            UpdateCancelledError: ``should_stop`` returned true; the previous generation stays.
            IndexWorkerError: a worker process preparing files died; the previous generation stays.
            IndexOfAnotherRepositoryError: the index belongs to another repository that still exists
                (not with ``full``, which rebuilds it for this one).
        """
        started = time.perf_counter()
        with self._update_lock:
            if not full:
                self._check_owner()
            report = walk(self.repo_root, self.walk_policy, should_stop=should_stop)
            self._drop_own_files(report)
            if self.scope is not None:
                self.scope.apply(report)
            if self.index.meta("parse_version") not in (None, str(PARSE_VERSION)):
                full = True  # stored structures come from another parser version
            if self.index.meta("chunker") not in (None, self.chunk_policy.signature()):
                full = True  # chunked by other rules or sizes
            if self.index.meta("kinds") != str(KINDS_VERSION):
                full = True  # files classified (source, example, test …) by other rules, or by an older version
            if self.index.meta("redaction") != str(REDACTION_VERSION):
                full = True  # redacted by other rules: a stored chunk may hold a value the current rules remove
            literals = secret_literals(self.repo_root, report.secret_files)
            self._secret_values = literals
            if self.index.meta("secret_values") not in (None, literals.digest):
                full = True  # a secret file changed: re-redact every file
            known = {} if full else self.index.file_rows()
            stats = IndexStats(skipped=dict(report.skipped),
                               problems=[{"path": path, "reason": reason} for path, reason in report.problems])
            seen: set[str] = set()
            settled: list[WalkedFile] = []
            images_changed = sorted(report.images) != self.index.image_paths()
            updates: list[FileUpdate] = []
            meta = {"repo_root": str(self.repo_root), "parse_version": str(PARSE_VERSION), "kinds": str(KINDS_VERSION),
                    "redaction": str(REDACTION_VERSION), "copy_rules": str(COPY_RULES_VERSION),
                    "secret_values": literals.digest, "chunker": self.chunk_policy.signature()}

            def record_copies(conn) -> None:
                stats.copies = update_copies(conn, repo_root=self.repo_root, updates=updates,
                                             removed=removed, full=full, shared_lines=self._shared_lines)

            with contextlib.ExitStack() as stack:
                results = stack.enter_context(contextlib.closing(prepare_files(
                    report.files, known=known, literals=literals, parser=self._parser,
                    chunk_policy=self.chunk_policy, policy=self.pool_policy, progress=progress,
                    should_stop=should_stop)))
                # A full rebuild writes each file as it comes back, inside one transaction (rolled
                # back on any failure), so writing overlaps the workers' preparing; the rows and
                # their ids are those Index.apply would write after the last file.
                writer = stack.enter_context(self.index.writer(full=True)) if full else None
                for wf, result in zip(report.files, results, strict=True):
                    old = known.get(wf.path)
                    if isinstance(result, Skipped):
                        stats.skip(result.reason, wf.path)
                        continue
                    seen.add(wf.path)
                    if isinstance(result, Unchanged):
                        if result.settled is not None:
                            settled.append(result.settled)
                        continue
                    updates.append(result.update)
                    for reason in result.problems:  # indexed, chunked coarser than usual (deep_nesting)
                        stats.degraded(reason, wf.path)
                    if writer is not None:
                        writer.insert(result.update)
                    stats.redactions += result.update.redactions
                    stats.parse_seconds += result.parse_seconds
                    if old is None:
                        stats.added += 1
                    else:
                        stats.changed += 1
                removed = [p for p in known if p not in seen]
                if writer is not None:
                    writer.set_images(report.images)
                    writer.set_meta(meta)
                    record_copies(writer.conn)
            stats.removed = len(removed)
            if full:
                stats.generation = self.index.generation()
            elif (updates or removed or images_changed or self.index.generation() == 0
                  or self.index.meta("copy_rules") != str(COPY_RULES_VERSION)):  # copies by other rules: again
                stats.generation = self.index.apply(updates=updates, removed=removed, images=report.images,
                                                    meta=meta, after=record_copies)
            else:
                stats.generation = self.index.generation()
                stats.copies = self.index.copy_count()
            try:  # read to tell they were unchanged: trusted by their stat next time (best effort)
                self.index.refresh_stats(settled)
            except sqlite3.Error as exc:  # a read-only or busy index still answers; the files are read again
                log.warning("index update: the stats of %d unchanged files were not stored (%s: %s); "
                            "they are read again next time", len(settled), type(exc).__name__, exc)
            stats.files, stats.chunks = self.index.counts()
            stats.seconds = time.perf_counter() - started
            log.info("index update", extra={"stats": stats.to_json()})
            return stats

    def embed_pending(self, *, batch_size: int = 32, should_stop=None, progress=None):
        """Embed chunks that have no vector yet (see :meth:`rag.search.vector_stream.VectorStream.embed_pending`;
        ``progress(done, planned)`` after each batch).

        Returns the :class:`~rag.store.vectors.EmbedReport`, or ``None`` without an embeddings provider.
        """
        if self.vectors is None:
            return None
        return self.vectors.embed_pending(batch_size=batch_size, should_stop=should_stop, progress=progress)

    # -- querying (delegated to the retriever) ----------------------------------------------------

    @property
    def retrieval_policy(self) -> RetrievalPolicy:
        """The retrieval knobs (the retriever's; settable)."""
        return self.retriever.policy

    @retrieval_policy.setter
    def retrieval_policy(self, policy: RetrievalPolicy) -> None:
        self.retriever.policy = policy

    @property
    def vectors(self) -> VectorStream | None:
        """The vector stream, ``None`` without an embeddings provider (the retriever's; settable)."""
        if self._retriever is None and self._retriever_args[1] is None:
            return None  # nothing to build: an index update without embeddings stays free of the retrieval side
        return self.retriever.vectors

    @vectors.setter
    def vectors(self, stream: VectorStream | None) -> None:
        self.retriever.vectors = stream

    @property
    def reranker(self) -> Reranker | None:
        """The optional reranker (the retriever's; settable)."""
        return self.retriever.reranker

    @reranker.setter
    def reranker(self, reranker: Reranker | None) -> None:
        self.retriever.reranker = reranker

    def retrieve(self, question: str, *, limit: int = 8, kind: str | None = None,
                 depth: Depth | None = None, abstain: bool = True) -> list[Source]:
        """Top chunks for ``question``; ``[]`` when nothing really matches.

        See :meth:`rag.search.retriever.Retriever.retrieve` for the pipeline.

        Args:
            question: any text; FTS5 syntax in it is inert. Capped at ``MAX_QUESTION_CHARS``.
            limit: maximum number of chunks (≥ 1).
            kind: only chunks of this kind (``documentation``, ``source``, ``config``, ``example``, ``test``, ``types``).
            depth: more chunks of the best files (:class:`rag.search.lexical.Depth`, the packer's pool).
            abstain: ``False``: never abstain on weak evidence (:meth:`rag.search.retriever.Retriever.retrieve`).
        """
        sources = self.retriever.retrieve(question, limit=limit, kind=kind, depth=depth, abstain=abstain)
        for source in sources:
            source.repo = self.name
        return sources

    def absent_terms(self, question: str) -> list[str]:
        """Words of ``question`` that occur nowhere in the index, as the question spells them (at most
        five): why it got no sources (:meth:`rag.search.retriever.Retriever.absent_terms`)."""
        return self.retriever.absent_terms(question)

    def retrieve_images(self, question: str, *, limit: int = 6) -> list[ImageHit]:
        """Images whose path tokens match the question, ``[]`` when none do
        (:meth:`rag.search.retriever.Retriever.retrieve_images`)."""
        return self.retriever.retrieve_images(question, limit=limit)

    def structures(self) -> dict[str, FileStructure]:
        """Parsed structure of every indexed JS-family file, imports resolved (cached per generation)."""
        return self.retriever.structures()

    def code_graph(self) -> CodeGraph:
        """The repository's :class:`~rag.context.codegraph.CodeGraph` (cached per generation)."""
        return self.retriever.code_graph()

    def warm(self) -> int:
        """Build the committed generation's structures, code graph and symbol table (and load its vectors) now, once
        (:meth:`rag.search.retriever.Retriever.warm`), so the next question does not wait for them;
        returns the generation."""
        return self.retriever.warm()

    def code_context(self, question: str, *, retrieved: list[Source], max_entries: int = 20) -> list[CodeEntry]:
        """Structural context for ``question`` (:func:`rag.context.packer.code_context` on this repository)."""
        from rag.context import packer as _context

        return _context.code_context(question, graph=self.code_graph(), retrieved=retrieved,
                                     read_lines=self.read_lines, max_entries=max_entries,
                                     copies=self.retriever.copies())

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
        from rag.context import packer as _context

        # The context reads deeper than the sources shown: spans are short, so more files fit
        # (the pool: rag.context.pool; an abstention, no sources, stays an empty context).
        pool = _context.context_sources(self.retrieve, question, sources)
        entries = self.code_context(question, retrieved=sources) if with_code else []
        return _context.pack_context(question, sources=pool, code_entries=entries, budget_tokens=budget_tokens,
                                     read_lines=self.read_lines, graph=self.code_graph())

    def indexed_paths(self) -> list[str]:
        """Every indexed file path, sorted."""
        return self.index.file_paths()

    def read_lines(self, path: str, start: int, end: int) -> str:
        """Indexed text of ``path`` lines ``start..end`` (redacted), joined from its chunks.

        Reads the index, never the working tree, so secrets stay redacted and the
        text matches the generation that produced the line numbers. Lines past the
        end of the file are simply absent. Raises ``KeyError`` for an unindexed path
        (:meth:`rag.store.index.Index.read_lines`).
        """
        return self.index.read_lines(path, start, end)
