"""Lexical retrieval: BM25 candidates from FTS5, re-ranked with repository signals.

Pipeline for one question (all inside one read transaction, so one generation):

1. :func:`rag.search.query.analyze` → terms, identifiers, path mentions, intents.
2. FTS5 BM25 over chunks (``bm25()``; SQLite's constants k1 = 1.2, b = 0.75,
   Robertson & Zaragoza 2009) with column weights body/path/heading/symbols,
   the top ``candidate_chunks`` kept; phrases too common to change that top are
   left out of the query (MaxScore, :mod:`rag.search.bm25_topk`).
3. Each candidate chunk gets a coverage score: the IDF-weighted share of the
   question's terms found in the chunk text, its path or its heading (IDF from
   FTS5 document frequencies, ``log((N - df + 0.5) / (df + 0.5) + 1)`` as in
   BM25). Coverage is what separates "mentions one common word" from "is about
   this"; it also drives abstention.
4. Files are scored from their best chunks plus path-token matches, explicit
   path mentions (forced first), symbol definitions, and intent priors (docs
   for "how do I…", source for "where is…", tests demoted unless asked for).
5. Results are diversified per file (best chunk of each file first), cut by a
   relative threshold, and empty when the best coverage is below
   ``min_coverage``: no real match → no results rather than noise.
"""
from __future__ import annotations

import math
import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rag.ingest.manifests import is_manifest
from rag.ingest.walk import DECLARATIONS, in_doc_folder
from rag.search.bm25_topk import top_bm25
from rag.search.english import is_rare_word
from rag.search.query import Query, fts_expression, fts_phrases, version_pattern
from rag.search.within_file import DEFAULT_WITHIN_CHUNKS, DEFAULT_WITHIN_FILES, DEFAULT_WITHIN_K
from rag.store import queries
from rag.text import index_text, light_stem, light_stems, query_terms, synonyms_of
from rag.types import Source

__all__ = ["STREAMS", "RetrievalPolicy", "DEFAULT_RETRIEVAL_POLICY", "Candidate", "Evidence", "HARD_BOOST", "FUSED_HARD_SCORE", "rank_chunks",
           "fuse_streams", "diversify", "Depth", "focus_line", "explicit_paths", "intent_prior", "chunk_prior", "absent_terms",
           "NO_INTENT_DOC_PRIOR",
           "PROGRAM_NAME_WORDS",
           "is_link_list", "DOC_TYPES", "META_TERMS",
           "LOW_VALUE_DIRS", "PathTraits", "path_traits", "path_tables"]

DOC_TYPES = frozenset({"md", "markdown", "mdx", "rst", "txt"})
"""File types of prose (documentation)."""
# Words that name the repository's own parts rather than a topic ("which module
# handles…", "where in the framework…"): they never decide coverage.
META_TERMS = frozenset(
    "app application code codebase component file files folder framework function functions handled handles "
    "implement implemented implementation lib library logic method methods module modules package project "
    "repo repository source src class classes keep kept place part".split()
)


STREAMS = frozenset({"lexical", "structure", "vectors"})
"""The retrieval streams (:attr:`RetrievalPolicy.streams`)."""


LOW_VALUE_DIRS = re.compile(r"(^|/)(tests?|__tests__|spec|specs|benchmarks?|bench|fixtures?|examples?|e2e)(/|$)", re.I)
"""Directories of tests, benchmarks, fixtures and examples: demoted unless the question asks for tests."""


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """Retrieval knobs (named constants; see module docstring for their role).

    Attributes:
        candidate_chunks: BM25 candidates read from FTS5 (150: half the seed's 300, measured
            with MiniLM and with BM25 + structure on the three eval sets: R@5 unchanged, MRR@10
            within 0.005, context line recall unchanged but one ``dev-hard`` question whose gold
            file moved from third to fourth place in the pool; at 100k chunks, ``slackzilla bench``
            query p50 / p95 about 12 / 37 → 7.5 / 27 ms: FTS5 scores the rows of fewer phrases
            (:mod:`rag.search.bm25_topk`), and half as many candidates are read and scored).
        fts_weights: BM25 column weights (body, path, heading, symbols).
        per_file: at most this many chunks of one file in a result list.
        relative_threshold: drop files scoring below this share of the best file that is not a hard
            structural candidate (≤ 0.5: a list fused with the vectors keeps every fused file, see
            :func:`fuse_streams`; :func:`diversify`).
        abstain_max_matched, abstain_min_terms, abstain_below_coverage: abstain when the
            best-covering chunk shares at most ``abstain_max_matched`` topical words with a
            question of at least ``abstain_min_terms`` of them and covers less than
            ``abstain_below_coverage`` of their IDF mass: a repository that answers a
            question shares three or more of its content words somewhere, one that does
            not usually hits one or two generic words ("requests", "server"). Also when
            nothing matches at all. Calibrated on the dev set (6 + 5 ``none`` questions).
        rrf_k: the Reciprocal Rank Fusion constant of the chunk order inside a file
            (``Σ w_s / (k + rank_s + 1)``, k = 60: Cormack, Clarke & Büttcher 2009).
        zscore_depth: each stream's best this many files set its mean and spread in the
            fusion of file scores (:func:`rag.search.fusion.zscore_fusion`).
        lexical_base, lexical_slope: the question's lexical weight is ``base + slope ×
            coverage`` and the vectors get the rest (:func:`rag.search.fusion.adaptive_weights`).
        stream_pool: candidates taken from each stream before fusion (≥ 20).
        structure_weight: a file the structure stream ties to the question (defining a
            symbol it names, reading the environment it asks about) adds this × its bonus to
            its fused score, in z units (:func:`fuse_streams`).
        min_vector_z, vector_override_min_terms: with vectors, a question of at least
            ``vector_override_min_terms`` topical words (twice ``abstain_min_terms``: a
            description, not a name) that the lexical evidence would abstain on is still
            answered when its best chunk stands ``min_vector_z`` standard deviations above its
            ~50 nearest neighbours (:func:`rag.search.vector_stream.top_zscore`; absolute
            cosines of answerable and unanswerable questions overlap; :meth:`Evidence.abstain`).
        vector_floor_ratio: vector hits below this share of the best hit's cosine are
            not fused (they would only add unrelated files).
        abstain_rare_absent, rare_absent_below_coverage, rare_absent_override_min_terms, rare_absent_max_terms:
            abstain when a topical word of the question is rare English and found nowhere in the index
            (:meth:`Evidence.abstain`, :mod:`rag.search.english`), unless the question has at least
            ``rare_absent_override_min_terms`` topical words and its best chunk covers at least
            ``rare_absent_below_coverage`` of them, or has more than ``rare_absent_max_terms`` topical words.
        streams: the streams to run, a subset of :data:`STREAMS` (``lexical`` = BM25 with
            its priors, ``structure`` = the code-graph stream, ``vectors`` = embeddings).
            Without ``lexical`` (``{"vectors"}``) the result is the vector ranking alone,
            per file, and never abstains: a measuring tool (``slackzilla eval --streams``).
        within_files, within_chunks, within_k: with vectors, the best ``within_files`` fused files
            have their chunks ordered by each stream's rank within the file (RRF constant
            ``within_k``), and each file's ``within_chunks`` best chunks by cosine join the
            candidates (:mod:`rag.search.within_file`); ``within_files = 0`` turns it off.
        lead_files, lead_min_source: among the first ``lead_files`` files of a ranking, at least
            ``lead_min_source`` are implementation files when it holds that many
            (:mod:`rag.search.source_lead`, where 4 and 3 are measured; ``lead_min_source = 0``
            turns it off).
        rerank_top: with a reranker configured (:mod:`rag.providers.rerank`), the fused top this
            many distinct chunks are reordered by its scores (hard structural boosts stay first).
        doc_link_share: with vectors and the structure stream, a source file defining a name the
            leading documentation writes as code gains this share of the best fused score per name
            (:mod:`rag.search.doc_links`, where 0.05 is measured; 0 turns it off).
    """

    candidate_chunks: int = 150
    fts_weights: tuple[float, float, float, float] = (1.0, 3.0, 2.0, 6.0)
    per_file: int = 2
    relative_threshold: float = 0.3
    abstain_max_matched: int = 2
    abstain_min_terms: int = 4
    abstain_below_coverage: float = 0.45
    rrf_k: int = 60
    lexical_base: float = 0.45
    lexical_slope: float = 0.3
    stream_pool: int = 50
    structure_weight: float = 0.5
    min_vector_z: float = 2.0   # rag.search.vector_stream.DEFAULT_MIN_VECTOR_Z
    vector_override_min_terms: int = 8
    vector_floor_ratio: float = 0.6
    rerank_top: int = 20
    zscore_depth: int = 10
    within_files: int = DEFAULT_WITHIN_FILES
    within_chunks: int = DEFAULT_WITHIN_CHUNKS
    within_k: int = DEFAULT_WITHIN_K
    lead_files: int = 4
    lead_min_source: int = 3
    doc_link_share: float = 0.05
    abstain_rare_absent: bool = True
    rare_absent_below_coverage: float = 0.6
    rare_absent_override_min_terms: int = 10
    rare_absent_max_terms: int = 12
    streams: frozenset[str] = frozenset({"lexical", "structure", "vectors"})


