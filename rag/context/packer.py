"""Codebase context for a question, and the packer that fits it into a token budget.

Two pure stages (DESIGN.md §3 "Code context and packing"), inputs injected:

``code_context(question, graph=…, retrieved=…, read_lines=…)`` — the seed's
``getCodeContext``/``buildCodebaseContext``:

1. Roots. Files of the retrieved sources (rank *r* scores
   ``max(400 − 25·r, 200)``); the top 12 JavaScript-family files whose path
   matches the question (``150 + 20`` per query token in the path, ``+100``
   when the file name is mentioned); files defining a symbol or route the
   question names (``200 +`` the hit's score); files reading an env var the
   question names (250). The constants other than the seed's are ours, chosen
   so retrieved files outrank path matches, which outrank expansions.
2. The top 8 roots are expanded to their dependencies (root − 120, floor
   100) and dependants (root − 150, floor 90) — the seed's numbers.
3. Entries: ``code`` entries with the lines of matched symbols and routes
   (score = the match score, hits scoring at least 40; at most 8; a symbol's
   own line range up to 60 lines, a route's line up to 12 lines stopping
   before the next route or definition; a span inside an already chosen span
   of the same file is dropped), one
   ``structure`` entry listing the env vars named in the question plus those
   used by the selected files, and a ``structure`` summary per selected file
   (best file first); at most ``max_entries`` (20) in all.

``pack_context(question, sources=…, code_entries=…, budget_tokens=4000, read_lines=…, graph=…)``
packs the lines that matter rather than whole windows (issue 15): the sources become
evidence spans (:func:`rag.context.spans.evidence_spans`: windows around the matched lines,
whole short symbols, lines past a chunk's edge, the definitions a strong span calls),
then everything is taken in one **packing order** (smaller positions first):

- evidence spans: ``file_rank + ROUND_STRIDE × order`` — the best span of each of the
  first three files before the second span of the first, and so on (the seed ranked by
  ``score − size penalty``, which let a file's small, weak chunks push out the best file's
  answer); files after the first ``SpanPolicy.wide_files`` (whose spans are short) are
  ``COMPACT_FILE_STEP`` apart instead of 1 and their rounds ``COMPACT_ROUND_STRIDE`` =
  ``ROUND_STRIDE × COMPACT_FILE_STEP`` apart (a short span costs about a third of a full
  one, so three of them come in the place of one); a called definition comes ``CALLEE_DELAY`` after its caller's span;
  when the pool leads with files the question names (:func:`rag.search.lexical.explicit_paths`), every span of
  them comes first and the other files' spans follow, shifted past their last one (retrieval lists other files
  after a named one; interleaved with it they cost held-out ``path`` questions the named file's later spans; a
  named file that retrieval put after others, as the importers of it a question asks for, moves nothing);
- code entries naming a symbol or route of the question (score ≥ ``FULL_NAME_SCORE``) at
  ``NAMED_CODE_POSITION`` + i (after the first two files' best spans), other code entries
  at ``CODE_POSITION`` + i;
- the environment summary at ``ENV_SUMMARY_POSITION``, file summaries at
  ``SUMMARY_POSITION`` + i: after the leading files' fourth round (positions up to
  ``wide_files − 1 + 3 × ROUND_STRIDE``; the pool keeps up to four chunks of them). A summary
  says where things are, never holds the lines that answer, and cut to
  ``MAX_SUMMARY_TOKENS`` it fits in a budget the leading files' later spans still need.

Code entries are cut too: a snippet to its first lines within ``MAX_SNIPPET_TOKENS``, a
summary at a list separator within ``MAX_SUMMARY_TOKENS`` (both used to have no token cap).

An item whose lines are already at least half packed, or whose text repeats a packed one,
is skipped; an item that does not fit the remaining budget is skipped, never truncated
(later, smaller items may still fit). Tokens are ``rag.tokens.estimate_tokens``; each
packed item's ``priority`` is minus its position.

``Engine.pack_context`` hands the packer a pool (:func:`rag.context.pool.context_pool`):
the shown sources, a deeper retrieval (``DEFAULT_CONTEXT_SOURCES`` = 32 chunks, with
``DEFAULT_CONTEXT_DEPTH``: up to 4, 4 and 3 chunks of the best three files) and a
retrieval restricted to source files (``DEFAULT_CODE_SOURCES``), so the implementation
is among the leading files even when documentation matches the question's words better.
That second retrieval never abstains (``retrieve(…, abstain=False)``): the question was
answered already, and restricted to source files it often shares too few words with them to
pass the abstention test again (it returned nothing for 12 of the 136 answered questions of
the three eval sets, BM25 + structure).
Measured with ``shared/eval/context_recall.py`` (4,000 tokens), line recall before → after
this pool and the short later spans: BM25 + structure ``dev`` 0.778 → 0.852, ``dev-hard``
0.341 → 0.500, held-out 0.786 → 0.833; with the local MiniLM vectors ``dev`` 0.741 → 0.907,
``dev-hard`` 0.455 → 0.500, held-out 0.786 → 0.881 (retrieval's R@5/MRR unchanged). Then
(third pass) the source-only retrieval without abstention and the token caps (code entries,
summaries, short spans, vector-only chunks, one-line spans): BM25 + structure ``dev``
0.852 → 0.870, ``dev-hard`` 0.500 → 0.523, held-out 0.833 → 0.833; MiniLM ``dev``
0.852 → 0.870, ``dev-hard`` 0.500 → 0.523, held-out 0.905 → 0.905 (main's hybrid fusion).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rag.context.codegraph import FULL_NAME_SCORE, TOKEN_SCORE, CodeGraph, RouteHit, SymbolHit, question_tokens
from rag.context.pool import DEFAULT_MIX_POLICY, context_pool
from rag.context.spans import DEFAULT_SPAN_POLICY, SpanPolicy, evidence_spans
from rag.errors import UserError
from rag.search.lexical import Depth, explicit_paths
from rag.search.query import analyze
from rag.sources.items import excerpt_label
from rag.tokens import estimate_tokens
from rag.types import Source

__all__ = [
    "CodeEntry",
    "PackedItem",
    "PackedContext",
    "code_context",
    "context_sources",
    "pack_context",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_BUDGET_TOKENS",
    "STRUCTURE_SCORE",
    "SOURCE_BASE_SCORE",
    "DEFAULT_CONTEXT_SOURCES",
    "DEFAULT_CONTEXT_DEPTH",
    "DEFAULT_CODE_SOURCES",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_ENTRIES = 20
DEFAULT_BUDGET_TOKENS = 4000
# Seed constants.
PATH_MATCH_FILES = 12
EXPANDED_ROOTS = 8
DEPENDENCY_PENALTY, DEPENDENCY_FLOOR = 120, 100
DEPENDANT_PENALTY, DEPENDANT_FLOOR = 150, 90
STRUCTURE_SCORE = 180
SOURCE_BASE_SCORE = 1000
# Packing order (positions, smaller first; module docstring "Packing order").
ROUND_STRIDE = 3
NAMED_CODE_POSITION = 1.5
ENV_SUMMARY_POSITION = 2.5
CODE_POSITION = 6.0
SUMMARY_POSITION = 12.0
CALLEE_DELAY = 1.0
COMPACT_FILE_STEP = 0.3
COMPACT_ROUND_STRIDE = ROUND_STRIDE * COMPACT_FILE_STEP
DEFAULT_CONTEXT_SOURCES = 32
"""Chunks retrieved for the context (the shown sources first): four times the default 8. Spans
are about half a window long, and files past the first ``SpanPolicy.wide_files`` give one
short span per chunk, so the same budget holds several times as many places."""
DEFAULT_CONTEXT_DEPTH = Depth(caps=(4, 4, 3), stride=ROUND_STRIDE)
"""The context pool's depth (:class:`rag.search.lexical.Depth`): the best three files keep up to
4, 4 and 3 chunks, taken in the packing order's rhythm (``file + ROUND_STRIDE × chunk``)."""
DEFAULT_CODE_SOURCES = 12
"""Chunks of a second retrieval restricted to ``source`` files, mixed into the pool
(:func:`rag.context.pool.context_pool`); 0 turns it off."""
# Our constants (see module docstring).
RETRIEVED_ROOT_SCORE, RETRIEVED_RANK_STEP, RETRIEVED_ROOT_FLOOR = 400, 25, 200
PATH_MATCH_BASE = 150
MATCH_ROOT_BASE = 200
ENV_ROOT_SCORE = 250
MIN_MATCH_SCORE = 2 * TOKEN_SCORE  # a full-name mention or two tokens
MAX_CODE_SNIPPETS = 8
MAX_SNIPPET_LINES = 60
MAX_SNIPPET_TOKENS = DEFAULT_SPAN_POLICY.max_span_tokens
"""A code snippet keeps its first lines up to this many estimated tokens (an evidence window's cap):
60 lines of a ``.d.ts`` overload list or of long JSDoc reached 839 tokens, a fifth of the budget."""
MAX_SUMMARY_TOKENS = 160
"""A file summary is cut to this many estimated tokens (long ``imports``/``defines``/``used by`` lists
end in ``…``): on the dev sets the median summary is about 120 tokens and one in seven passed 320,
up to 1,084, while a summary says where things are rather than holding the answer."""
ROUTE_SNIPPET_LINES = 12
MAX_ENV_NAMES = 20

