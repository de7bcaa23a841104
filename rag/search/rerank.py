"""Reranking stage: reorder the fused top candidates with a cross-encoder (:mod:`rag.providers.rerank`)."""
from __future__ import annotations

import logging
import time
from collections.abc import Collection

from rag.errors import ProviderError
from rag.providers.rerank import DEFAULT_RERANK_TEXT_CHARS, Reranker, rerank_text
from rag.search.lexical import Candidate

__all__ = ["rerank_candidates"]

log = logging.getLogger(__name__)


def rerank_candidates(cands: list[Candidate], *, question: str, reranker: Reranker, top: int,
                      pinned: Collection[int] = (), max_chars: int = DEFAULT_RERANK_TEXT_CHARS,
                      min_score: float | None = None) -> list[Candidate]:
    """Reorder the first ``top`` distinct candidates of a ranked list by the reranker's scores.

    Candidates in ``pinned`` (chunk ids with a hard structural boost, such as a
    file the question names) keep their places at the head; the others among the
    first ``top`` are sorted by reranker score (ties keep the fused order); the
    rest of the list follows unchanged. The old scores of the reordered slice are
    handed out again in descending order, so scores stay monotonic and
    :func:`rag.search.lexical.diversify`'s relative threshold acts on the new order.

    Args:
        cands: candidates sorted by score, best first (mutated: ``score``).
        question: the question text (sent to the reranker, never logged).
        reranker: a :class:`Reranker`.
        top: how many candidates to rerank (``RetrievalPolicy.rerank_top``).
        pinned: candidate ids that must stay first.
        max_chars: chunk characters per document (see :func:`rerank_text`).
        min_score: when set, every reranked score below it means no real match: only the
            pinned candidates are returned (``[]`` when nothing is pinned: retrieval abstains).

    Returns:
        The reordered list; only the pinned candidates under ``min_score`` as above; ``cands`` unchanged in
        order when the reranker fails (a warning is logged with the reason only; a
        failure never causes abstention) or there is nothing to reorder.
    """
    head: list[Candidate] = []
    seen: set[int] = set()
    rest_start = len(cands)
    for i, c in enumerate(cands):
        if len(head) == top:
            rest_start = i
            break
        if c.id not in seen:
            seen.add(c.id)
            head.append(c)
    rest = [c for c in cands[rest_start:] if c.id not in seen]
    fixed = [c for c in head if c.id in pinned]
    movable = [c for c in head if c.id not in pinned]
    if len(movable) < (1 if min_score is not None and not fixed else 2):
        return cands
    started = time.monotonic()
    try:
        scores = reranker.rerank(question, [rerank_text(c.path, c.text, max_chars=max_chars) for c in movable])
        if len(scores) != len(movable):
            raise ProviderError(f"reranker returned {len(scores)} scores for {len(movable)} documents")
    except ProviderError as exc:
        log.warning("rerank skipped, keeping the fused order: reranker=%s n=%d ms=%.0f reason=%s",
                    reranker.name, len(movable), (time.monotonic() - started) * 1000, exc)
        return cands
    if min_score is not None and max(scores) < min_score:
        log.info("rerank abstained: reranker=%s n=%d best=%.4f min_score=%g pinned=%d", reranker.name,
                 len(movable), max(scores), min_score, len(fixed))
        return fixed + [c for c in rest if c.id in pinned]
    order = sorted(range(len(movable)), key=lambda i: -scores[i])  # stable: ties keep the fused order
    reordered = fixed + [movable[i] for i in order]
    for c, score in zip(reordered, sorted((c.score for c in head), reverse=True)):
        c.score = score
    log.debug("rerank applied: reranker=%s n=%d moved=%d ms=%.0f", reranker.name, len(movable),
              sum(1 for i, j in enumerate(order) if i != j), (time.monotonic() - started) * 1000)
    return reordered + rest