DEFAULT_RETRIEVAL_POLICY = RetrievalPolicy()


@dataclass(frozen=True, slots=True)
class Evidence:
    """How well the repository matches a question as a whole.

    Attributes:
        coverage: best chunk's share of topical IDF mass matched (0..1).
        absent_share: share of topical terms found nowhere in the index (0..1).
        explicit_path: the question names an indexed file, or the structure stream answers it
            outright (a hard bonus: the importers of a package it names).
        matched_terms: distinct topical terms the best-covering chunk matches.
        topical_terms: topical terms in the question (meta words excluded).
        rare_absent: topical terms found nowhere in the index that are rare English
            (:func:`rag.search.english.is_rare_word`: the jargon of a feature the repository lacks).
        names_structure: the structure stream ties the question to files (it names a symbol the
            repository defines, asks about the environment, …: ``symbol_files`` of :func:`rank_chunks`).
        beyond_named: when the question names indexed files, whether other files match its words beyond
            those files' names as an answer would (not weak evidence, as in :meth:`abstain`); ``True`` when it
            names none. Only then does the rest of the ranking follow a named file (:func:`diversify`).
    """

    coverage: float
    absent_share: float
    explicit_path: bool = False
    matched_terms: int = 0
    topical_terms: int = 0
    rare_absent: int = 0
    names_structure: bool = False
    beyond_named: bool = True

    def abstain(self, policy: "RetrievalPolicy", *, vector_z: float | None = None) -> bool:
        """No real match (see :class:`RetrievalPolicy`): nothing matched at all, or a question of
        several topical words of which the best chunk shares only one or two, with low coverage.

        ``vector_z`` (with vectors: :func:`rag.search.vector_stream.top_zscore` of the question's
        hits) overrules that last case only for a *description*: a question of at least
        ``policy.vector_override_min_terms`` topical words whose best chunk still shares at most
        ``abstain_max_matched`` of them, when the vectors' best chunk stands at least
        ``policy.min_vector_z`` standard deviations out. A short question that names what it
        asks about ("Which module handles WebSocket connections?") and shares two words with
        the repository is not answered because a chunk about connections stands out: that is
        the closest topic, not the answer (measured on the three eval sets with MiniLM, issue 15:
        the z-score alone overruled 4 of the 8 ``none`` questions the lexical evidence abstains
        on, z 3.2–4.5). A description that weak lexically was answerable every time on the five
        eval sets (5 questions, z 2.28–3.56), hence the floor of two standard deviations
        (:data:`rag.search.vector_stream.DEFAULT_MIN_VECTOR_Z`), which only a flat neighbourhood misses.

        Before all that, with ``policy.abstain_rare_absent``: a question one of whose topical words
        is rare English and occurs nowhere in the index (``rare_absent``, :mod:`rag.search.english`)
        asks about something the repository does not have ("… retry with exponential backoff?"),
        however well its other words match, and the vectors cannot overrule that (they find the
        closest topic). Not when the structure stream ties the question to files (it names a symbol
        the repository defines: "how does ``isPlainObject`` handle an iframe's objects?"), nor when
        such words are more than half of the topical ones (a question in another language, or
        garbled); a program's name of three words or more (``fetchUserById``) is never such a word
        (:data:`PROGRAM_NAME_WORDS`). Measured on the six eval sets with MiniLM: abstention on ``none`` questions
        8 → 17 of 35, one answerable question of 266 lost (:mod:`rag.search.english`). Nor, in a long question
        (``policy.rare_absent_override_min_terms``, 10 topical words or more), when the best chunk covers
        ``policy.rare_absent_below_coverage`` (0.6) of it or more: the rare word then sets the scene ("When walking
        a parsed document with the visitor API, how do I skip a **subtree**, delete or replace a node, or stop the
        whole traversal early?" of graphql's visitor: 14 words, best chunk 0.70); measured on the 21 eval sets (137
        ``none`` questions, 980 answerable), no ``none`` question the rule abstains on has a best chunk above 0.44.
        In a shorter question the rare word is the point ("… render a view and send the HTML over a
        **websocket**?" of express: 8 words, 0.64, a break-it review). Nor, whatever the coverage, in a question of
        more than ``policy.rare_absent_max_terms`` (12) topical words: one word of thirteen or more is a detail of a
        long description ("Trace ``pm.hook.myhook(x=1)`` end to end: the caller object, the manager's exec
        **indirection**, and the loop that actually runs the implementations" of a blind held-out set). Measured on
        the 29 eval sets (lexical evidence): the rule abstained on 8 answerable questions of 13 to 28 topical words and on
        2 ``none`` questions of 13 and 14 (of the 64 ``none`` questions it abstains on); the weak-evidence test below
        still applies to them.
        """
        if self.explicit_path:
            return False
        if (policy.abstain_rare_absent and self.rare_absent and not self.names_structure
                and 2 * self.rare_absent <= self.topical_terms <= policy.rare_absent_max_terms
                and (self.topical_terms < policy.rare_absent_override_min_terms
                     or self.coverage < policy.rare_absent_below_coverage)):
            return True
        weak = weak_evidence(self.matched_terms, self.topical_terms, self.coverage, policy)
        if weak and vector_z is not None and self.topical_terms >= policy.vector_override_min_terms:
            return vector_z < policy.min_vector_z
        return weak


