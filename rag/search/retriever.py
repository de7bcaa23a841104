"""The retriever: one question → the sources that answer it, with a per-generation cache.

For one question :meth:`Retriever.retrieve` runs, inside one read transaction (so one
index generation):

1. :func:`rag.search.query.analyze` (terms, identifiers, path mentions, intents);
2. the vector stream, when an embeddings provider is configured
   (:mod:`rag.search.vector_stream`: the question is embedded and the vectors searched in a
   worker thread while the lexical stage runs, :func:`~rag.search.vector_stream.start_search`);
3. the structure stream (:func:`rag.search.structure.structure_bonus`);
4. lexical ranking (:func:`rag.search.lexical.rank_chunks`: FTS5 BM25 + coverage + priors)
   and abstention (:meth:`rag.search.lexical.Evidence.abstain`, overruled for a long
   description when the vectors' best chunk clearly stands out);
5. with vectors, fusion of the streams' file scores by z-scores
   (:func:`rag.search.lexical.fuse_streams`) and the best files' chunks ordered by their ranks
   within the file, every chunk of those files scored by the vectors
   (:mod:`rag.search.within_file`: the chunk ids must be this generation's), then the source
   files defining what the leading documentation writes as code moved up
   (:mod:`rag.search.doc_links`, with the structure stream);

then, outside it: the optional reranker
(:func:`rag.search.rerank.rerank_candidates`, a network call), the issue/PR quota
(:func:`rag.search.item_quota.limit_items`), with vectors the implementation files among the
leading places (:func:`rag.search.source_lead.lead_with_sources`), per-file diversification
and each source's focus line.

Values derived from one generation — IDF and path stems, the path list, the chunk
count, the parsed structures, the code graph, the symbol table and the package's own
names — live in a :class:`GenerationCache`, replaced when the committed generation
changes (an update by this process or another one). The retriever is thread-safe:
concurrent ``retrieve`` calls share the cache. The expensive fields (structures, code
graph, symbol table: seconds of CPU on a 2,000-file repository) are built **once per
generation**: the first thread to need one builds it under the cache's lock while the
others wait for it, instead of every concurrent question building its own copy while
holding the GIL (issue 13). :attr:`Retriever.builds` counts the builds. Cheap fields
(paths, chunk count, IDF entries) may be filled twice in a race; the values are equal.
"""
from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rag.context.codegraph import CodeGraph
from rag.ingest.manifests import read_manifests, repository_names
from rag.parse.parser import FileStructure, resolve_imports
from rag.parse.tsconfig import PathAliases, is_config_path
from rag.errors import ProviderError
from rag.providers.rerank import Reranker
from rag.secrets import REDACTED, redact_text
from rag.search import lexical
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY, RetrievalPolicy
from rag.search.item_quota import limit_items
from rag.search.query import Query, analyze
from rag.search.rerank import rerank_candidates
from rag.search.doc_links import link_from_docs
from rag.search.english import common_words
from rag.search.file_types import language_words
from rag.search.source_lead import lead_with_sources
from rag.search.structure import CallerTable, SymbolTable, caller_table, structure_bonus, symbol_table
from rag.search.copies import original_sources, prefer_sources
from rag.search.import_blocks import demote_import_blocks
from rag.search.near_duplicates import demote_near_duplicates
from rag.search.vector_stream import VectorStream, above_floor, start_search, top_zscore
from rag.store import queries
from rag.store.index import Index
from rag.text import index_text, light_stem
from rag.types import ImageHit, Source

__all__ = ["MAX_QUESTION_CHARS", "MAX_ABSENT_TERMS", "MAX_SHOWN_WORD_CHARS", "GenerationCache", "Retriever"]

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 4000
"""Questions are cut to this many characters before retrieval."""
MAX_ABSENT_TERMS = 5
"""At most this many absent words are named to the user (:meth:`Retriever.absent_terms`)."""
MAX_SHOWN_WORD_CHARS = 24
"""Longer runs of letters are never named to the user (:meth:`Retriever.absent_terms`): not words."""