ReadLines = Callable[[str, int, int], str]


@dataclass(frozen=True, slots=True)
class CodeEntry:
    """One unit of code context.

    Attributes:
        kind: ``code`` (file lines ``start``..``end`` in ``text``) or
            ``structure`` (a summary; ``start``/``end`` are ``None``).
        path: the file, or ``None`` for the environment-variable summary.
        score: packing score (``code``: the match score; ``structure``: 180).
        reason: why it was selected (``symbol createUser``, ``dependency of src/server.js``).
    """

    kind: str
    path: str | None
    start: int | None
    end: int | None
    score: float
    text: str
    reason: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "path": self.path, "start": self.start, "end": self.end,
                "score": self.score, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class PackedItem:
    """What the packer included: kind, location, score, priority, estimated tokens and, for a
    source, its chunk's symbol path (:attr:`rag.types.Source.symbol`)."""

    kind: str
    path: str | None
    start: int | None
    end: int | None
    score: float
    priority: float
    tokens: int
    symbol: str | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "path": self.path, "start": self.start, "end": self.end,
                "score": round(self.score, 4), "priority": round(self.priority, 4), "tokens": self.tokens,
                "symbol": self.symbol}


@dataclass(slots=True)
class PackedContext:
    """The packed context: ``text`` (blocks separated by blank lines), ``tokens_used``
    (``estimate_tokens(text)`` ≤ ``budget``), the distinct ``files`` in order,
    ``code_contexts`` (number of code/structure entries included) and ``items``."""

    text: str
    tokens_used: int
    budget: int
    files: list[str] = field(default_factory=list)
    code_contexts: int = 0
    items: list[PackedItem] = field(default_factory=list)

    def to_json(self) -> dict:
        """The CLI shape of ``slackzilla context --json``."""
        return {"text": self.text, "tokens_used": self.tokens_used, "budget": self.budget,
                "files": self.files, "code_contexts": self.code_contexts,
                "items": [item.to_json() for item in self.items]}