def weak_evidence(matched: int, topical: int, coverage: float, policy: "RetrievalPolicy") -> bool:
    """Whether the best-covering chunk's match is too weak to answer: it shares no topical word, or at most
    ``policy.abstain_max_matched`` of a question of at least ``policy.abstain_min_terms`` with a coverage below
    ``policy.abstain_below_coverage`` (the test of :meth:`Evidence.abstain`, also applied to a question's words
    beyond the files it names: :attr:`Evidence.beyond_named`)."""
    return matched == 0 or (matched <= policy.abstain_max_matched and topical >= policy.abstain_min_terms
                            and coverage < policy.abstain_below_coverage)


NO_EVIDENCE = Evidence(0.0, 1.0, False, 0, 0)


@dataclass(slots=True)
class Candidate:
    """A chunk under consideration, with its signals (all ≥ 0)."""

    id: int
    path: str
    start: int
    end: int
    file_type: str
    kind: str
    heading: str | None
    text: str
    bm25: float
    stems: str = ""
    symbol: str | None = None
    lexical: bool = True
    coverage: float = 0.0
    score: float = 0.0
    matched: set[str] = field(default_factory=set)
    prior: float = 1.0
    file_score: float = 0.0
    """The fused score of the chunk's file (set by :func:`fuse_streams`; 0 before fusion)."""


def _document_frequencies(conn: sqlite3.Connection, terms: list[str], cache: dict) -> dict[str, int]:
    """Chunk document frequency of each term (its synonym group counted as one term)."""
    out: dict[str, int] = {}
    for term in terms:
        if term not in cache:  # a term without synonyms is one phrase: its count is the phrase's
            cache[term] = _phrase_frequency(conn, fts_expression([term]), cache)
        out[term] = cache[term]
    return out


PROGRAM_NAME_WORDS = 3
"""An identifier of at least this many words (``getUserById``, ``parse_http_headers``) is a program's own name, not the
name of a feature: absent from the index, it may be misremembered (``fetchUserById`` for ``getUserById``), and the
question is left to the other evidence rather than abstained on (:meth:`Evidence.abstain`); a name of one or two
words (``WebSocket``, ``localStorage``) names a feature."""


def _program_names(query: Query) -> set[str]:
    """The index terms (lower-case, joined: ``getuserbyid``) of the question's identifiers of at least
    :data:`PROGRAM_NAME_WORDS` words."""
    names = set()
    for identifier in query.identifiers:
        words = index_text(identifier).split()
        if len(words) > PROGRAM_NAME_WORDS:  # the joined form, then each word
            names.add(words[0])
    return names


def absent_terms(conn: sqlite3.Connection, query: Query, *, cache: dict,
                 meta_terms: frozenset[str] = frozenset()) -> list[str]:
    """The question's topical terms that no indexed chunk contains (nor any of their synonyms), in the
    question's order: the words that tell a user why nothing matched. Meta words (:data:`META_TERMS`) and
    ``meta_terms`` (the repository's own names) are left out, as in :class:`Evidence`.

    Args:
        conn: a read connection of the index.
        query: the analysed question (:func:`rag.search.query.analyze`).
        cache: the per-generation cache of :func:`rank_chunks` (``idf_cache``): counts are shared.
    """
    topical = [t for t in query.terms if t not in META_TERMS]
    terms = [t for t in topical if t not in meta_terms] or topical
    counts = _document_frequencies(conn, terms, cache)
    return [t for t in terms if counts[t] == 0]


def _phrase_frequency(conn: sqlite3.Connection, phrase: str, cache: dict) -> int:
    """Chunks matching one quoted FTS5 phrase, or an OR of them (cached in the per-generation ``cache``)."""
    key = ("__phrase_df__", phrase)
    if key not in cache:
        cache[key] = queries.count_fts_matches(conn, phrase)
    return cache[key]


def _bm25_idf(df: int, total: int) -> float:
    """BM25 IDF, ``log((N - df + 0.5) / (df + 0.5) + 1)`` (Robertson & Zaragoza 2009)."""
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


def _term_stems(term: str) -> set[str]:
    return {light_stem(t) for t in synonyms_of(term)}


