"""Documentation names the code: the source files defining what a leading documentation chunk writes as code.

    cands = link_from_docs(cands, definers=lambda name: symbols.get(name, {}), share=0.05)
    # after fusion and the within-file order, before copies, reranking and the source quota

A question about behaviour is often answered first by documentation (it is written in the
question's words), while the code that implements the behaviour shares few of them. But the page
names that code: "``reply.send()`` … once a reply was sent, a second ``send`` logs a warning",
":func:`retry_if_exception_type`". A reader goes from the page to the definition; so does this
step. The names written as code (inside backquotes, which also covers reST's double backquotes and
``:role:`name``` references) in the documentation chunks of the first :data:`DEFAULT_DOC_FILES`
files are looked up among the repository's definitions (the structure's symbol table); a
``source`` file defining one of them (not a test, example or type declaration:
:func:`rag.search.source_lead.is_implementation`) gets ``share`` × the best score added to each of
its candidates, once per distinct name it defines, at most :data:`MAX_LINKS` times (only files already
among the candidates move; none is added). Names defined
in more than :data:`MAX_DEFINERS` files (``get``, ``init``, ``options``) say nothing about where
the behaviour lives and are skipped; so are names shorter than :data:`MIN_NAME_CHARS`.

The retriever applies it to rankings fused with the vectors, after the fusion and the within-file
order. Candidates with a hard structural boost (a named file, its dependants) keep their places
and their documentation is not read. Measured with MiniLM (issue 15, R@5 / MRR@10; ``share``
0 → 0.05): ``dev-hard`` 0.841 / 0.589 → 0.841 / 0.600 (paraphrase MRR 0.467 → 0.483, structure
0.795 → 0.808), held-out Python 0.929 / 0.825 → 0.952 / 0.859 (concept MRR 0.722 → 0.833,
paraphrase 0.667 / 0.592 → 0.778 / 0.620, structure MRR 0.833 → 0.917), ``dev``, held-out
JavaScript and held-out TypeScript unchanged; no kind of any set lost more than 0.001
(``dev-hard`` multi MRR 0.654 → 0.653). Leaving out the questions
:func:`rag.search.source_lead.lead_with_sources` leaves alone (prose, history or test intents,
named files) gave ``dev-hard`` 0.603 but held-out Python 0.840 (a "how do I control…" question and
a "which source files emit the 'removed in 4' warnings" one kept their answers down: the intents
are read from single words), and no ``docs`` question moved either way, so none is left out.

A larger share moved more answers up and pushed others out: 0.1 gave ``dev-hard`` 0.818 / 0.606
(multi R@5 0.818 → 0.727) and cost the ``docs`` questions of the held-out sets (MRR 1.000 → 0.667
JavaScript, 0.833 → 0.500 Python); 0.2 also ``dev`` concept R@5 1.000 → 0.944. With BM25 alone,
whose scores have another shape, 0.05 of the best score lifted ``dev-hard`` 0.497 → 0.503 but cost
held-out Python ``docs`` MRR 0.833 → 0.667 and ``dev-hard`` multi 0.568 → 0.528, so BM25 rankings
are left as they are.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from rag.search.source_lead import is_implementation

__all__ = ["DEFAULT_DOC_FILES", "MAX_DEFINERS", "MAX_LINKS", "MIN_NAME_CHARS",
           "code_names", "link_from_docs"]

DEFAULT_DOC_FILES = 3
"""The leading files whose documentation chunks are read (the files a reader looks at first)."""
MAX_DEFINERS = 3
"""A name defined in more files than this is too common to point anywhere (1 and 2 measured within one
question's MRR of 3 on every set)."""
MAX_LINKS = 2
"""Names a file is credited for at most (a page listing a module's whole API names it many times)."""
MIN_NAME_CHARS = 4
"""Shorter names (``id``, ``app``, ``req``) are everywhere."""
DOC_KIND = "documentation"

_CODE_SPAN = re.compile(r"``([^`\n]{1,120})``|`([^`\n]{1,120})`")   # reST's double backquotes first
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


class Linked(Protocol):
    """What :func:`link_from_docs` reads and sets of a candidate (:class:`rag.search.lexical.Candidate`)."""

    id: int
    path: str
    kind: str
    text: str
    score: float


C = TypeVar("C", bound=Linked)


def code_names(text: str) -> set[str]:
    """The identifiers written as code in Markdown or reStructuredText ``text``: every identifier of at
    least :data:`MIN_NAME_CHARS` characters inside a backquoted span (``reply.send()`` gives ``reply`` and
    ``send``; ``:func:`wait_fixed``` gives ``wait_fixed``), except dunder names (``__repr__`` is every
    class's) and spans holding a URL (a reST link, ```text <https://…>`_``).

    Example::

        code_names("Call `reply.send(payload)` or :meth:`Retrying.wraps`; see `id`.")
        # {"reply", "send", "payload", "Retrying", "wraps"}
    """
    return {name for spans in _CODE_SPAN.findall(text) for span in spans if "://" not in span
            for name in _IDENTIFIER.findall(span)
            if len(name) >= MIN_NAME_CHARS and not (name.startswith("__") and name.endswith("__"))}


def link_from_docs(cands: Sequence[C], *, definers: Callable[[str], Mapping[str, float]],
                   share: float, doc_files: int = DEFAULT_DOC_FILES,
                   pinned: frozenset[int] | set[int] = frozenset()) -> list[C]:
    """``cands`` (best first) with the source files the leading documentation names moved up (module docstring).

    Args:
        cands: ranked candidates, best first; a file's place is that of its first candidate.
        definers: name → {path: weight} of the files defining or exporting it (the retriever's
            :data:`rag.search.structure.SymbolTable`); only definitions (weight 1.0) count.
        share: added per linked name, times the best unpinned score (0 turns it off; the retriever's
            :attr:`rag.search.lexical.RetrievalPolicy.doc_link_share`, 0.05 as measured in the module docstring).
        doc_files: how many leading files' documentation chunks are read.
        pinned: ids of candidates with a hard structural boost: never moved, and their files are not read.

    Returns:
        A new list sorted by the new scores (stable: equal scores keep their order); the input
        order, as a new list, when nothing is linked. The linked candidates' ``score`` is raised in
        place (as :func:`rag.search.lexical.fuse_streams` sets it).
    """
    if share <= 0 or doc_files <= 0:
        return list(cands)
    leading: list[str] = []
    for c in cands:
        if c.id not in pinned and c.path not in leading:
            leading.append(c.path)
            if len(leading) >= doc_files:
                break
    names: set[str] = set()
    for c in cands:
        if c.kind == DOC_KIND and c.path in leading:
            names |= code_names(c.text)
    links: Counter[str] = Counter()
    for name in names:
        files = [path for path, weight in definers(name).items() if weight >= 1.0]
        if 0 < len(files) <= MAX_DEFINERS:
            links.update(files)
    kinds = {c.path: c.kind for c in cands}
    linked = {path: min(n, MAX_LINKS) for path, n in links.items()
              if path in kinds and is_implementation(path, kinds[path])}
    if not linked:
        return list(cands)
    best = max((c.score for c in cands if c.id not in pinned), default=0.0)
    step = share * best
    for c in cands:
        if c.path in linked and c.id not in pinned:
            c.score += step * linked[c.path]
    return sorted(cands, key=lambda c: -c.score)