def _raise(scores: dict[str, float], reasons: dict[str, str], path: str, score: float, reason: str) -> None:
    if score > scores.get(path, float("-inf")):
        scores[path] = score
        reasons[path] = reason


def _file_scores(question: str, graph: CodeGraph, retrieved: Sequence[Source], symbol_hits: list[SymbolHit],
                 route_hits: list[RouteHit], env_names: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """File → score (and the reason of its best score): roots, then the expansion of the top roots."""
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    known = set(graph.paths)
    rank = 0
    for source in retrieved:
        if source.path in known and source.path not in scores:
            _raise(scores, reasons, source.path,
                   max(RETRIEVED_ROOT_SCORE - RETRIEVED_RANK_STEP * rank, RETRIEVED_ROOT_FLOOR), "retrieved")
            rank += 1
    tokens = question_tokens(question)
    path_matches = []
    for path in graph.paths:
        lowered = path.lower()
        score = TOKEN_SCORE * sum(1 for token in tokens if token in lowered)
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
        if len(stem) >= 3 and stem.lower() != "index" and stem.lower() in question.lower():
            score += FULL_NAME_SCORE
        if score > 0:
            path_matches.append((score, path))
    path_matches.sort(key=lambda item: (-item[0], item[1]))
    for score, path in path_matches[:PATH_MATCH_FILES]:
        _raise(scores, reasons, path, PATH_MATCH_BASE + score, "path match")
    for hit in symbol_hits:
        _raise(scores, reasons, hit.path, MATCH_ROOT_BASE + hit.score, f"defines {hit.name}")
    for hit in route_hits:
        _raise(scores, reasons, hit.path, MATCH_ROOT_BASE + hit.score, f"route {hit.method} {hit.route}")
    for name in env_names:
        for path, _line in graph.find_environment_variable(name):
            _raise(scores, reasons, path, ENV_ROOT_SCORE, f"reads {name}")
    roots = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:EXPANDED_ROOTS]
    for root, root_score in roots:
        for dep in graph.dependencies(root):
            _raise(scores, reasons, dep, max(root_score - DEPENDENCY_PENALTY, DEPENDENCY_FLOOR), f"dependency of {root}")
        for user in graph.dependants(root):
            _raise(scores, reasons, user, max(root_score - DEPENDANT_PENALTY, DEPENDANT_FLOOR), f"dependant of {root}")
    return scores, reasons