def rank_chunks(
    conn: sqlite3.Connection,
    query: Query,
    *,
    policy: RetrievalPolicy = DEFAULT_RETRIEVAL_POLICY,
    kind: str | None = None,
    idf_cache: dict | None = None,
    total_chunks: int | None = None,
    symbol_files: dict[str, float] | None = None,
    known_paths: list[str] | None = None,
    extra_ids: list[int] | Callable[[], list[int]] | None = None,
    meta_terms: frozenset[str] = frozenset(),
    copies: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[Candidate], Evidence]:
    """Score candidate chunks for ``query``.

    Args:
        conn: a connection inside a read transaction.
        query: the analysed question.
        policy: knobs.
        kind: keep only chunks of this kind (``documentation``, ``source``, ``config``, ``example``, ``test``, ``types``).
        idf_cache: per-generation cache (mutated): term → chunk document frequency, path → stems and
            :class:`PathTraits`.
        total_chunks: number of chunks in the index (for IDF).
        symbol_files: path → score bonus from the code structure (files defining a
            symbol the question names, dependants of a named file, ...); such files
            are pulled into the candidates even when BM25 missed them.
        known_paths: every indexed path (for explicit path mentions).
        extra_ids: chunk ids found by another stream (vectors), scored here too; or a function
            returning them, called once FTS5 has ranked its candidates (the vector stream's
            worker thread finishes meanwhile: :func:`rag.search.vector_stream.start_search`).
        meta_terms: words that name the repository itself (its package name, from
            :func:`rag.ingest.manifests.repository_names`): they rank like any word but are not evidence that the
            repository answers the question (the :class:`Evidence` leaves them out).
        copies: copy path → its indexed sources (:mod:`rag.search.copies`): when a copy is
            among the candidates and none of its sources is, the sources' best BM25 chunks
            are brought in, so the source can take the copy's place.

    Returns:
        ``(candidates sorted by score desc, Evidence)``; empty when nothing matches.
    """
    phrases = fts_phrases(query.terms)
    if not phrases:
        return [], NO_EVIDENCE
    if total_chunks is None:
        total_chunks = queries.count_chunks(conn)
    cache = idf_cache if idf_cache is not None else {}
    # Ranked inside FTS5 (the commonest phrases left out when they cannot change the top:
    # rag.search.bm25_topk), then joined; with a kind filter, read deeper so the filter still
    # leaves enough candidates.
    scored, kept = top_bm25(conn, phrases, weights=policy.fts_weights,
                            limit=policy.candidate_chunks * (4 if kind else 1),
                            df=lambda phrase: _phrase_frequency(conn, phrase, cache), total=total_chunks)
    expr = " OR ".join(kept)
    rows = queries.scored_chunks(conn, scored, kind=kind)
    explicit = explicit_paths(query, known_paths or [], cache=cache)
    # Everything that does not depend on the vector hits is done before waiting for them: the term
    # statistics and each FTS5 candidate's signals (coverage, path match, prior). Only the final
    # score needs the best BM25 of every candidate, so it is computed last.
    dfs = _document_frequencies(conn, query.terms, cache)
    idf = {t: _bm25_idf(df, max(total_chunks, 1)) for t, df in dfs.items()}
    topical = [t for t in query.terms if t not in META_TERMS] or list(query.terms)
    idf_total = sum(idf[t] for t in topical) or 1.0
    # Evidence (abstention) leaves out the package's own name too: "koa" in a question about
    # koa matches everywhere. Ranking keeps it ("scheduler" still finds src/scheduler.js).
    evidence_terms = [t for t in topical if t not in meta_terms] or topical
    evidence_total = sum(idf[t] for t in evidence_terms) or 1.0
    path_idf = _path_idf(query.terms, known_paths or [], cache)
    if idf_cache is not None:  # a generation's cache: every path's traits and stems, once
        path_tables(known_paths or [], cache)
    path_total = sum(path_idf[t] for t in topical) or 1.0
    stems = {t: _term_stems(t) for t in query.terms}
    # A chunk's ``stems`` column is its distinct stems, space-joined: a stem is one of them when
    # " stem " occurs in " stems " (cheaper than building a set of hundreds of words per chunk).
    needles = {t: tuple(f" {s} " for s in stems[t]) for t in topical}
    # A version term ("4 0") is a phrase: matched in the chunk's text and heading ("4.0.0"), not in its stems.
    versions = {t: pattern for t in topical if (pattern := version_pattern(t)) is not None}
    for t in versions:
        needles[t] = ()
    needle_items = [(t, needles[t]) for t in topical]
    path_cache: dict[str, tuple[float, set[str]]] = {}
    priors: dict[tuple[str, str, str], float] = {}
    signals: dict[int, tuple[float, float, int]] = {}  # id(candidate) → (path coverage, evidence coverage, evident terms)

    def measure(batch: list[Candidate]) -> list[Candidate]:
        """Each candidate's matched terms, coverage and prior; its path coverage and evidence in ``signals``."""
        for c in batch:
            padded = f" {c.stems} "
            c.stems = ""
            if c.path not in path_cache:
                path_cache[c.path] = _path_match(c.path, topical, stems, path_idf, path_total, cache)
            path_cov, matched_path = path_cache[c.path]
            matched = set()  # in topical order, as a comprehension would add them (the set's order sums the IDFs)
            for t, term_needles in needle_items:
                for needle in term_needles:
                    if needle in padded:
                        matched.add(t)
                        break
            if versions:
                matched |= {t for t, pattern in versions.items()
                            if pattern.search(c.text) or (c.heading and pattern.search(c.heading))}
            c.matched = matched | matched_path
            c.coverage = sum(idf[t] for t in c.matched) / idf_total
            evident = [t for t in evidence_terms if t in c.matched]
            signals[id(c)] = (path_cov, sum(idf[t] for t in evident) / evidence_total, len(evident))
            prior_key = (c.path, c.kind, c.file_type)
            if prior_key not in priors:
                traits_key = ("__traits__", c.path)
                traits = cache.get(traits_key)
                if traits is None:
                    traits = cache[traits_key] = path_traits(c.path)
                priors[prior_key] = intent_prior(c, query, traits=traits)
            c.prior = chunk_prior(c, query, file_prior=priors[prior_key])
        return batch

    cands = measure([Candidate(*row) for row in rows])
    vector_rows: list = []
    if callable(extra_ids):
        extra_ids = extra_ids()
    if extra_ids:
        have_ids = {r[0] for r in rows}
        vector_rows = queries.chunks_by_id(conn, [i for i in extra_ids if i not in have_ids], kind=kind)
    if not rows and not vector_rows and not explicit:
        return [], NO_EVIDENCE
    structural = set(explicit) | set(symbol_files or ())
    cands += measure([Candidate(*row, lexical=row[1] in structural) for row in vector_rows])
    pull_in = list(explicit) + [p for p in (symbol_files or {}) if p not in explicit]
    if pull_in:
        have = {c.path for c in cands}
        for path in pull_in:
            if path not in have:
                cands += measure([Candidate(*row) for row in queries.first_chunks_of(conn, path, kind=kind)])
    if copies:
        have = {c.path for c in cands}
        wanted = dict.fromkeys(s for p in have if p in copies for s in copies[p] if s not in have)
        for source_path in wanted:
            rows_of = (queries.bm25_chunks_of(conn, expr, source_path, weights=policy.fts_weights, kind=kind)
                       if expr else []) or list(queries.first_chunks_of(conn, source_path, kind=kind))
            cands += measure([Candidate(*row) for row in rows_of])
    best_bm25 = max((c.bm25 for c in cands), default=0.0) or 1.0
    best_cov = 0.0
    best_matched = 0
    for c in cands:
        path_cov, evidence_cov, evident_count = signals[id(c)]
        if evidence_cov > best_cov or (evidence_cov == best_cov and evident_count > best_matched):
            best_cov, best_matched = evidence_cov, evident_count
        c.score = (0.45 * (c.bm25 / best_bm25) + 0.55 * c.coverage + 0.35 * path_cov) * c.prior
        if symbol_files and c.path in symbol_files:
            c.score += symbol_files[c.path]
        if c.path in explicit:
            c.score += 10.0
            best_cov = max(best_cov, 1.0)
    # A hard structural answer (the importers of a package the question names, the dependants or the
    # dependencies of a file it names) is evidence as a named file is.
    answer = {p for p, bonus in (symbol_files or {}).items() if bonus >= HARD_BOOST}
    if answer and explicit:
        # The files named in such a question are what it asks about ("which files use the class defined
        # in src/errors.ts?"), not its answer: they follow the answer's files instead of leading them.
        answer_scores = [c.score for c in cands if c.path in answer]
        if answer_scores:
            floor = min(answer_scores)
            for c in cands:
                if c.path in explicit and c.path not in answer:
                    c.score = min(c.score, floor - 0.01)
    cands.sort(key=lambda c: c.score, reverse=True)
    beyond_named = True
    if explicit:
        # The question's words beyond the files it names ("… README.rst … where do the version and the long
        # description come from?"): other files follow a named one only when they match those words as an answer
        # would (the weak-evidence test of Evidence.abstain); "what does src/cache.js do?" has none.
        named_terms = set(query_terms(" ".join([*query.paths, *query.modules])))
        rest = [t for t in evidence_terms if t not in named_terms]
        rest_total = sum(idf[t] for t in rest) or 1.0
        rest_cov, rest_matched = 0.0, 0
        for c in cands:
            if c.path not in explicit:
                hit = [t for t in rest if t in c.matched]
                cov = sum(idf[t] for t in hit) / rest_total
                if cov > rest_cov or (cov == rest_cov and len(hit) > rest_matched):
                    rest_cov, rest_matched = cov, len(hit)
        beyond_named = bool(rest) and not weak_evidence(rest_matched, len(rest), rest_cov, policy)
    missing = [t for t in evidence_terms if dfs[t] == 0]
    rare_absent = 0
    if policy.abstain_rare_absent and missing:
        names = _program_names(query)
        rare_absent = sum(1 for t in missing if t not in names and is_rare_word(t))
    structural_answer = bool(answer)
    return cands, Evidence(best_cov, len(missing) / len(evidence_terms), bool(explicit) or structural_answer,
                           best_matched, len(evidence_terms), rare_absent, bool(symbol_files), beyond_named)