@dataclass(slots=True)
class GenerationCache:
    """Values derived from one index generation; ``None`` until first needed.

    Attributes:
        generation: the index generation they were read from.
        idf: :func:`rag.search.lexical.rank_chunks`' cache (term → chunk document
            frequency; path stems and path IDF under tuple keys), filled as questions come.
        paths: every indexed path, sorted.
        total_chunks: number of chunks.
        structures: path → parsed structure (imports resolved) of every parsed file.
        graph: the :class:`~rag.context.codegraph.CodeGraph` of ``structures``.
        symbols: the :data:`~rag.search.structure.SymbolTable` of ``structures``.
        callers: the :data:`~rag.search.structure.CallerTable` of ``structures``.
        repository_names: the package's own name words (:func:`rag.ingest.manifests.repository_names`).
        build_lock: held while ``structures``, ``graph``, ``symbols`` or ``callers`` is built (re-entrant:
            the graph and the symbol table build the structures first).
        copies: copy path → its indexed sources, best first (:mod:`rag.ingest.copies`).
    """

    generation: int
    idf: dict = field(default_factory=dict)
    paths: list[str] | None = None
    total_chunks: int | None = None
    structures: dict[str, FileStructure] | None = None
    graph: CodeGraph | None = None
    symbols: SymbolTable | None = None
    callers: CallerTable | None = None
    repository_names: frozenset[str] | None = None
    build_lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    copies: dict[str, tuple[str, ...]] | None = None


_AFTER_SECRET_NAME = re.compile(
    r"""(?P<name>\b(?:pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|(?:api|access|secret|private)[ _-]?key)"""
    r"""\b[\s:=]*(?:(?:is|was|of|set to)\s+)?)["'`]?[^\s"'`,;]+""", re.IGNORECASE)
"""A secret's name and the word after it (``password swordfishzz``, ``token is x``, ``api key = x``): that word
may be the credential itself, in a form no credential pattern catches (letters only), so it is never named back
as an absent word (:meth:`Retriever.absent_terms`)."""


