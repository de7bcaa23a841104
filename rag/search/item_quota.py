"""Issues and pull requests as a stream beside the code: a quota on them in the fused ranking.

    candidates = limit_items(candidates, question, kind=None)   # at most DEFAULT_MAX_ITEM_CHUNKS item chunks

Issue and pull-request chunks (:mod:`rag.sources.items`: paths ``issue:<n>``/``pr:<n>``) quote file
names, function names and error messages, so BM25 ranks them high for almost any question about the
code: a question about ``lib/router.js`` would otherwise be answered from ten issues that mention
it. After fusion (and the optional reranker), :func:`limit_items` keeps at most
:data:`DEFAULT_MAX_ITEM_CHUNKS` of them, at the ranks they earned, unless the question is about issues
or pull requests (:func:`asks_about_items`: "issue", "bug", "reported", "PR", "pull request",
"regression", "#123") or the caller filters on those kinds (``--type issue``), where they compete freely.
A quota on a secondary stream rather than a lower fusion weight, so that a strong issue match still
reaches the excerpts; the constant is a product choice (two of the eight default sources), not tuned.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

from rag.sources.items import ITEM_KINDS, is_item_path

__all__ = ["DEFAULT_MAX_ITEM_CHUNKS", "asks_about_items", "limit_items"]

DEFAULT_MAX_ITEM_CHUNKS = 2
"""Issue/PR chunks kept in a ranking for a question that is not about issues or pull requests."""
_ASKS = re.compile(r"\b(?:issues?|bugs?|reported|report|pull\s+requests?|prs?|pulls?|regressions?|tickets?|"
                   r"fixed\s+in|merged|changelog|known\s+problems?)\b|(?<![\w&])#\d+\b", re.IGNORECASE)

T = TypeVar("T")


def asks_about_items(question: str) -> bool:
    """Whether ``question`` asks about issues, bugs or pull requests ("was this bug already reported?",
    "which PR changed lib/router.js?", "what does #12 say?")."""
    return bool(_ASKS.search(question or ""))


def limit_items(candidates: Sequence[T], question: str, *, kind: str | None = None,
                max_items: int = DEFAULT_MAX_ITEM_CHUNKS) -> list[T]:
    """``candidates`` (best first, each with ``.path``) with at most ``max_items`` issue/PR chunks, unless the
    question asks about them or ``kind`` is ``issue``/``pull_request``; order otherwise unchanged."""
    if kind in ITEM_KINDS or asks_about_items(question):
        return list(candidates)
    kept, items = [], 0
    for candidate in candidates:
        if is_item_path(str(getattr(candidate, "path", ""))):
            if items >= max_items:
                continue
            items += 1
        kept.append(candidate)
    return kept