def _snippet(read_lines: ReadLines, path: str, start: int, end: int, score: float, reason: str) -> CodeEntry | None:
    end = min(end, start + MAX_SNIPPET_LINES - 1)
    try:
        text = read_lines(path, start, end)
    except (OSError, ValueError, KeyError) as exc:
        logger.debug("code context: cannot read %s:%d-%d (%s)", path, start, end, type(exc).__name__)
        return None
    lines = text.rstrip("\n").split("\n")
    used = kept = 0
    for line in lines:  # the first lines within MAX_SNIPPET_TOKENS (at least one)
        used += estimate_tokens(line) + 1
        if kept and used > MAX_SNIPPET_TOKENS:
            break
        kept += 1
    if kept < len(lines):
        end = start + kept - 1
    text = "\n".join(lines[:kept])
    if not text.strip():
        return None
    return CodeEntry(kind="code", path=path, start=start, end=end, score=score, text=text, reason=reason)


def _cut_summary(text: str, cap: int = MAX_SUMMARY_TOKENS) -> str:
    """``text`` within ``cap`` estimated tokens: whole lines while they fit, then the next line cut at a
    list separator (``, `` or ``; ``) and ended with ``…``; the rest left out."""
    out: list[str] = []
    used = 0
    for line in text.split("\n"):
        cost = estimate_tokens(line) + 1
        if used + cost <= cap:
            out.append(line)
            used += cost
            continue
        room = (cap - used - 1) * 4 - 2  # characters left (rag.tokens: four per token), less " …"
        cut = max(line.rfind(", ", 0, room), line.rfind("; ", 0, room))
        if cut > 0:
            out.append(line[:cut] + " …")
        break
    return "\n".join(out)


def _route_end(graph: CodeGraph, path: str, line: int) -> int:
    """Last line of a route's snippet: up to ``ROUTE_SNIPPET_LINES`` lines, stopping
    before the next route or definition of the same file."""
    end = line + ROUTE_SNIPPET_LINES - 1
    structure = graph.structure(path)
    if structure is not None:
        later = [r.line for r in structure.routes if r.line > line]
        later += [d.start for d in structure.definitions if d.start > line]
        if later:
            end = min(end, min(later) - 1)
    return end


