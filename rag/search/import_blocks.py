"""Chunks that only import or re-export names rank below the code that defines them.

A file's head (its ``import`` / ``from … import`` / ``require`` lines) and a barrel module
(``export { switchMap } from '../internal/operators/switchMap'``, a package's ``__init__.py``) name
many of the package's words, so BM25 and the vectors both rank them high for questions about those
names, while the answer is where the names are defined. Measured on unseen packages: rxjs 7.8.1's
``src/operators/index.ts`` was third for "How does shareReplay decide when to reset?", requests
2.32.3's import block of ``adapters.py`` first for "How is a timeout given as a tuple interpreted?".

:func:`demote_import_blocks` halves the score of such a chunk among the first candidates (the ones
shown and packed) and sorts again, unless the question is about imports, exports or dependencies
(:data:`ABOUT_IMPORTS`: then those lines are the evidence). Files pinned by a hard structural boost
keep their scores. A chunk is an import block when at least :data:`MIN_IMPORT_LINES` of its code
lines, and :data:`IMPORT_SHARE` of them, are import or re-export statements or the names of a
multi-line one (:data:`_IMPORT_STATEMENT`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence, Set
from typing import Protocol, TypeVar

from rag.search.query import Query

__all__ = ["IMPORT_BLOCK_FACTOR", "IMPORT_SHARE", "MIN_IMPORT_LINES", "WINDOW", "ABOUT_IMPORTS",
           "is_import_block", "demote_import_blocks"]

IMPORT_BLOCK_FACTOR = 0.5
"""An import block's score is multiplied by this (as a table of contents' prior is:
:data:`rag.search.lexical.LINK_LIST_PRIOR`): it names things, the answer defines them."""
IMPORT_SHARE = 0.7
"""The share of a chunk's code lines that must be imports for it to be an import block."""
MIN_IMPORT_LINES = 3
"""Fewer import lines than this never make an import block (a two-line module is what it is)."""
WINDOW = 32
"""Only the first this many candidates are looked at (the shown sources and the packer's pool come
from them; the check costs about 5 µs a chunk)."""
ABOUT_IMPORTS = re.compile(
    r"\b(imports?|imported|importing|re-?exports?|exports?|exported|exporting|require\(|requires? the module|"
    r"dependenc(?:y|ies)|depends? on|dependants?|dependents?|entry ?points?|public api|barrel)\b", re.I)
"""Questions whose evidence is the import lines themselves ("which files import …", "what does the
package export"); "the most important option" or "which settings are required" are not."""

_IMPORT_STATEMENT = re.compile(
    r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)"        # Python, names in parentheses
    r"|(?:import|export)(?:[ \t]+type)?[ \t]*\{[^}]*\}[^\n]*"          # ES modules, names in braces
    r"|import[ \t][^\n]*|from[ \t]+[\w.]+[ \t]+import[ \t][^\n]*"       # one-line imports
    r"|export[ \t]+\*[^\n]*|(?:const|let|var)[ \t]+[\w${}, \t]+=[ \t]*require\([^\n]*"
    r"|(?:const|let|var)[ \t]*\{[^}]*\}[ \t]*=[ \t]*require\([^\n]*)", re.M)  # CommonJS, one line or destructured
"""An import or re-export statement (Python, ES modules, CommonJS), a multi-line one whole."""
_CODE_LINE = re.compile(r"^[ \t]*[^\s/#*]", re.M)
"""A line holding code (not blank, not a comment line)."""
_HEAD_WORDS = ("import", "require(", "export")
_HEAD_CHARS = 300


class _Ranked(Protocol):
    id: int
    text: str
    file_type: str
    score: float


C = TypeVar("C", bound=_Ranked)


def is_import_block(text: str) -> bool:
    """Whether ``text`` (a code chunk) is an import block (module docstring)."""
    head = text[:_HEAD_CHARS]
    if not any(word in head for word in _HEAD_WORDS):  # import blocks begin so: most chunks leave here
        return False
    imports = sum(match.group().count("\n") + 1 for match in _IMPORT_STATEMENT.finditer(text))
    return imports >= MIN_IMPORT_LINES and imports >= IMPORT_SHARE * len(_CODE_LINE.findall(text))


def demote_import_blocks(ranked: Sequence[C], query: Query, *, pinned: Set[int] = frozenset(),
                         doc_types: Set[str] = frozenset(), window: int = WINDOW) -> list[C]:
    """``ranked`` (best first) with the import blocks among the first ``window`` at
    :data:`IMPORT_BLOCK_FACTOR` of their score, sorted again (stable); the same objects.

    Args:
        ranked: candidates sorted by score, best first (``id``, ``text``, ``file_type``, ``score``).
        query: the analysed question (no change when it is about imports: :data:`ABOUT_IMPORTS`).
        pinned: ids of the candidates a hard structural boost pinned: they keep their scores.
        doc_types: file types that are prose, never import blocks.
        window: how many of the first candidates are looked at.
    """
    if ABOUT_IMPORTS.search(query.text):
        return list(ranked)
    changed = False
    for candidate in ranked[:window]:
        if (candidate.id not in pinned and candidate.file_type not in doc_types
                and is_import_block(candidate.text)):
            candidate.score *= IMPORT_BLOCK_FACTOR
            changed = True
    return sorted(ranked, key=lambda c: c.score, reverse=True) if changed else list(ranked)
