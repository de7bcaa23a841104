"""Answer-time grounding check: which locations a model answer cites, and whether it was shown them.

The system prompt asks the model to cite every claim as ``path:start-end``
using only locations shown in the excerpts, and to reply exactly
:data:`rag.answer_text.NOT_DOCUMENTED` when the evidence does not answer the
question. This module reads those citations back out of the answer and checks
them against the evidence the model really received (the packed excerpts and
code-context entries, plus the retrieved sources):

- a **supported** citation overlaps a location the model was given;
- an **unsupported** one names a file or line range it was not given (a
  misremembered or invented location: the user is told, the link is not shown);
- the answer **declines** when it says the repository does not document the
  answer and cites nothing supported: retrieval found text, but not an answer,
  so the retrieved sources are not presented as sources of the answer.

Citation forms recognised (with or without backticks, ``L`` prefixes and an
en dash): ``lib/a.js:10-20``, ``lib/a.js:L10-L20``, ``lib/a.js:12``,
``lib/a.js#L10-L20``. A citation of a path alone (no line) is not a citation.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .types import Source

__all__ = ["Citation", "CitationCheck", "extract_citations", "check_citations", "MAX_CITATIONS"]

MAX_CITATIONS = 200
"""Citations read from one answer (a longer list is cut; answers are a few KB)."""

# A path: segments of word characters, dots, dashes and @ separated by "/", ending in a
# file name with an extension (or a dotfile such as ".env.example"), then ":" or "#",
# an optional "L", a line number and an optional "-"/"–" range.
_CITATION = re.compile(
    r"(?<![\w/.@-])"
    r"(?P<path>(?:[\w@.-]+/)*[\w@-]*\.[A-Za-z][\w.-]*)"
    r"(?::|#)L?(?P<start>\d{1,7})(?:\s?[-–]\s?L?(?P<end>\d{1,7}))?"
    r"(?![\w])"
)


# Extensions that make a bare name (no "/") a file; anything else with a "/" counts too.
_FILE_EXTENSIONS = frozenset(
    "js mjs cjs jsx ts mts cts tsx json jsonc md mdx markdown rst txt py pyi go rs java kt rb php c h cc cpp hpp cs "
    "swift m scala sh bash zsh ps1 css scss less html htm vue svelte yml yaml toml ini cfg conf xml sql graphql proto "
    "lock env example sample gradle properties dockerfile makefile tf hcl lua ex exs erl dart r jl".split()
)


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited location: repository-relative ``path`` and a 1-based inclusive line range."""

    path: str
    start: int
    end: int

    def label(self) -> str:
        """``path:start-end`` (``path:start`` for one line)."""
        return f"{self.path}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")

    def overlaps(self, path: str, start: int, end: int) -> bool:
        """Whether this citation shares at least one line with ``path:start-end``."""
        return self.path == path and self.start <= end and start <= self.end


@dataclass(slots=True)
class CitationCheck:
    """The result of :func:`check_citations`.

    Attributes:
        citations: every distinct citation in the answer, in order of first appearance.
        supported: the citations overlapping a location the model was given.
        unsupported: the others.
        cited: retrieved sources that a supported citation overlaps, in citation order.
        declined: the answer says the repository does not answer the question and
            cites nothing supported.
    """

    citations: list[Citation] = field(default_factory=list)
    supported: list[Citation] = field(default_factory=list)
    unsupported: list[Citation] = field(default_factory=list)
    cited: list[Source] = field(default_factory=list)
    declined: bool = False

    def to_json(self) -> dict:
        """Counts and labels (JSON-safe): ``{"citations", "supported", "unsupported", "declined"}``."""
        return {"citations": len(self.citations), "supported": len(self.supported),
                "unsupported": [c.label() for c in self.unsupported], "declined": self.declined}


def extract_citations(text: str) -> list[Citation]:
    """Distinct ``path:start-end`` citations in ``text``, in order (at most :data:`MAX_CITATIONS`).

    A reversed range (``a.js:20-10``) is read as ``10-20``; a leading ``./`` is dropped; the
    extension must start with a letter (``1.2:3`` is a version, not a citation), and a name
    without ``/`` must end in a known file extension (``api.example.com:443`` is a host).
    """
    out: dict[tuple[str, int, int], Citation] = {}
    for match in _CITATION.finditer(text or ""):
        path = match.group("path")
        while path.startswith("./"):
            path = path[2:]
        if "/" not in path and path.rsplit(".", 1)[-1].lower() not in _FILE_EXTENSIONS:
            continue  # "api.example.com:443" is a host and port
        start = int(match.group("start"))
        end = int(match.group("end") or start)
        if start < 1:
            continue
        start, end = min(start, end), max(start, end)
        out.setdefault((path, start, end), Citation(path, start, end))
        if len(out) >= MAX_CITATIONS:
            break
    return list(out.values())


def check_citations(answer: str, *, sources: Sequence[Source], evidence: Iterable[tuple[str, int, int]],
                    declined_phrase: str) -> CitationCheck:
    """Check the citations of a model ``answer`` against what the model was shown.

    Args:
        answer: the model's final answer (Markdown).
        sources: the retrieved sources, best first (the candidates for :attr:`CitationCheck.cited`).
        evidence: every ``(path, start, end)`` location given to the model (packed
            excerpts and code-context entries); the sources are always included.
        declined_phrase: the sentence the system prompt asks for when the evidence does
            not answer (compared case-insensitively, ignoring surrounding whitespace).

    Returns:
        A :class:`CitationCheck`. Never raises.
    """
    shown = [(s.path, s.start, s.end) for s in sources] + [
        (p, int(a), int(b)) for p, a, b in evidence if p and a is not None and b is not None]
    check = CitationCheck(citations=extract_citations(answer))
    for citation in check.citations:
        if any(citation.overlaps(p, a, b) for p, a, b in shown):
            check.supported.append(citation)
        else:
            check.unsupported.append(citation)
    taken: set[int] = set()
    for citation in check.supported:
        for i, source in enumerate(sources):
            if i not in taken and citation.overlaps(source.path, source.start, source.end):
                taken.add(i)
                check.cited.append(source)
    phrase = declined_phrase.strip().rstrip(".").lower()
    check.declined = not check.supported and phrase in (answer or "").lower()
    return check
