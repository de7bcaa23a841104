"""Answer-time grounding check: which locations a model answer cites, and whether it was shown them.

The system prompt asks the model to cite every claim as ``path:start-end``
using only locations shown in the excerpts, and to reply exactly
:data:`rag.answer.prompting.NOT_DOCUMENTED` when the evidence does not answer the
question. This module reads those citations back out of the answer and checks
them against the evidence the model really received (the packed excerpts,
code-context entries, and the lines repository tools showed it: ``readFile`` ranges,
``searchCode`` snippets, ``findSymbol`` signature and call lines):

- a **supported** citation overlaps a location the model was given;
- an **unsupported** one names a file or line range it was not given (a
  misremembered or invented location: the user is told, the link is not shown);
- the answer **declines** when it opens with that sentence and cites nothing
  supported: retrieval found text, but not an answer, so the retrieved sources
  are not presented as sources of the answer. A partial answer ("X is in
  a.js:3-9; Y is not documented in the repository.") does not decline.

Citation forms recognised (with or without backticks, ``L`` prefixes, en or em
dashes): ``lib/a.js:10-20``, ``lib/a.js:L10-L20``, ``lib/a.js:12``, ```lib/a.js`:12``,
``lib/a.js#L10-L20``, ``lib/a.js (lines 10-20)``; a document (:mod:`rag.documents`) is cited
the same way by its path, ``doc:3f9a1c2b7e:4-12``, and so are an issue and a pull request
(:mod:`rag.sources.items`), ``issue:12:1-4``, ``pr:7:1-3`` (``api/issue:12:1-4`` in an ``in:all`` answer). A bare file name
(``router.js:12``) is resolved to the one shown path it names. Not citations:
a path alone, ``1.2:3`` (a version), ``api.example.com:443`` (a host; a name
without ``/`` needs a file extension or must name a shown file),
``docs/api.md#10-things`` (an anchor).
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from rag.types import Source

__all__ = ["Citation", "CitationCheck", "extract_citations", "check_citations", "MAX_CITATIONS"]

MAX_CITATIONS = 200
"""Citations read from one answer (a longer list is cut; answers are a few KB)."""

_PATH = (r"(?<![\w/.@\\-])(?P<path>doc:[0-9a-f]{6,32}|(?:[\w@.-]+/)?(?:issue|pr):[1-9]\d{0,9}"
         r"|(?:[\w@.-]+/)*[\w@.-]*[\w@-])")
_ITEM = re.compile(r"^(?:[\w@.-]+/)?(?:issue|pr):\d+$")
_RANGE = r"(?P<start>\d{1,7})(?:\s?[-–—]\s?L?(?P<end>\d{1,7}))?"
_COLON_FORM = re.compile(_PATH + r"`?(?::L?|#L)" + _RANGE + r"(?![\w])")
_LINES_FORM = re.compile(_PATH + r"`?\s*\((?:lines?|L)\s*" + _RANGE + r"\)", re.I)

# Extensions that make a bare name (no "/") a file; a name with a "/" needs none.
_FILE_EXTENSIONS = frozenset(
    "js mjs cjs jsx ts mts cts tsx json jsonc md mdx markdown rst txt py pyi go rs java kt rb php c h cc cpp hpp cs "
    "swift m scala sh bash zsh ps1 css scss less html htm vue svelte yml yaml toml ini cfg conf xml sql graphql proto "
    "lock env example sample gradle properties tf hcl lua ex exs erl dart r jl mod sum coffee litcoffee elm fs fsx "
    "vb zig nim sol ejs hbs handlebars mustache pug njk jinja jinja2 j2 liquid twig erb".split()
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
        cited: what to present as the answer's sources: the retrieved sources a supported
            citation overlaps, then supported citations of other shown locations (code-context
            entries) as sources without text, cut to the lines shown, in citation order.
        declined: the answer opens with the "not documented" sentence and cites nothing supported.
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


def _resolve(path: str, known: Collection[str], by_name: dict[str, list[str]]) -> str | None:
    """``path`` as a citation path: itself, the one known path it is a ``/``-suffix of, or ``None``."""
    if path in known or path.startswith("doc:") or _ITEM.match(path):
        return path
    suffix = [p for p in by_name.get(path.rsplit("/", 1)[-1], ()) if p.endswith("/" + path)]
    if len(suffix) == 1:
        return suffix[0]
    if "/" in path:
        return path
    extension = path.rsplit(".", 1)[-1].lower() if "." in path.strip(".") else ""
    return path if extension in _FILE_EXTENSIONS and extension[:1].isalpha() else None


def extract_citations(text: str, *, known_paths: Collection[str] = ()) -> list[Citation]:
    """Distinct citations in ``text``, in order of appearance (at most :data:`MAX_CITATIONS`).

    Args:
        text: an answer (Markdown).
        known_paths: paths the model was shown; a bare or partial name that is the
            ``/``-suffix of exactly one of them is read as that path (``router.js:12`` →
            ``lib/router.js:12``), and an extensionless name (``Makefile:4``) counts only then.

    A reversed range (``a.js:20-10``) is read as ``10-20``; line 0 as line 1; a leading
    ``./`` is dropped. Runs in time linear in ``len(text)``.
    """
    known = set(known_paths)
    by_name: dict[str, list[str]] = {}
    for p in known:
        by_name.setdefault(p.rsplit("/", 1)[-1], []).append(p)
    found: list[tuple[int, Citation]] = []
    seen: set[tuple[str, int, int]] = set()
    for pattern in (_COLON_FORM, _LINES_FORM):
        for match in pattern.finditer(text or ""):
            raw = match.group("path")
            while raw.startswith("./"):
                raw = raw[2:]
            path = _resolve(raw, known, by_name) if raw else None
            if path is None:
                continue
            start = max(1, int(match.group("start")))
            end = max(1, int(match.group("end") or start))
            start, end = min(start, end), max(start, end)
            if (path, start, end) not in seen:
                seen.add((path, start, end))
                found.append((match.start(), Citation(path, start, end)))
    found.sort(key=lambda item: item[0])
    return [citation for _, citation in found[:MAX_CITATIONS]]


def _opens_with(answer: str, phrase: str) -> bool:
    """Whether ``answer`` starts with ``phrase``, ignoring case, whitespace and Markdown emphasis."""
    normal = re.sub(r"[*_`>#\s]+", " ", answer or "").strip().lower()
    return normal.startswith(re.sub(r"\s+", " ", phrase).strip().rstrip(".").lower())


def _shown_part(citation: Citation, shown: Sequence[tuple[str, int, int]]) -> tuple[int, int]:
    """The lines of a supported ``citation`` the model was shown: the cited range cut to the extent of
    the shown locations it overlaps (a model citing ``route.js:88-400`` after seeing lines 80-95 links
    88-95, never lines it did not see or past the file's end)."""
    parts = [(a, b) for p, a, b in shown if citation.overlaps(p, a, b)]
    return max(citation.start, min(a for a, _ in parts)), min(citation.end, max(b for _, b in parts))


def check_citations(answer: str, *, sources: Sequence[Source], evidence: Iterable[tuple[str, int, int]],
                    declined_phrase: str) -> CitationCheck:
    """Check the citations of a model ``answer`` against what the model was shown.

    Args:
        answer: the model's final answer (Markdown).
        sources: the retrieved sources, best first (what :attr:`CitationCheck.cited` draws on).
        evidence: every ``(path, start, end)`` location given to the model: the packed
            excerpts and code-context entries (a retrieved source the packer left out is
            not evidence), lines shown by repository tools (``ToolResult.evidence``), and
            locations cited in earlier answers of the conversation.
        declined_phrase: the sentence the system prompt asks for when the evidence does
            not answer (compared case-insensitively, ignoring whitespace and emphasis).

    Returns:
        A :class:`CitationCheck`. Never raises.
    """
    shown = [(p, int(a), int(b)) for p, a, b in evidence if p and a is not None and b is not None]
    known = {p for p, _, _ in shown} | {s.path for s in sources}
    check = CitationCheck(citations=extract_citations(answer, known_paths=known))
    for citation in check.citations:
        if any(citation.overlaps(p, a, b) for p, a, b in shown):
            check.supported.append(citation)
        else:
            check.unsupported.append(citation)
    taken: set[int] = set()
    for citation in check.supported:
        hits = [i for i, s in enumerate(sources) if citation.overlaps(s.path, s.start, s.end)]
        for i in hits:
            if i not in taken:
                taken.add(i)
                check.cited.append(sources[i])
        if not hits:  # a code-context entry the model was shown: link the cited lines it was shown
            start, end = _shown_part(citation, shown)
            extension = citation.path.rsplit(".", 1)[-1] if "." in citation.path else ""
            check.cited.append(Source(citation.path, start, end, 0.0, extension, "source", ""))
    check.declined = not check.supported and _opens_with(answer, declined_phrase)
    return check