def path_tables(paths: Sequence[str], cache: dict) -> None:
    """Fill ``cache`` (a generation's, as :func:`rank_chunks`' ``idf_cache``) with every path's
    :class:`PathTraits` and file-name and folder stems, once per generation, so a question looks them up
    instead of computing them for each new path among its candidates (~150 files a question, 17 µs each:
    2.5 ms of a question on the synthetic 102k-chunk index). Measured on this machine: 0.27 s once for its
    15,725 paths (0.20 s traits, 0.06 s stems), 7 ms for eslint's 425 files;
    :meth:`rag.search.retriever.Retriever.warm` builds them after each update, with the code graph."""
    key = ("__path_tables__", len(paths))
    if key in cache:
        return
    for path in paths:
        if ("__traits__", path) not in cache:
            cache[("__traits__", path)] = path_traits(path)
        if ("__pathstems__", path) not in cache:
            cache[("__pathstems__", path)] = _path_stems(path)
    cache[key] = True


def _path_idf(terms: list[str], paths: list[str], cache: dict) -> dict[str, float]:
    """IDF of each term over file paths: ``log(1 + N / (1 + df_path))`` (df = paths containing one of its
    stems). The paths' stems are inverted once per generation (stem → indices of the paths holding it,
    in ``cache``), so a new term costs a few set lookups instead of a pass over every path (measured
    on the synthetic 102k-chunk index of 15,725 paths: 2.2 ms per question before)."""
    key = ("__path_postings__",)
    if key not in cache:
        postings: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(paths):
            for stem in {light_stem(w) for w in index_text(p).split()}:
                postings[stem].append(i)
        cache[key] = (len(paths), dict(postings))
    n, path_postings = cache[key]
    out = {}
    for t in terms:
        k = ("__path__", t)
        if k not in cache:
            lists = [path_postings[s] for s in _term_stems(t) if s in path_postings]
            df = len(lists[0]) if len(lists) == 1 else len(set().union(*lists))
            cache[k] = math.log(1.0 + n / (1.0 + df))
        out[t] = cache[k]
    return out


def _path_stems(path: str) -> tuple[set[str], set[str]]:
    """``(file-name stems, directory stems)`` of a path (extension dropped)."""
    name = path.rsplit("/", 1)[-1]
    base = name.rsplit(".", 1)[0]
    directory = path[: -len(name)]
    return ({light_stem(w) for w in index_text(base).split()},
            {light_stem(w) for w in index_text(directory).split()})


def _path_match(path: str, terms: list[str], stems: dict[str, set[str]], path_idf: dict[str, float],
                total: float, cache: dict) -> tuple[float, set[str]]:
    """Share of path-IDF mass of ``terms`` found in ``path`` (file name counts fully, directories half)."""
    key = ("__pathstems__", path)
    if key not in cache:
        cache[key] = _path_stems(path)
    base_stems, dir_stems = cache[key]
    score = 0.0
    matched: set[str] = set()
    for t in terms:
        if not stems[t].isdisjoint(base_stems):
            score += path_idf[t]
            matched.add(t)
        elif not stems[t].isdisjoint(dir_stems):
            score += 0.5 * path_idf[t]
            matched.add(t)
    return score / total, matched


_CHANGELOG = re.compile(r"(^|/)(changelog|history|changes|releases?|migrat|news\b|whats[-_]?new|version[-_]?history)",
                        re.I)
CHANGELOG_PRIOR = 0.7
"""A changelog's (or migration guide's) prior outside questions about releases (prose files only:
``django/db/migrations/autodetector.py`` or ``prompt_toolkit/history.py`` are code): an entry names a change
in the question's words, not how the code does it. Measured on the three eval sets (``slackzilla eval``,
MiniLM hybrid / BM25 + structure, MRR@10): ``dev-hard`` multi 0.563 → 0.609 / 0.462 → 0.568, ``dev``
concept (BM25) 0.669 → 0.701, no kind of any set lower; R@5 unchanged."""
_BUILD_OUTPUT = re.compile(r"(^|/)dist/")
"""A build's output folder: not what "which source files …" asks for (its copies of indexed sources give
their places to them anyway, :mod:`rag.search.copies`; this is for the rest: entry shims, bundles)."""
SOURCE_DOC_PRIOR = 0.5
"""Prose's prior when the question asks for source files by name ("which source file reads …", the
``source`` intent of :mod:`rag.search.query`) or for how the code works inside ("… under the hood?", "what does X
actually do?", the ``internals`` intent): a README section on the same subject is not one."""
BEHAVIOUR_DOC_PRIOR = 0.9
"""Prose's prior when the question asks what the code does in a case ("what happens when…", "why
does…", "how is X resolved?": the ``behaviour`` intent of :mod:`rag.search.query`) and not how to use it."""
NO_INTENT_DOC_PRIOR = 0.9
"""Prose's prior when the question says nothing of what it wants (no docs, release, source, location or behaviour
intent): a README or guide section holds a question's everyday words more often than the code answering it (blind
held-out sets: prom-client's, qs's and pyjwt's docs led 12 questions about their code). Measured on the 23 eval
sets (MiniLM hybrid, MRR@10, with the docs intent's "documented", "write-up", "is there an example" …): all 1,064
answerable questions +0.005, paraphrase +0.011, docs +0.012, ``dev-hard`` 0.648 → 0.659, ``dev`` unchanged; 0.85
gained more (+0.008) but cost ``dev``'s concept questions 0.028."""
_PROJECT_DOCS = tuple((re.compile(rf"(^|/)({files})([-.][\w.-]*)?$", re.I), re.compile(rf"\b({asks})\b", re.I))
                      for files, asks in (
    (r"licen[cs]es?/[^/]+|licen[cs]e|copying|notice", r"licen[cs]\w*|copyright|copying"),
    ("code[_-]of[_-]conduct", "conduct"),
    ("contributing|contributors", r"contribut\w*|pull requests?|PRs?"),
    ("security", r"security|vulnerab\w*"),
    ("support", r"support\w*"),
    ("authors|maintainers|governance", r"authors?|maintain\w*|governance"),
    ("funding|backers|sponsors", r"fund\w*|backers?|sponsors?|donat\w*"),
))
"""Community files (path pattern) and the words of a question about them."""
_ANY_PROJECT_DOC = re.compile("|".join(f"(?:{files.pattern})" for files, _asks in _PROJECT_DOCS), re.I)
"""Matches a path exactly when one of :data:`_PROJECT_DOCS`' path patterns does."""
PROJECT_DOC_PRIOR = 0.5
"""The prior of a project's community files (licence, code of conduct, contributing guide, security
policy, authors, sponsors; at the top or in ``docs/``) unless the question is about such things: long
prose about issues, requests, changes and users, in the words of many questions and the answer to
none of how the code works (starlette 0.41's ``docs/contributing.md`` was the first hit for where a
signed session cookie is checked, marshmallow 3.23's ``docs/code_of_conduct.rst`` the second for which
strings a boolean field accepts)."""
LINK_LIST_PRIOR = 0.5
"""The prior of a table of contents (:func:`is_link_list`): it holds every section's words and none of
their answers (axios 1.7.7's README: its table of contents was the first hit for "How are query params
serialized into the URL?", before ``lib/helpers/buildURL.js``)."""
LINK_LIST_MIN_LINKS = 5
"""In-page links a table of contents has at least."""