def code_context(
    question: str,
    *,
    graph: CodeGraph,
    retrieved: Sequence[Source],
    read_lines: ReadLines,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    copies: Mapping[str, Sequence[str]] | None = None,
) -> list[CodeEntry]:
    """Code context entries for a question (algorithm in the module docstring).

    Args:
        question: the user's question.
        graph: the repository's code graph.
        retrieved: sources from retrieval, best first.
        read_lines: ``(path, start, end) -> text`` of lines ``start``..``end``
            (1-based, inclusive); ``OSError``/``ValueError``/``KeyError`` skip the entry.
        max_entries: cap on the number of entries returned.
        copies: copy path → its indexed sources (:mod:`rag.ingest.copies`): copies give no
            entry (their sources do), so a source and its copy never share the context.

    Returns:
        Entries, code snippets first (best match first), then the environment
        summary, then file summaries (best file first).
    """
    copies = copies or {}
    symbol_hits = [h for h in graph.find_symbols(question)
                   if h.score >= MIN_MATCH_SCORE and h.path not in copies][:MAX_CODE_SNIPPETS]
    route_hits = [h for h in graph.find_routes(question)
                  if h.score >= MIN_MATCH_SCORE and h.path not in copies][:MAX_CODE_SNIPPETS]
    env_in_question = [name for name in graph.env_names_in(question) if graph.find_environment_variable(name)]
    scores, reasons = _file_scores(question, graph, retrieved, symbol_hits, route_hits, env_in_question)
    selected = [path for path, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0])) if path not in copies]

    snippets: list[CodeEntry] = []
    matches = [(h.score, h.path, h.line, h.end, f"symbol {h.name}") for h in symbol_hits]
    matches += [(h.score, h.path, h.line, _route_end(graph, h.path, h.line), f"route {h.method} {h.route}")
                for h in route_hits]
    accepted: dict[str, list[tuple[int, int]]] = {}
    for score, path, start, end, reason in sorted(matches, key=lambda m: (-m[0], m[1], m[2], -m[3])):
        if len(snippets) >= MAX_CODE_SNIPPETS:
            break
        if any(s <= start and end <= e for s, e in accepted.get(path, [])):
            continue
        entry = _snippet(read_lines, path, start, end, score, reason)
        if entry is not None:
            snippets.append(entry)
            accepted.setdefault(path, []).append((start, end))

    entries = snippets[:max_entries]
    env_names = list(env_in_question)
    for path in selected:
        structure = graph.structure(path)
        if structure is not None:
            env_names.extend(v.name for v in structure.env_vars)
    env_names = list(dict.fromkeys(env_names))[:MAX_ENV_NAMES]
    if env_names and len(entries) < max_entries:
        lines = ["Environment variables (name: where the code reads it):"]
        for name in env_names:
            uses = ", ".join(f"{p}:{line}" for p, line in graph.find_environment_variable(name)[:5])
            lines.append(f"{name}: {uses}")
        entries.append(CodeEntry(kind="structure", path=None, start=None, end=None, score=STRUCTURE_SCORE,
                                 text="\n".join(lines), reason="environment variables"))
    for path in selected:
        if len(entries) >= max_entries:
            break
        summary = _cut_summary(graph.summary(path))
        if summary:
            entries.append(CodeEntry(kind="structure", path=path, start=None, end=None, score=STRUCTURE_SCORE,
                                     text=summary, reason=f"{reasons[path]} ({scores[path]:g})"))
    return entries


@dataclass(slots=True)
class _Candidate:
    kind: str
    path: str | None
    start: int | None
    end: int | None
    score: float
    block: str
    tokens: int
    priority: float
    order: int
    symbol: str | None = None


def _block(kind: str, path: str | None, start: int | None, end: int | None, text: str,
           label: str | None) -> str:
    if kind == "structure":
        header = f"--- structure: {path}" if path else f"--- {label or 'structure'}"
    else:
        label = excerpt_label(path or "", label) or label  # an issue/PR: framed as untrusted reports
        header = f"--- {path}:{start}-{end}" + (f" ({label})" if label else "")
    return f"{header}\n{text.rstrip()}"