class Retriever:
    """Retrieval over one repository's index (module docstring). Thread-safe.

    Args:
        repo_root: repository root (its manifests name the package).
        index: the index to read.
        policy: retrieval knobs.
        vectors: the vector stream, or ``None`` for BM25 only.
        reranker: optional reranker of the fused top candidates.

    ``policy``, ``vectors`` and ``reranker`` are plain attributes, read at each call.

    Attributes:
        builds: how many times each per-generation value was built, by name
            (``structures``, ``graph``, ``symbols``, ``callers``): one each per generation that needed it.
    """

    def __init__(self, repo_root: Path, index: Index, *, policy: RetrievalPolicy = DEFAULT_RETRIEVAL_POLICY,
                 vectors: VectorStream | None = None, reranker: Reranker | None = None) -> None:
        self.repo_root = repo_root
        self.index = index
        self.policy = policy
        self.vectors = vectors
        self.reranker = reranker
        self._cache = GenerationCache(-1)
        self._cache_lock = threading.Lock()
        self.builds: Counter[str] = Counter()

    # -- the question ------------------------------------------------------------------------

    def retrieve(self, question: str, *, limit: int = 8, kind: str | None = None,
                 depth: lexical.Depth | None = None, abstain: bool = True) -> list[Source]:
        """Top chunks for ``question``, best file first; ``[]`` when nothing really matches.

        Args:
            question: any text; FTS5 syntax in it is inert. Cut to :data:`MAX_QUESTION_CHARS`.
            limit: maximum number of chunks (``< 1`` → ``[]``).
            kind: only chunks of this kind (``documentation``, ``source``, ``config``, ``example``, ``test``, ``types``).
            depth: more chunks of the best files, interleaved with the other files' best chunks
                (:class:`rag.search.lexical.Depth`; the packer's pool); ``None``: at most
                ``policy.per_file`` chunks per file, every file's best chunk first.
            abstain: ``False``: return the best chunks even when the lexical evidence is too weak
                to answer (:meth:`rag.search.lexical.Evidence.abstain`); ``[]`` only when nothing
                matches. For a second retrieval of a question already answered (the packer's
                source-only pool, :func:`rag.context.packer.context_sources`): restricted to one
                kind of file, a question often shares too few words with it to pass the test
                its whole repository passed.

        Returns:
            :class:`~rag.types.Source` objects with scores (larger is better; their scale
            depends on the fusion used) and ``focus`` lines. Provider failures of the vector
            stream fall back to BM25 (logged); reranker failures keep the fused order.
        """
        question = (question or "")[:MAX_QUESTION_CHARS]
        if not question.strip() or limit < 1:
            return []
        query = analyze(question)
        policy = self.policy
        streams = policy.streams
        with self.index.read() as conn:
            # the question is embedded and the vectors searched in a worker thread meanwhile
            pending = start_search(self.vectors if "vectors" in streams else None, conn, question,
                                   k=policy.stream_pool)
            cache = self._cache_for(conn)
            self._fill_paths(conn, cache)
            copies = self._copies(conn, cache)
            if "lexical" not in streams:
                return self._vectors_only(conn, pending.result(), copies, limit=limit, kind=kind, query=query)
            structure = self._structure_bonus(conn, cache, query) if "structure" in streams else None
            cands, evidence = lexical.rank_chunks(
                conn, query, policy=policy, kind=kind, idf_cache=cache.idf,
                total_chunks=cache.total_chunks, known_paths=cache.paths,
                symbol_files=structure,
                extra_ids=lambda: [h.chunk_id for h in above_floor(pending.result(), policy.vector_floor_ratio)],
                meta_terms=self._repository_names(conn, cache), copies=copies,
            )
            all_hits = pending.result()
            hits = above_floor(all_hits, policy.vector_floor_ratio)
            # Lexical evidence decides abstention (cosines of answerable and unanswerable questions
            # overlap), but a long description worded unlike the code is answered when the vectors'
            # best chunk clearly stands out of its neighbours (Evidence.abstain).
            # The vectors' z-score can only overrule an abstention (Evidence.abstain): computed only then.
            if not cands or (abstain and evidence.abstain(policy) and evidence.abstain(
                    policy, vector_z=top_zscore(all_hits) if all_hits else None)):
                return []
            pinned = {c.id for c in cands if c.score >= lexical.HARD_BOOST}  # before fusion rescales scores
            pool = list(cands)
            fused = bool(hits)
            if fused:
                similarity: dict[int, float] = {}
                for h in hits:
                    similarity.setdefault(h.chunk_id, h.similarity)
                cands = lexical.fuse_streams(cands, similarity, policy=policy, structure=structure,
                                             coverage=evidence.coverage)
                if policy.within_files > 0:  # in the same read transaction: the chunk ids are its generation's
                    cands = self._order_within_files(conn, cands, question, pool=pool, kind=kind,
                                                     coverage=evidence.coverage)
                if policy.doc_link_share > 0 and "structure" in streams:  # the code the leading docs name
                    # the symbol table is built (once per generation) only when a leading page names code
                    cands = link_from_docs(cands, definers=lambda name: self._symbols(conn, cache).get(name, {}),
                                           share=policy.doc_link_share, pinned=pinned)
        cands = prefer_sources(cands, copies, pool=pool, keep=[m for m in query.paths if m in copies])
        if self.reranker is not None:  # optional; outside the read transaction (a network call)
            cands = rerank_candidates(cands, question=question, reranker=self.reranker,
                                      top=policy.rerank_top, pinned=pinned,
                                      min_score=getattr(self.reranker, "min_score", None))
        cands = demote_import_blocks(cands, query, pinned=pinned, doc_types=lexical.DOC_TYPES)
        cands = demote_near_duplicates(cands, pinned=pinned)  # one of a family of near-identical files stands for it
        cands = limit_items(cands, question, kind=kind)  # issues/PRs: a stream beside the code
        if fused and kind is None and cands:  # the implementation among the leading files (source_lead)
            cands = lead_with_sources(cands, query, lead=policy.lead_files, min_source=policy.lead_min_source,
                                      pinned=pinned, min_score=policy.relative_threshold * cands[0].score)
        sources = lexical.diversify(cands, limit=limit, per_file=policy.per_file,
                                    relative_threshold=policy.relative_threshold, depth=depth,
                                    hard_alone=not evidence.beyond_named
                                    or any(b >= lexical.HARD_BOOST for b in (structure or {}).values()))
        for source in sources:
            source.focus = lexical.focus_line(source.text, source.start, query)
        return sources

    def _order_within_files(self, conn: sqlite3.Connection, cands: list[lexical.Candidate], question: str, *,
                            pool: list[lexical.Candidate], kind: str | None,
                            coverage: float) -> list[lexical.Candidate]:
        """The best fused files' chunks ordered by their ranks within the file
        (:mod:`rag.search.within_file`): every chunk of those files is scored by the vectors, and a
        file's best chunks by cosine join the candidates when no stream listed them.
        A provider failure keeps the fused order (logged)."""
        from rag.search.fusion import adaptive_weights
        from rag.search.within_file import vector_picks, within_file_order

        policy = self.policy
        paths: list[str] = []
        for c in cands:  # fused order; a hard structural file keeps its lexical order
            if c.score < lexical.FUSED_HARD_SCORE and c.path not in paths:
                paths.append(c.path)
                if len(paths) >= policy.within_files:
                    break
        if not paths or self.vectors is None:
            return cands
        rows = queries.chunk_ids_of_paths(conn, paths, kind=kind)
        try:
            sims = self.vectors.chunk_similarities(conn, question, [cid for cid, _ in rows])
        except ProviderError as exc:
            log.warning("within-file vector order unavailable, fused order kept: %s", exc)
            return cands
        by_path: dict[str, dict[int, float]] = {}
        for cid, path in rows:
            if cid in sims:
                by_path.setdefault(path, {})[cid] = sims[cid]
        known = {c.id for c in cands}
        wanted = [cid for path in paths for cid in vector_picks(by_path.get(path, {}), known,
                                                                 per_file=policy.within_chunks)]
        added = [lexical.Candidate(*row) for row in queries.chunks_by_id(conn, wanted, kind=kind)]
        file_score = {c.path: c.file_score for c in cands if c.path in by_path}
        for c in added:   # fusion is done: an added chunk needs only its file's score (and no lexical rank)
            c.lexical = False
            c.file_score = file_score[c.path]
        weights = adaptive_weights(coverage, base=policy.lexical_base, slope=policy.lexical_slope)
        return within_file_order([*cands, *added], lexical_order=[c.id for c in pool if c.lexical],
                                 similarity=by_path, weights=weights, k=policy.within_k)

    def _vectors_only(self, conn: sqlite3.Connection, hits: list, copies: dict[str, tuple[str, ...]], *,
                      limit: int, kind: str | None, query: Query) -> list[Source]:
        """The vector stream alone (``policy.streams == {"vectors"}``): chunks by cosine × their prior
        (:func:`rag.search.lexical.chunk_prior`), sources over copies, per-file diversified; never abstains (a measuring tool, see
        :class:`~rag.search.lexical.RetrievalPolicy`)."""
        similarity = {}
        for h in hits:
            similarity.setdefault(h.chunk_id, h.similarity)
        rows = queries.chunks_by_id(conn, list(similarity), kind=kind)
        cands = [lexical.Candidate(*row) for row in rows]
        for c in cands:   # cosine × the intent prior, as the vector stream is fused (lexical.fuse_streams)
            c.score = similarity[c.id] * lexical.chunk_prior(c, query)
        cands.sort(key=lambda c: (-c.score, c.id))
        cands = prefer_sources(cands, copies, keep=[m for m in query.paths if m in copies])
        sources = lexical.diversify(cands, limit=limit, per_file=self.policy.per_file, relative_threshold=0.0)
        for source in sources:
            source.focus = lexical.focus_line(source.text, source.start, query)
        return sources

    def absent_terms(self, question: str, *, limit: int = MAX_ABSENT_TERMS) -> list[str]:
        """Words of ``question`` that occur nowhere in the index (:func:`rag.search.lexical.absent_terms`),
        spelled as the question writes them (``localStorage``, not the index term ``localstorage``), without
        repeats, at most ``limit``: why a question got no sources. These words are shown to the user, and a
        credential pasted into a question must not be echoed into a channel: words are taken from the
        question with its credentials redacted (:func:`rag.secrets.redact_text`), and only whole words of
        letters, at most :data:`MAX_SHOWN_WORD_CHARS` of them, are named. ``[]`` for an empty question.

        Raises:
            IndexUnavailableError: the index cannot be read.
        """
        question = (question or "")[:MAX_QUESTION_CHARS]
        query = analyze(question)
        if not query.terms:
            return []
        with self.index.read() as conn:
            cache = self._cache_for(conn)
            terms = lexical.absent_terms(conn, query, cache=cache.idf, meta_terms=self._repository_names(conn, cache))
        shown = redact_text(question)[0].replace(REDACTED, " ")  # a pasted credential's pieces are never named
        shown = _AFTER_SECRET_NAME.sub(r"\g<name> ", shown)  # nor the word after a secret's name ("password x")
        spelled: dict[str, str] = {}
        for term in terms:
            match = re.search(rf"(?<![A-Za-z0-9_]){re.escape(term)}(?![A-Za-z0-9_])", shown, re.IGNORECASE)
            if match is None:  # only inside a credential, or a piece of a longer word ("web" of "WebSocket")
                continue
            word = match.group(0)
            if word.isascii() and word.isalpha() and len(word) <= MAX_SHOWN_WORD_CHARS:
                spelled.setdefault(word.lower(), word)
        return list(spelled.values())[:limit]

    def retrieve_images(self, question: str, *, limit: int = 6) -> list[ImageHit]:
        """Images whose path tokens match the question, best first; ``[]`` when none do.

        Score: the share of the question's distinct term stems found among the stems of
        the image's path (extension dropped); ties by path.
        """
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

    # -- structure, cached per generation --------------------------------------------------------

    def structures(self) -> dict[str, FileStructure]:
        """Parsed structure of every indexed JS-family file, imports resolved (cached per generation)."""
        with self.index.read() as conn:
            return self._structures(conn, self._cache_for(conn))

    def copies(self) -> dict[str, tuple[str, ...]]:
        """Copy path → its indexed sources, best first (:mod:`rag.ingest.copies`; cached per generation)."""
        with self.index.read() as conn:
            return self._copies(conn, self._cache_for(conn))

    def code_graph(self) -> CodeGraph:
        """The repository's :class:`~rag.context.codegraph.CodeGraph` (cached per generation)."""
        with self.index.read() as conn:
            return self._graph(conn, self._cache_for(conn))

    def _cache_for(self, conn: sqlite3.Connection) -> GenerationCache:
        generation = self.index.generation(conn)
        with self._cache_lock:
            if self._cache.generation != generation:
                self._cache = GenerationCache(generation)
            return self._cache

    def warm(self) -> int:
        """Build the structures, the code graph, the symbol table and every path's traits and stems
        (:func:`rag.search.lexical.path_tables`) of the committed generation now (each once: a no-op when
        already built), load its vectors when there is a vector stream (0.6-1 s at 100k chunks) and the
        common English words of the abstention (:func:`rag.search.english.common_words`, ~20 ms once per
        process); returns that generation."""
        common_words()
        with self.index.read() as conn:
            cache = self._cache_for(conn)
            self._graph(conn, cache)
            self._symbols(conn, cache)
            lexical.path_tables(self._fill_paths(conn, cache), cache.idf)
            if self.vectors is not None:
                self.vectors.matrix_of(conn)
            return cache.generation

    @staticmethod
    def _fill_paths(conn: sqlite3.Connection, cache: GenerationCache) -> list[str]:
        """The generation's indexed paths (``cache.paths``, with ``cache.total_chunks``), read once."""
        if cache.paths is None:
            cache.paths = queries.file_paths(conn)
            cache.total_chunks = queries.count_chunks(conn)
        return cache.paths

    def _once(self, cache: GenerationCache, name: str, build):
        """``cache.<name>``, built by ``build()`` under the cache's lock when still ``None`` (one
        builder per generation; the other threads wait for its value)."""
        value = getattr(cache, name)
        if value is not None:
            return value
        with cache.build_lock:
            value = getattr(cache, name)
            if value is None:
                value = build()
                setattr(cache, name, value)
                with self._cache_lock:
                    self.builds[name] += 1
            return value

    def _structures(self, conn: sqlite3.Connection, cache: GenerationCache) -> dict[str, FileStructure]:
        return self._once(cache, "structures", lambda: self._structures_uncached(conn))

    @staticmethod
    def _structures_uncached(conn: sqlite3.Connection) -> dict[str, FileStructure]:
        """The stored structures, decoded by :meth:`FileStructure.from_json` (the one decoder);
        a document of another parser version, or a malformed one, is skipped with a warning."""
        decoded: dict[str, FileStructure] = {}
        for path, doc in queries.stored_structures(conn):
            try:
                decoded[path] = FileStructure.from_json(json.loads(doc))
            except ValueError as exc:  # another parser version, or a damaged document
                log.warning("stored structure of %s is skipped (%s); it is re-parsed on the next full index",
                            path, exc)
        known = queries.file_paths(conn, ordered=False)
        configs = {path: queries.joined_lines(conn, path, 1, 1 << 31) or ""
                   for path in known if is_config_path(path)}
        resolve_imports(decoded, known_paths=known, aliases=PathAliases.from_configs(configs))
        return decoded

    def _graph(self, conn: sqlite3.Connection, cache: GenerationCache) -> CodeGraph:
        return self._once(cache, "graph", lambda: CodeGraph(self._structures(conn, cache)))

    def _symbols(self, conn: sqlite3.Connection, cache: GenerationCache) -> SymbolTable:
        return self._once(cache, "symbols", lambda: symbol_table(self._structures(conn, cache)))

    def _callers(self, conn: sqlite3.Connection, cache: GenerationCache) -> CallerTable:
        return self._once(cache, "callers", lambda: caller_table(self._structures(conn, cache)))

    def _structure_bonus(self, conn: sqlite3.Connection, cache: GenerationCache,
                         query: Query) -> dict[str, float] | None:
        return structure_bonus(query, known_paths=cache.paths or [],
                               structures=lambda: self._structures(conn, cache),
                               graph=lambda: self._graph(conn, cache),
                               symbols=lambda: self._symbols(conn, cache),
                               callers=lambda: self._callers(conn, cache))

    def _copies(self, conn: sqlite3.Connection, cache: GenerationCache) -> dict[str, tuple[str, ...]]:
        """Copy path → its indexed original sources (the ``file_copies`` table, a copy of a copy standing for the
        original: :func:`rag.search.copies.original_sources`), read once per generation."""
        if cache.copies is None:
            found: dict[str, list[str]] = {}
            for path, source, _reason in queries.file_copies(conn):
                found.setdefault(path, []).append(source)
            cache.copies = original_sources(found)
        return cache.copies

    def _repository_names(self, conn: sqlite3.Connection, cache: GenerationCache) -> frozenset[str]:
        """The words naming the repository itself, once per generation: its package's name (from the
        manifests) and the languages of its indexed files (:func:`rag.search.file_types.language_words`)."""
        if cache.repository_names is None:
            cache.repository_names = (repository_names(read_manifests(self.repo_root))
                                      | language_words(self._fill_paths(conn, cache)))
        return cache.repository_names