def is_link_list(c: Candidate) -> bool:
    """Whether documentation chunk ``c`` is a table of contents: at least :data:`LINK_LIST_MIN_LINKS`
    in-page links (``](#…``), on at least half of its lines."""
    if c.file_type not in DOC_TYPES:
        return False
    links = c.text.count("](#")
    return links >= LINK_LIST_MIN_LINKS and links * 2 >= c.text.count("\n") + 1


def chunk_prior(c: Candidate, query: Query, *, file_prior: float | None = None) -> float:
    """The prior of chunk ``c``: its file's :func:`intent_prior` (``file_prior`` when computed already),
    × :data:`LINK_LIST_PRIOR` for a table of contents (:func:`is_link_list`)."""
    prior = intent_prior(c, query) if file_prior is None else file_prior
    return prior * LINK_LIST_PRIOR if is_link_list(c) else prior


@dataclass(frozen=True, slots=True)
class PathTraits:
    """What a path alone says to :func:`intent_prior` (the same for every question, so kept per index
    generation by :func:`rank_chunks`: :func:`path_traits` costs a dozen regular-expression searches,
    and a question measures ~250 candidates of ~150 files). Measured on this machine (1,000 paths, a
    loaded 2-core machine): :func:`intent_prior` 11-27 µs per path computing the traits, 0.24 µs given them.

    Attributes:
        low_value: in a tests, benchmarks, fixtures or examples folder (:data:`LOW_VALUE_DIRS`).
        doc_folder: in a top-level documentation folder (:func:`rag.ingest.walk.in_doc_folder`).
        declarations: a declaration file by name (``.d.ts`` …, :data:`rag.ingest.walk.DECLARATIONS`).
        manifest: a package or build manifest (:func:`rag.ingest.manifests.is_manifest`).
        build_output: in a ``dist/`` folder.
        changelog: a changelog, history, release notes or migration guide by name.
        project_doc: the index in :data:`_PROJECT_DOCS` of the first kind of community file the path
            is (licence, code of conduct, …), ``-1`` for none.
    """

    low_value: bool
    doc_folder: bool
    declarations: bool
    manifest: bool
    build_output: bool
    changelog: bool
    project_doc: int


def path_traits(path: str) -> PathTraits:
    """The :class:`PathTraits` of ``path``."""
    project_doc = -1
    if _ANY_PROJECT_DOC.search(path):  # one search for the many paths that are none of them
        project_doc = next(i for i, (files, _asks) in enumerate(_PROJECT_DOCS) if files.search(path))
    return PathTraits(low_value=bool(LOW_VALUE_DIRS.search(path)), doc_folder=in_doc_folder(path),
                      declarations=path.lower().endswith(DECLARATIONS), manifest=is_manifest(path),
                      build_output=bool(_BUILD_OUTPUT.search(path)), changelog=bool(_CHANGELOG.search(path)),
                      project_doc=project_doc)


def intent_prior(c: Candidate, query: Query, *, traits: PathTraits | None = None) -> float:
    """The intent prior of chunk ``c`` for ``query``: a multiplier in (0, 1.5] of its lexical score
    and its cosine: tests, examples and the documentation's sample code × 0.55 unless the question
    asks for tests; declarations (kind ``types``: ``.d.ts`` and sources declaring only types) × 0.7
    unless it asks for types; manifests, docs and source by intent (a question asking for source files
    by name, the ``source`` intent: prose and ``dist/`` output × :data:`SOURCE_DOC_PRIOR`; one asking how the code
    works inside, the ``internals`` intent: prose × :data:`SOURCE_DOC_PRIOR`; a question with no intent
    of these: prose × :data:`NO_INTENT_DOC_PRIOR`); changelogs up for release
    questions and down (:data:`CHANGELOG_PRIOR`) for the others; community files down
    (:data:`PROJECT_DOC_PRIOR`) unless the question is about what the file is about (a licence
    question keeps ``LICENSE``). ``traits``: :func:`path_traits` of ``c.path`` when known already."""
    if traits is None:
        traits = path_traits(c.path)
    intents = query.intents
    factor = 1.0
    is_doc = c.file_type in DOC_TYPES
    low_value = c.kind == "test" or traits.low_value or (  # the documentation's sample code:
        c.kind == "example" and traits.doc_folder)  # rag.ingest.walk.classify_kind
    if low_value and "test" not in intents:
        factor *= 0.55
    if (c.kind == "types" or traits.declarations) and "types" not in intents:
        factor *= 0.7
    if traits.manifest:  # manifests match many words but answer only questions about themselves
        factor *= 1.25 if "config" in intents else 0.7
    if is_doc:
        if "docs" in intents or "release" in intents:
            factor *= 1.25
        elif "source" in intents or "internals" in intents:
            factor *= SOURCE_DOC_PRIOR
        elif "location" in intents:
            factor *= 0.85
        elif "behaviour" in intents:
            factor *= BEHAVIOUR_DOC_PRIOR
        else:
            factor *= NO_INTENT_DOC_PRIOR
    elif "location" in intents and c.kind == "source":
        factor *= 1.1
    if "source" in intents and traits.build_output:
        factor *= SOURCE_DOC_PRIOR
    if traits.changelog:
        if "release" in intents:
            factor *= 1.3
        elif is_doc:  # a changelog is prose; code about history or migrations is code
            factor *= CHANGELOG_PRIOR
    if traits.project_doc >= 0 and (is_doc or c.kind in ("documentation", "config")):  # not code
        if not _PROJECT_DOCS[traits.project_doc][1].search(query.text):
            factor *= PROJECT_DOC_PRIOR
    return factor


def _python_modules(paths: list[str], cache: dict | None) -> dict[str, list[str]]:
    """Python files by module name (``sessions`` of ``…/sessions.py`` and ``…/sessions/__init__.py``),
    kept in ``cache`` when given."""
    key = ("__python_modules__",)
    if cache is not None and key in cache:
        return cache[key]
    modules: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path.endswith(".py"):
            parts = path[:-3].split("/")
            name = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
            modules[name].append(path)
    result = dict(modules)
    if cache is not None:
        cache[key] = result
    return result


