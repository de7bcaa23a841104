"""Chunk order inside the best files: each stream's rank *within the file*, over every chunk of it.

:func:`rag.search.lexical.fuse_streams` scores files first, then orders a file's chunks by a small
RRF term over the streams' repository-wide lists (each stream's first ``stream_pool`` chunks). A
chunk the vectors rank first in its file but 60th in the repository has no vector rank at all, and
a chunk the lexical stream ranks 40th outranks it whenever the vectors also list that one. Yet the
file is already chosen: what matters inside it is how each stream ranks the file's chunks against
each other. Measured on the eval sets with MiniLM (issue 15; rank of the chunk holding the gold
lines among its file's chunks, in how many questions it is first / in the first two / first four):

=================================  ==============  ==============
order of the gold file's chunks    ``dev-hard``    ``dev`` + held-out
=================================  ==============  ==============
repository-wide RRF (before)       20 / 26 / 30    60 / 78 / 91
lexical alone                      18 / 25 / 33    64 / 81 / 90
vectors alone (every chunk)        17 / 24 / 29    54 / 69 / 82
within-file RRF, k = 0             19 / 27 / 34    65 / 81 / 91
within-file RRF, k = 2 (this)      16 / 25 / 33    64 / 85 / 91
=================================  ==============  ==============

(38 and 94 questions with gold lines.) The packer's pool keeps up to four chunks of the best three
files and two of the others (:data:`rag.context.packer.DEFAULT_CONTEXT_DEPTH`), so the first two and
four places are what reach the model. Context line recall (``shared/eval/context_recall.py``, MiniLM,
``dev-hard`` / ``dev`` / held-out): before 0.545 / 0.889 / 0.905; k = 0: 0.614 / 0.889 / 0.881; k = 2:
0.614 / 0.889 / 0.905; k = 5: 0.614 / 0.907 / 0.857; k = 60: 0.545 / 0.907 / 0.881. The file order,
and so R@k and MRR, is unchanged.

:func:`within_file_order` is pure: for the files it is given (the best
:data:`DEFAULT_WITHIN_FILES` fused files, their cosines computed for every chunk by the retriever),
a chunk scores its file's fused score plus :data:`CHUNK_TERM_SCALE` × ``Σ_s w_s / (k + 1 + r_s)``,
``r_s`` its 0-based rank among the file's chunks in stream ``s`` (the lexical stream ranks only the
chunks BM25 or the structure found; every chunk has a vector rank), ``w_s`` the question's stream
weights (:func:`rag.search.fusion.adaptive_weights`), ``k`` = :data:`DEFAULT_WITHIN_K`. Reciprocal
rank fusion: Cormack, Clarke & Büttcher, SIGIR 2009; a small k because a file holds a handful to a few
dozen chunks, where the paper's k = 60 makes every rank weigh about the same.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar


class RankedChunk(Protocol):
    """What :func:`within_file_order` reads and sets of a candidate (:class:`rag.search.lexical.Candidate`;
    named structurally so that ``lexical``, which reads this module's defaults, is not imported back)."""

    id: int
    path: str
    score: float
    file_score: float


C = TypeVar("C", bound=RankedChunk)

__all__ = ["RankedChunk", "DEFAULT_WITHIN_FILES", "DEFAULT_WITHIN_CHUNKS", "DEFAULT_WITHIN_K", "CHUNK_TERM_SCALE",
           "within_file_order", "vector_picks"]

DEFAULT_WITHIN_FILES = 8
"""The best this many fused files get their chunks ordered within the file; later files keep the fused
order (context line recall, same measure as above, 3 / 8 / 16 files: ``dev-hard`` 0.568 / 0.614 / 0.591,
``dev`` 0.907 / 0.889 / 0.889, held-out 0.881 / 0.905 / 0.881)."""
DEFAULT_WITHIN_CHUNKS = 4
"""A file's best chunks by cosine that join the candidates when no stream listed them: the pool's
deepest per-file cap (:data:`rag.context.packer.DEFAULT_CONTEXT_DEPTH`)."""
DEFAULT_WITHIN_K = 2
"""The RRF constant inside a file (module docstring: k = 0, 2, 5 and 60 measured; 2 is the only one no
set loses with)."""
CHUNK_TERM_SCALE = 1e-4
"""The chunk term's scale: it orders chunks inside a file and must not reorder files (fused file scores
lie in [0.5, 1]; ``fuse_streams``' own chunk term is below 2e-4)."""


def vector_picks(similarity: Mapping[int, float], known: set[int], *, per_file: int = DEFAULT_WITHIN_CHUNKS) -> list[int]:
    """The chunk ids, among one file's ``similarity`` (chunk id → cosine), of its ``per_file`` best
    by cosine that are not in ``known`` (the candidates already): the ones to fetch. Ties by id.

    Example::

        vector_picks({7: 0.2, 8: 0.5, 9: 0.4}, known={8}, per_file=2)   # [9]
    """
    best = sorted(similarity, key=lambda i: (-similarity[i], i))[:per_file]
    return [i for i in best if i not in known]


def within_file_order(cands: Sequence[C], *, lexical_order: Sequence[int],
                      similarity: Mapping[str, Mapping[int, float]], weights: Mapping[str, float],
                      k: int = DEFAULT_WITHIN_K) -> list[C]:
    """Re-score the chunks of the files in ``similarity`` by their within-file ranks; sort all.

    Args:
        cands: fused candidates (:func:`rag.search.lexical.fuse_streams`, each with its
            ``file_score``), plus any chunk added for these files (``lexical=False``).
        lexical_order: chunk ids in the lexical stream's order (BM25 with the structure and its
            priors), before fusion; a chunk absent from it has no lexical rank.
        similarity: path → {chunk id → cosine} for *every* chunk of each file to order (chunks
            absent here have no vector rank). The intent prior (:func:`rag.search.lexical.intent_prior`)
            depends on a chunk's path and kind, the same for every chunk of a file, so the cosine
            alone orders them.
        weights: ``{"bm25": w, "vectors": w}`` (:func:`rag.search.fusion.adaptive_weights`).
        k: the RRF constant (≥ 0).

    Returns:
        The candidates sorted by score, best first; files not in ``similarity`` keep their scores.

    Raises:
        ValueError: ``k < 0``.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    cand_by_id = {c.id: c for c in cands}
    lexical_rank: dict[str, dict[int, int]] = {}
    for cid in dict.fromkeys(lexical_order):
        c = cand_by_id.get(cid)
        if c is not None and c.path in similarity:
            ranks = lexical_rank.setdefault(c.path, {})
            ranks[cid] = len(ranks)
    vector_rank = {path: {cid: r for r, cid in enumerate(sorted(sims, key=lambda i: (-sims[i], i)))}
                   for path, sims in similarity.items()}
    w_lexical, w_vectors = weights.get("bm25", 0.0), weights.get("vectors", 0.0)
    for c in cands:
        if c.path not in similarity:
            continue
        term = 0.0
        lex = lexical_rank.get(c.path, {}).get(c.id)
        if lex is not None:
            term += w_lexical / (k + 1 + lex)
        vec = vector_rank[c.path].get(c.id)
        if vec is not None:
            term += w_vectors / (k + 1 + vec)
        c.score = c.file_score + CHUNK_TERM_SCALE * term
    return sorted(cands, key=lambda c: c.score, reverse=True)