def _position(kind: str, *, file_rank: int = 0, order: int = 0, index: int = 0, named: bool = False,
              env: bool = False, wide_files: int = DEFAULT_SPAN_POLICY.wide_files) -> float:
    """The packing position of an item (smaller first; see the module docstring, "Packing order")."""
    if kind == "source":
        if file_rank >= wide_files:  # short spans of the later files: cheaper, so closer together
            return wide_files + COMPACT_FILE_STEP * (file_rank - wide_files) + COMPACT_ROUND_STRIDE * order
        return file_rank + ROUND_STRIDE * order
    if kind == "code":
        return (NAMED_CODE_POSITION if named else CODE_POSITION) + index
    return (ENV_SUMMARY_POSITION if env else SUMMARY_POSITION) + index


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether at least half of ``start..end`` is already packed in ``spans``."""
    length = end - start + 1
    covered = 0
    for s, e in spans:
        covered += max(0, min(e, end) - max(s, start) + 1)
    return covered * 2 >= length



def context_sources(retrieve: Callable[..., list[Source]], question: str, sources: list[Source]) -> list[Source]:
    """The packer's pool for ``question``: ``sources`` (the ones shown), a deeper retrieval
    (:data:`DEFAULT_CONTEXT_SOURCES` chunks, :data:`DEFAULT_CONTEXT_DEPTH`) and one restricted to
    source files (:data:`DEFAULT_CODE_SOURCES`), merged by :func:`rag.context.pool.context_pool`
    with :data:`rag.context.pool.DEFAULT_MIX_POLICY`. No sources (an abstention) stays empty.

    Args:
        retrieve: ``retrieve(question, limit=, kind=, depth=, abstain=)`` → sources, best first
            (:meth:`rag.engine.Engine.retrieve`, :meth:`rag.federation.FederatedEngine.retrieve`);
            the source-only retrieval passes ``abstain=False`` (module docstring).
    """
    deeper: list[Source] = []
    code: list[Source] = []
    if sources:
        deeper = retrieve(question, limit=DEFAULT_CONTEXT_SOURCES, depth=DEFAULT_CONTEXT_DEPTH)
        if DEFAULT_CODE_SOURCES:
            code = retrieve(question, limit=DEFAULT_CODE_SOURCES, kind="source", abstain=False)
    return context_pool(sources, deeper, code, policy=DEFAULT_MIX_POLICY)


def _candidates(question: str, *, sources: Sequence[Source], code_entries: Sequence[CodeEntry],
                read_lines: ReadLines | None, graph: CodeGraph | None, span_policy: SpanPolicy) -> list[_Candidate]:
    """Every item the packer may take (evidence spans, then code entries), each with its block, tokens and
    packing position (``priority`` = minus the position), in no particular order."""
    candidates: list[_Candidate] = []
    headings = {(s.path, s.start): s.heading or s.symbol for s in sources}

    def symbol_at(path: str, line: int) -> str | None:
        """The symbol path of the retrieved chunk holding ``path:line`` (a span's own symbol)."""
        return next((s.symbol for s in sources if s.path == path and s.start <= line <= s.end and s.symbol), None)

    spans = evidence_spans(question, sources=sources, read_lines=read_lines, graph=graph, policy=span_policy)
    positions = [_position("source", file_rank=span.file_rank, order=span.order, wide_files=span_policy.wide_files)
                 + (CALLEE_DELAY if span.callee else 0.0) for span in spans]
    # A file the question names leads: every span of it before the other files' (they follow, they do not
    # interleave: "in bottle.py, how …?" is about bottle.py, whose later spans used to be all the context held).
    # Only the named files retrieval put first: the importers of a named file lead its list (a break-it review).
    files = list(dict.fromkeys(s.path for s in sources))
    explicit = set(explicit_paths(analyze(question), files)) if files else set()
    named: set[str] = set()
    for path in files:
        if path not in explicit:
            break
        named.add(path)
    named_last = max((p for span, p in zip(spans, positions) if span.path in named), default=None)
    for span, position in zip(spans, positions):
        if named_last is not None and span.path not in named:
            position += named_last + 1.0
        kind = "code" if span.callee else "source"
        symbol = None if span.callee else symbol_at(span.path, span.start)
        if span.reason == "retrieved":
            label = headings.get((span.path, span.start))
        else:  # where the lines live first (the symbol path), then why they were picked
            label = "; ".join(part for part in (symbol, span.reason) if part)
        block = _block(kind, span.path, span.start, span.end, span.text, label)
        score = SOURCE_BASE_SCORE + span.score
        candidates.append(_Candidate(kind, span.path, span.start, span.end, score, block,
                                     estimate_tokens(block + "\n\n"), -position, len(candidates),
                                     symbol))
    code_index = summary_index = 0
    for entry in code_entries:
        kind = "structure" if entry.kind == "structure" else "code"
        score = STRUCTURE_SCORE if kind == "structure" else entry.score
        if kind == "code":
            position = _position("code", index=code_index, named=entry.score >= FULL_NAME_SCORE)
            code_index += 1
        else:
            position = _position("structure", index=summary_index, env=entry.path is None)
            summary_index += entry.path is not None
        block = _block(kind, entry.path, entry.start, entry.end, entry.text, entry.reason)
        candidates.append(_Candidate(kind, entry.path, entry.start, entry.end, score, block,
                                     estimate_tokens(block + "\n\n"), -position, len(candidates)))
    return candidates


def pack_context(
    question: str,
    *,
    sources: Sequence[Source],
    code_entries: Sequence[CodeEntry],
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    read_lines: ReadLines | None = None,
    graph: CodeGraph | None = None,
    span_policy: SpanPolicy = DEFAULT_SPAN_POLICY,
) -> PackedContext:
    """Pack the evidence spans of ``sources`` and the code entries into at most ``budget_tokens`` estimated tokens.

    Args:
        question: the question (its terms choose the lines of each source that matter).
        sources: retrieved sources, best first.
        code_entries: output of :func:`code_context`.
        budget_tokens: the budget, in ``estimate_tokens`` units.
        read_lines: reads lines of an indexed file, so spans can take a whole symbol or
            a window reaching past a chunk (``None``: the sources' own lines only).
        graph: the code graph (symbol bodies, callees); ``None`` → line windows only.
        span_policy: knobs of :func:`rag.context.spans.evidence_spans`.

    Returns:
        A :class:`PackedContext`; items in packing order, ``priority`` = minus their position.

    Raises:
        UserError: ``budget_tokens`` is not a positive integer.
    """
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens <= 0:
        raise UserError(f"The context budget must be a positive number of tokens (got {budget_tokens!r}).")
    candidates = _candidates(question, sources=sources, code_entries=code_entries, read_lines=read_lines,
                             graph=graph, span_policy=span_policy)
    candidates.sort(key=lambda c: (-c.priority, c.order))

    used = 0
    taken: list[_Candidate] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    bodies: set[str] = set()
    for candidate in candidates:
        body = candidate.block.split("\n", 1)[-1]
        if not body.strip() or body in bodies:
            continue
        located = candidate.start is not None and candidate.end is not None and candidate.path is not None
        if located and _overlaps(spans.get(candidate.path, []), candidate.start, candidate.end):
            continue
        if used + candidate.tokens > budget_tokens:
            continue
        used += candidate.tokens
        taken.append(candidate)
        bodies.add(body)
        if located:
            spans.setdefault(candidate.path, []).append((candidate.start, candidate.end))

    text = "\n\n".join(c.block for c in taken)
    files = list(dict.fromkeys(c.path for c in taken if c.path))
    items = [PackedItem(c.kind, c.path, c.start, c.end, c.score, c.priority, c.tokens, c.symbol) for c in taken]
    return PackedContext(text=text, tokens_used=estimate_tokens(text), budget=budget_tokens, files=files,
                         code_contexts=sum(1 for c in taken if c.kind != "source"), items=items)