def _paths_by_name(paths: list[str], cache: dict | None) -> tuple[set[str], dict[str, list[str]]]:
    """The paths as a set, and by file name (in their order), kept in ``cache`` when given: a path
    mention then costs lookups instead of a pass over every path (0.89 ms of each question that
    names a file on an index of 9,728 files)."""
    key = ("__paths_by_name__",)
    if cache is not None and key in cache:
        return cache[key]
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        by_name[path.rsplit("/", 1)[-1]].append(path)
    result = (set(paths), dict(by_name))
    if cache is not None:
        cache[key] = result
    return result


def explicit_paths(query: Query, known_paths: list[str], *, cache: dict | None = None) -> list[str]:
    """Indexed paths the question names: exact, or a ``/``-suffix such as ``view.js`` matching 1–3 paths
    (shortest first); and the Python files of its dotted module names (``flask.sessions`` →
    ``src/flask/sessions.py`` or ``…/sessions/__init__.py``, when 1–3 paths end so). Returns ``[]``
    without mentions; no duplicates, mention order. ``cache``: a per-generation dict (as
    :func:`rank_chunks`' ``idf_cache``) that keeps the paths by file name and the Python modules by
    their last name, so a mention costs lookups instead of a pass over every path."""
    if not query.paths and not query.modules:
        return []
    known, by_name = _paths_by_name(known_paths, cache)
    out: list[str] = []
    for mention in query.paths:
        if mention in known:
            out.append(mention)
            continue
        # a path ending in "/" + mention ends in its file name: only the paths of that name can
        suffix = [p for p in by_name.get(mention.rsplit("/", 1)[-1], ()) if p.endswith("/" + mention)]
        if 0 < len(suffix) <= 3:
            out.extend(sorted(suffix, key=len))
    if query.modules:
        modules = _python_modules(known_paths, cache)
        for module in query.modules:
            parts = module.split(".")
            package = parts[-1] == "__init__"  # requests.__init__: the package's own module
            if package:
                parts.pop()
            # "requests.sessions.Session.send" names a module, then a class and a method in it: the
            # longest prefix that is a module (of two names at least: "app.route" is not app.py)
            for n in range(len(parts), 0 if package else 1, -1):
                base = "/".join(parts[:n])
                ends = (f"{base}.py", f"{base}/__init__.py")
                found = [p for p in modules.get(parts[n - 1], ())
                         if p in ends or p.endswith(("/" + ends[0], "/" + ends[1]))]
                if found:
                    if len(found) <= 3:
                        out.extend(sorted(found, key=len))
                    break
    return list(dict.fromkeys(out))


def focus_line(text: str, start: int, query: Query) -> int | None:
    """The line of a chunk matching the most distinct query terms (by light stem); ``None`` if none does.

    Ties go to the earlier line. Costs one tokenisation per line of the chunk.
    """
    wanted = {t: {light_stem(x) for x in synonyms_of(t)} for t in query.terms if t not in META_TERMS}
    if not wanted:
        return None
    # Every index term of a line is a substring of the line lower-cased with "_" and "$" taken out
    # (rag.text.index_text), and its light stem a prefix of the term but for a final "y" ("queries"
    # → "query"): a line holding none of these cores matches nothing and is not tokenised.
    cores = {stem[:-1] if stem.endswith("y") else stem for group in wanted.values() for stem in group}
    best, best_hits = None, 0
    any_line = "" in cores
    # The text is lower-cased and flattened once; lower() keeps every "\n", so its lines are the lines'.
    flats = [] if any_line else text.lower().replace("_", "").replace("$", "").split("\n")
    for offset, line in enumerate(text.split("\n")):
        if any_line:
            if not line.strip():
                continue
        elif not any(core in flats[offset] for core in cores):
            continue
        stems = light_stems(index_text(line))
        hits = sum(1 for group in wanted.values() if group & stems)
        if hits > best_hits:
            best, best_hits = start + offset, hits
    return best


HARD_BOOST = 10.0
"""Lexical scores at or above this come from explicit structure (a named file, its dependants)."""
FUSED_HARD_SCORE = 4.0
"""After :func:`fuse_streams`, a hard structural candidate scores this plus its lexical score / 100,
above every fused score (≤ 1.01)."""


def fuse_streams(cands: list[Candidate], vectors: Mapping[int, float], *, policy: RetrievalPolicy,
                 structure: dict[str, float] | None = None, coverage: float = 0.5) -> list[Candidate]:
    """Re-score ``cands`` by fusing the lexical, vector and structure streams, per file.

    Args:
        cands: :func:`rank_chunks`' candidates (BM25's, the structure's and the vectors' chunks,
            each with its lexical ``score`` and intent ``prior``).
        vectors: chunk id → cosine similarity, the vector stream's hits (ids that are not
            candidates are ignored).
        policy: ``lexical_base``/``lexical_slope``, ``zscore_depth``, ``structure_weight``,
            ``stream_pool``, ``rrf_k``.
        structure: path → structure bonus (:func:`rag.search.structure.structure_bonus`).
        coverage: the question's lexical coverage (:class:`Evidence`), which sets the weights.

    Returns:
        The candidates that either stream ranked, sorted by their new score: a file's fused
        score in [0.5, 1] plus < 0.01 for the chunk, hard structural candidates 4 + score / 100.

    Each stream is first reduced to files, a file scoring what its best chunk does (so one
    long file cannot take several places of a stream): the lexical stream holds the candidates
    BM25 or the structure found (not those only the vectors brought in) with their
    :func:`rank_chunks` scores; the vector stream scores its hits by cosine × the chunk's intent
    prior (:func:`intent_prior`: tests demoted unless asked for, docs for "how do I…"; the priors the
    lexical scores carry — measured on the three eval sets with MiniLM, issue 15, the vector
    ranking alone finds the gold file in the top 5 for 0.614 → 0.773 of ``dev-hard``, 0.870 →
    0.963 of ``dev``). The file scores are fused by
    :func:`rag.search.fusion.zscore_fusion` with the weights of
    :func:`rag.search.fusion.adaptive_weights` for the question's lexical ``coverage``; a file
    the structure ties to the question adds ``structure_weight`` × its bonus. Score fusion, not
    RRF: RRF ranks any file both streams list at middling ranks above one stream's clear first
    (a flat list of 10–50 files per stream, k = 60), z-scores keep how far a stream's best
    stands out (``dev`` MRR@10 0.866 → 0.917, held-out 0.846 → 0.878, ``dev-hard`` 0.522 →
    0.515 with the other changes of issue 15).

    A chunk's score is its file's fused score plus a small chunk-level RRF term (each stream's
    first ``stream_pool`` chunks) that orders chunks inside a file; chunks in neither pool drop
    out unless their file is a structure file; each kept one's ``file_score`` is its file's fused
    score (:func:`rag.search.within_file.within_file_order` reorders the best files' chunks by
    their ranks within the file). Candidates with a hard structural boost (≥ :data:`HARD_BOOST`:
    a named file, its dependants) stay above every fused score, in the lexical stream's order.
    """
    from rag.search.fusion import adaptive_weights, reciprocal_rank_fusion, zscore_fusion

    weights = adaptive_weights(coverage, base=policy.lexical_base, slope=policy.lexical_slope)
    hard_files = {c.path for c in cands if c.score >= HARD_BOOST}
    lexical_files: dict[str, float] = {}
    vector_files: dict[str, float] = {}
    for c in cands:
        if c.lexical and c.path not in hard_files and c.score > lexical_files.get(c.path, 0.0):
            lexical_files[c.path] = c.score
        if c.id in vectors:
            score = vectors[c.id] * c.prior
            if c.path not in vector_files or score > vector_files[c.path]:
                vector_files[c.path] = score
    # A hard file's boost is not lexical evidence: the lexical stream ties them at its best score.
    lexical_files.update(dict.fromkeys(hard_files, max(lexical_files.values(), default=1.0)))
    fused = zscore_fusion({"bm25": lexical_files, "vectors": vector_files}, weights=weights,
                          depth=policy.zscore_depth)
    soft = {p: b for p, b in (structure or {}).items() if b < HARD_BOOST}
    floor = min(fused.values(), default=0.0)
    for path, bonus in soft.items():
        fused[path] = fused.get(path, floor) + policy.structure_weight * bonus
    # z-sums have any sign and scale: map them onto [0.5, 1]. The relative threshold of
    # diversify (a share of the best non-hard file, a rule of the lexical scale) then keeps every
    # fused file, as it kept every RRF-fused one; hard candidates (4 + …) lead them.
    low, high = min(fused.values(), default=0.0), max(fused.values(), default=0.0)
    span = (high - low) or 1.0
    file_scores = {path: 0.5 + 0.5 * (value - low) / span for path, value in fused.items()}

    lexical_ids = [c.id for c in cands if c.lexical][: policy.stream_pool]
    vector_ids = [c.id for c in sorted((c for c in cands if c.id in vectors),
                                       key=lambda c: (-vectors[c.id] * c.prior, c.id))][: policy.stream_pool]
    chunk_scores = dict(reciprocal_rank_fusion({"bm25": lexical_ids, "vectors": vector_ids},
                                               weights=weights, k=policy.rrf_k))
    for c in cands:
        if c.score >= HARD_BOOST:   # above every fused score (≤ 1.01), in the lexical order
            c.score = FUSED_HARD_SCORE + c.score / 100.0
        elif c.id in chunk_scores or c.path in soft:
            c.file_score = file_scores.get(c.path, 0.0)
            c.score = c.file_score + 0.01 * chunk_scores.get(c.id, 0.0)
        else:
            c.score = 0.0
    kept = [c for c in cands if c.score > 0.0]
    kept.sort(key=lambda c: c.score, reverse=True)
    return kept


@dataclass(frozen=True, slots=True)
class Depth:
    """How many chunks the best files keep in a result list, and how their chunks are interleaved.

    The packer reads deeper than the sources shown (:meth:`rag.engine.Engine.pack_context`):
    the answer is often in the best file, just not in its best chunk (measured on the dev sets:
    when the gold file is among the first four files, its second or third chunk holds the gold
    lines about as often as its first). A flat per-file cap with "every file's best chunk
    first" spends a 16-chunk pool on sixteen files' first chunks and gives the best file none
    of its others.

    Attributes:
        caps: chunks kept of the first ``len(caps)`` files, by file rank; later files keep
            ``per_file``.
        stride: chunk ``r`` of file ``f`` is taken at position ``f + stride × r`` (the
            packer's :data:`rag.context.packer.ROUND_STRIDE`, so the pool and the packing
            order agree).
    """

    caps: tuple[int, ...] = (4, 4, 3)
    stride: float = 3.0


def diversify(cands: list[Candidate], *, limit: int, per_file: int, relative_threshold: float,
              depth: Depth | None = None, hard_alone: bool = False) -> list[Source]:
    """Pick up to ``limit`` chunks: every file's best chunk first (in file-score order), then seconds.

    Files scoring below ``relative_threshold`` × the best score are dropped. With ``depth``
    (:class:`Depth`, the packer's pool) the best files keep more chunks and the chunks are
    taken in the order of ``file index + depth.stride × chunk index`` instead: the second
    chunk of the best file comes before the first chunk of the ``stride``-th file.

    Hard candidates (score ≥ :data:`FUSED_HARD_SCORE`: a file the question names) come first with
    all their chunks, and the threshold is a share of the best *other* file: the rest of the list
    follows them instead of being cut. With ``hard_alone`` the threshold stays a share of the best,
    which keeps the hard files alone: when the structure stream answered a question asking for a list
    of files (the importers of a module, the callers of a name), and when no other file matches the
    question's words beyond the files it names (:attr:`Evidence.beyond_named`: "what does
    ``src/cache.js`` do?"), so such a list is not padded with files that merely share a path's
    words. Before, a question naming a file got that file alone ("I edited README.rst but the
    version on PyPI did not change: where does it come from?" of a blind held-out set got
    ``README.rst`` and not ``setup.py``); measured on the 29 eval sets with MiniLM, ``multi`` R@5
    0.967 → 0.978, nothing else moved.
    """
    if not cands:
        return []
    top = cands[0].score
    hard = set() if hard_alone else {c.path for c in cands if c.score >= FUSED_HARD_SCORE}
    if hard:
        top = max((c.score for c in cands if c.path not in hard), default=top)
    caps = depth.caps if depth is not None else ()
    by_file: dict[str, list[Candidate]] = defaultdict(list)
    position: dict[str, int] = {}
    order: list[str] = []
    for c in cands:
        if c.path not in position:
            if c.path not in hard and c.score < relative_threshold * top:
                continue
            position[c.path] = len(order)
            order.append(c.path)
        rank = position[c.path]
        if len(by_file[c.path]) < (caps[rank] if rank < len(caps) else per_file):
            by_file[c.path].append(c)
    # the hard files' chunks come first, all of them: a question naming a file asks about it
    picked = [c for path in order if path in hard for c in by_file[path]]
    rest = [path for path in order if path not in hard]
    if depth is not None:
        keyed = [(position[path] + depth.stride * rank, position[path], rank, c)
                 for path in rest for rank, c in enumerate(by_file[path])]
        keyed.sort(key=lambda item: item[:3])
        picked += [item[3] for item in keyed]
    else:
        for rank in range(per_file):
            for path in rest:
                if len(by_file[path]) > rank:
                    picked.append(by_file[path][rank])
    picked = picked[:limit]
    # Keep file order stable: a file's chunks together, files in score order.
    picked.sort(key=lambda c: (position[c.path], -c.score))
    return [Source(c.path, c.start, c.end, c.score, c.file_type, c.kind, c.text, c.heading, symbol=c.symbol)
            for c in picked]
