"""Evidence spans: the lines of the retrieved files that hold the answer, not whole windows.

A retrieved chunk is a 60-line window (or a symbol); the answer usually sits in a few of
its lines, sometimes just outside it, and sometimes in a function it calls. For one
question :func:`evidence_spans` turns the retrieved sources into short spans:

1. **Line scores.** Each line of each retrieved chunk scores the IDF-weighted sum of the
   question's topical terms it contains (light stems with the coding synonyms, as
   :func:`rag.search.lexical.focus_line`; meta words such as "file" or "function" left
   out). The IDF is taken over the lines of all retrieved chunks, ``log(1 + L / (1 + l_t))``
   with ``L`` lines of which ``l_t`` contain the term (BM25's IDF shape over lines): a term
   on every line says nothing about *which* lines matter.
2. **Anchors.** The lines scoring at least :attr:`SpanPolicy.anchor_share` of the chunk's
   best line, at most :attr:`SpanPolicy.max_anchors` of them, best first. A chunk with no
   matching line (found by the vector stream alone) keeps its first lines, up to
   :attr:`SpanPolicy.max_span_tokens`: the vectors matched it as a whole, and a chunk begins
   with what it is (a signature, a heading); whole, such chunks of prose cost 500-650 tokens.
   2b. **The rest of a leading file.** For each of the first :attr:`SpanPolicy.wide_files` files
   of at most :attr:`SpanPolicy.whole_file_lines` lines, the whole file (read from the index)
   is scored as one more chunk, after the retrieved ones: retrieval chose the file, but the
   chunk that holds the answer may not be among its retrieved chunks (on ``dev-hard`` the gold
   file was in the pool for 41 of 44 questions, the chunk holding the gold lines for 33).
   Its anchors are its best lines by the same scores (the IDF stays that of the retrieved
   lines: over the whole files' lines too, ``dev`` lost a question); with no matching line it
   gives no span; its spans come after the retrieved chunks' first two
   (:attr:`SpanPolicy.whole_file_round`). Context line recall (``shared/eval/context_recall.py``,
   4,000 tokens), MiniLM hybrid: ``dev-hard`` 0.659 → 0.682, held-out Python 0.786 → 0.810;
   BM25 + structure: held-out Python 0.714 → 0.738; ``dev`` and held-out JavaScript and
   TypeScript unchanged in both. Scoring only the lines outside the retrieved chunks lost
   ``dev`` and held-out questions.
3. **Spans.** An anchor inside a definition of at most :attr:`SpanPolicy.max_symbol_lines`
   lines (and :attr:`SpanPolicy.max_merged_tokens` tokens) takes that whole definition (the
   symbol body); otherwise a window of ``before``/``after`` lines around it, kept inside the
   enclosing definition when there is one, whose edges move out to take whole any short
   definition they would cut. Windows may reach past the chunk (the chunk's neighbours):
   text is read from the index by ``read_lines``. A window is then cut to
   :attr:`SpanPolicy.max_span_tokens` by dropping the lines farthest from its anchor (in
   the before/after proportion): 21 lines of prose or of a Markdown table cost three times
   as many tokens as 21 lines of code, and would crowd other files out of the budget. An
   anchor whose own line is longer than that (minified or generated code, a data line: one
   line of a generated validator cost 562 tokens) gives no span.

   3b. **Short spans for the later files.** The first :attr:`SpanPolicy.wide_files` files
   get the spans above; each later file gives its best line per chunk with
   ``compact_before``/``compact_after`` lines around it (a definition whole only up to
   ``compact_symbol_lines`` lines), within :attr:`SpanPolicy.compact_span_tokens` (twice
   that when merged). The answer is often in a file ranked fourth to twentieth (for
   paraphrased questions more often than in the first three), and a ten-line span fits
   about three such files in the budget of one full span, also when the lines are prose.
4. **Merge.** Spans of one file that overlap or lie within :attr:`SpanPolicy.merge_gap`
   lines are merged while the result stays within :attr:`SpanPolicy.max_merged_lines`
   and :attr:`SpanPolicy.max_merged_tokens`.
   Each span's ``weight`` is the share of the question's term weight it covers (0..1).
5. **Callees.** For the spans of the best :attr:`SpanPolicy.callee_files` files, the
   definitions their calls name (same file first, then the files it imports; at most
   :attr:`SpanPolicy.max_callees` per file, each cut to ``max_symbol_lines``) follow as
   spans of their own.

Spans of a file are ordered round by round: the best span of each of its chunks (in
retrieval order), then each chunk's second best, and so on (with
:attr:`SpanPolicy.interleave_chunks`; else chunk by chunk), then the callees. The packer
reads several chunks of the best files (:data:`rag.context.packer.DEFAULT_CONTEXT_DEPTH`),
and the second chunk of a file holds the answer about as often as the third span of its
first chunk. Everything is deterministic.
"""
from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rag.context.codegraph import CodeGraph
from rag.parse.records import Definition
from rag.search.lexical import META_TERMS
from rag.search.query import analyze
from rag.text import index_text, light_stem, synonyms_of
from rag.tokens import estimate_tokens
from rag.types import Source

__all__ = ["Span", "SpanPolicy", "DEFAULT_SPAN_POLICY", "evidence_spans"]

log = logging.getLogger(__name__)

ReadLines = Callable[[str, int, int], str]


@dataclass(frozen=True, slots=True)
class SpanPolicy:
    """Span knobs (see the module docstring for their role).

    Attributes:
        anchor_share: a line is an anchor when it scores at least this share of the
            chunk's best line (half: the lines that match about as well as the best one).
        max_anchors: anchors per chunk (a 60-line window rarely holds more than three
            separate places worth reading).
        before, after: window around an anchor, in lines. Code reads downwards (a matched
            condition or call is followed by what it does), so more lines follow than
            precede; 6 + 1 + 14 = 21 lines, a third of the former 60-line window.
        max_symbol_lines: a definition up to this long is packed whole when an anchor
            lies in it (most functions and methods of the eval corpora are shorter; longer
            ones are cut to a window).
        merge_gap: spans of one file this close (in lines) are merged.
        max_merged_lines: a merge never makes a span longer than this (the former window).
        callee_files: the best this many files get the definitions their spans call.
        max_callees: callee definitions per such file.
        focus: cut chunks to the spans around their matched lines (``False``: whole chunks).
        max_span_tokens: a window is cut to this many estimated tokens (step 3; about 21
            lines of code at 15 tokens a line).
        max_merged_tokens: cap of a whole symbol body and of a merged span (twice a window).
        wide_files: the first this many files get full spans; later files short ones (3b).
        compact_anchors, compact_before, compact_after, compact_symbol_lines: the short
            spans' anchors per chunk, window and longest definition taken whole
            (2 + 1 + 8 = 11 lines: the matched line and what follows it).
        interleave_chunks: order a file's spans round by round over its chunks (module docstring).
        whole_file_lines: a leading file of at most this many lines is also scored whole (step 2b;
            reading and scoring a line costs about 10 µs, and larger files are mostly generated or
            bundled); 0 turns step 2b off.
        whole_file_round: the round (see "Spans of a file are ordered round by round") of the whole
            file's best span: 1, after every retrieved chunk's first and second spans (at 0 it came
            before the second spans, and displaced the gold lines of one ``dev-hard`` question, BM25).
        compact_span_tokens: token cap of a short span (twice it when merged): 11 of a full
            window's 21 lines, so half its ``max_span_tokens``. Without it a short span of a
            Markdown table or of long prose lines reached 420-580 tokens, a full span's price.
    """

    anchor_share: float = 0.5
    max_anchors: int = 12
    before: int = 6
    after: int = 14
    max_symbol_lines: int = 45
    merge_gap: int = 3
    max_merged_lines: int = 60
    callee_files: int = 3
    max_callees: int = 2
    focus: bool = True
    max_span_tokens: int = 320
    max_merged_tokens: int = 640
    wide_files: int = 3
    compact_anchors: int = 1
    compact_before: int = 2
    compact_after: int = 8
    compact_symbol_lines: int = 16
    interleave_chunks: bool = True
    compact_span_tokens: int = 160
    whole_file_lines: int = 2000
    whole_file_round: int = 1


DEFAULT_SPAN_POLICY = SpanPolicy()


@dataclass(frozen=True, slots=True)
class Span:
    """A run of lines of one file worth showing the model.

    Attributes:
        path: the file.
        start, end: 1-based inclusive line range.
        text: those lines as indexed (redacted).
        file_rank: the file's position among the retrieved files (0 = best).
        order: the span's position among its file's spans (0 = best).
        weight: share of the question's term weight the span covers (0..1).
        score: the retrieval score of the file's best source.
        reason: why it was chosen (``function decodeParam``, ``matches decode, param``,
            ``retrieved``, ``called from lib/layer.js:170``).
        callee: a definition called from another span (packed as code context).
    """

    path: str
    start: int
    end: int
    text: str
    file_rank: int
    order: int
    weight: float
    score: float
    reason: str
    callee: bool = False


@dataclass(slots=True)
class _Draft:
    start: int
    end: int
    reason: str
    chunk: int  # index of the originating source among the file's sources


def _term_groups(question: str) -> dict[str, set[str]]:
    query = analyze(question)
    return {t: {light_stem(x) for x in synonyms_of(t)} for t in query.terms if t not in META_TERMS}


def _line_stems(line: str) -> set[str]:
    return {light_stem(w) for w in index_text(line).split()} if line.strip() else set()


def _innermost(definitions: Sequence[Definition], line: int) -> Definition | None:
    """The shortest definition containing ``line`` (ties: the later start)."""
    best = None
    for d in definitions:
        if d.start <= line <= d.end and (best is None or (d.end - d.start, -d.start) < (best.end - best.start, -best.start)):
            best = d
    return best


def evidence_spans(
    question: str,
    *,
    sources: Sequence[Source],
    read_lines: ReadLines | None = None,
    graph: CodeGraph | None = None,
    policy: SpanPolicy = DEFAULT_SPAN_POLICY,
) -> list[Span]:
    """The evidence spans of ``sources`` for ``question`` (algorithm in the module docstring).

    Args:
        question: the user's question.
        sources: retrieved sources, best first (several may share a file).
        read_lines: ``(path, start, end) -> text`` of lines ``start..end`` (1-based,
            inclusive; lines past the end simply absent); ``OSError``/``ValueError``/
            ``KeyError`` fall back to the lines the source itself holds. ``None``: only
            the sources' own lines are used (spans never reach past a chunk).
        graph: the code graph (definitions for symbol bodies, calls and imports for
            callees); ``None`` → line windows only.
        policy: the knobs.

    Returns:
        Spans grouped by file in retrieval order, each file's spans in their ``order``;
        line ranges never overlap within a file.
    """
    groups = _term_groups(question)
    by_file: dict[str, list[Source]] = {}
    for source in sources:
        by_file.setdefault(source.path, []).append(source)
    known_lines: dict[str, dict[int, str]] = {}
    stems: dict[tuple[str, int], set[str]] = {}
    for path, items in by_file.items():
        lines = known_lines.setdefault(path, {})
        for source in items:
            for offset, line in enumerate(source.text.split("\n")):
                lines.setdefault(source.start + offset, line)
        for number, line in lines.items():
            stems[(path, number)] = _line_stems(line)
    pool = max(len(stems), 1)
    weights = {}
    for term, group in groups.items():
        containing = sum(1 for s in stems.values() if group & s)
        weights[term] = math.log(1.0 + pool / (1.0 + containing))
    total_weight = sum(weights.values()) or 1.0

    def line_terms(path: str, number: int) -> frozenset[str]:
        s = stems.get((path, number))
        if s is None:
            s = stems[(path, number)] = _line_stems(known_lines.get(path, {}).get(number, ""))
        return frozenset(t for t, g in groups.items() if g & s)

    def matched_terms(path: str, start: int, end: int) -> list[str]:
        found: list[str] = []
        for number in range(start, end + 1):
            s = stems.get((path, number)) or set()
            found.extend(t for t, g in groups.items() if g & s and t not in found)
        return found

    out: list[Span] = []
    for file_rank, (path, items) in enumerate(by_file.items()):
        structure = graph.structure(path) if graph is not None else None
        definitions = structure.definitions if structure is not None else []
        wide = file_rank < policy.wide_files
        shape = policy if wide else _compact(policy)
        lines = _Lines(path, known_lines.setdefault(path, {}), read_lines)
        drafts: list[_Draft] = []
        for chunk_index, source in enumerate(items):
            numbers = range(source.start, source.start + len(source.text.split("\n")))
            drafts += _chunk_drafts(path, numbers, chunk_index, source, definitions, line_terms, weights, shape, lines)
        if wide and policy.whole_file_lines > 0:  # the rest of a leading file (step 2b)
            whole = _whole_file(path, read_lines, known_lines.setdefault(path, {}), policy.whole_file_lines)
            if whole is not None:
                drafts += _chunk_drafts(path, whole, len(items), None, definitions, line_terms, weights, shape, lines)
        merged = _merge(drafts, shape, lines)
        texts = [_text(read_lines, known_lines.get(path, {}), path, d.start, d.end) for d in merged]
        spans = []
        for draft, (text, first, last) in zip(merged, texts):
            if not text.strip():
                continue
            for number, line in enumerate(text.split("\n"), first):
                known_lines.setdefault(path, {}).setdefault(number, line)
            terms = matched_terms(path, first, last)
            weight = sum(weights[t] for t in terms) / total_weight
            reason = draft.reason or ("matches " + ", ".join(terms[:4]) if terms else "retrieved")
            spans.append((draft.chunk, -weight, first, Span(path, first, last, text, file_rank, 0, weight,
                                                            items[0].score, reason)))
        spans.sort(key=lambda item: item[:3])
        if policy.interleave_chunks:  # each chunk's best span, then each chunk's second, ...
            rank: dict[int, int] = {len(items): policy.whole_file_round}  # the whole file's spans start later
            keyed = []
            for item in spans:
                keyed.append((rank.get(item[0], 0), item[0], item[1], item[2], item[3]))
                rank[item[0]] = rank.get(item[0], 0) + 1
            keyed.sort(key=lambda k: k[:4])
            spans = [(k[1], k[2], k[3], k[4]) for k in keyed]
        ordered = [item[3] for item in spans]
        if graph is not None and wide and file_rank < policy.callee_files:
            ordered += _callees(graph, path, ordered, read_lines, known_lines, file_rank, items[0].score, policy)
        out += [_with_order(span, order) for order, span in enumerate(ordered)]
    return out


def _compact(policy: SpanPolicy) -> SpanPolicy:
    """The span shape of a file ranked ``wide_files`` or later: its best line per chunk with a few lines
    around it, a definition whole only when it is short (step 3b)."""
    return replace(policy, max_anchors=policy.compact_anchors, before=policy.compact_before,
                   after=policy.compact_after, max_symbol_lines=policy.compact_symbol_lines,
                   max_span_tokens=policy.compact_span_tokens, max_merged_tokens=2 * policy.compact_span_tokens)


class _Lines:
    """The lines of one file known so far (from its retrieved chunks), read from the index on demand."""

    def __init__(self, path: str, known: dict[int, str], read_lines: ReadLines | None) -> None:
        self.path, self.known, self.read_lines = path, known, read_lines

    def tokens(self, start: int, end: int) -> int:
        """Estimated tokens of lines ``start..end`` (absent lines count as empty)."""
        missing = [n for n in range(start, end + 1) if n not in self.known]
        if missing and self.read_lines is not None:
            try:
                text = self.read_lines(self.path, missing[0], missing[-1])
            except (OSError, ValueError, KeyError):
                text = ""
            for number, line in enumerate(text.split("\n"), missing[0]):
                self.known.setdefault(number, line)
            for number in missing:  # past the end of the file: known to be empty
                self.known.setdefault(number, "")
        return sum(estimate_tokens(self.known.get(n, "")) + 1 for n in range(start, end + 1))


def _window(number: int, definitions: Sequence[Definition], policy: SpanPolicy,
            lines: _Lines) -> tuple[int, int, str] | None:
    """The span an anchor line stands for: its enclosing definition when short, else a window (step 3);
    ``None`` when the anchor line alone is longer than ``max_span_tokens`` (minified code, a data line)."""
    enclosing = _innermost(definitions, number)
    if (enclosing is not None and enclosing.end - enclosing.start + 1 <= policy.max_symbol_lines
            and lines.tokens(enclosing.start, enclosing.end) <= policy.max_merged_tokens):
        return enclosing.start, enclosing.end, f"{enclosing.kind} {enclosing.name}"
    lo, hi = max(1, number - policy.before), number + policy.after
    if enclosing is not None:
        lo, hi = max(lo, enclosing.start), min(hi, enclosing.end)
    # A window edge that cuts a short definition in two moves out to take all of it (coherent spans).
    for edge in (lo, hi):
        cut = _innermost([d for d in definitions if d.end - d.start + 1 <= policy.max_symbol_lines], edge)
        if cut is not None and max(hi, cut.end) - min(lo, cut.start) + 1 <= policy.max_merged_lines \
                and lines.tokens(min(lo, cut.start), max(hi, cut.end)) <= policy.max_span_tokens:
            lo, hi = min(lo, cut.start), max(hi, cut.end)
    # Long lines (prose, tables, minified code): give up the lines farthest from the anchor, in the
    # before/after proportion, until the window fits ``max_span_tokens``.
    total = lines.tokens(lo, hi)
    while hi > lo and total > policy.max_span_tokens:
        if (hi - number) * max(policy.before, 1) >= (number - lo) * max(policy.after, 1) and hi > number:
            total -= lines.tokens(hi, hi)
            hi -= 1
        else:
            total -= lines.tokens(lo, lo)
            lo += 1
    if total > policy.max_span_tokens:  # one line longer than a window: minified or data
        return None
    return lo, hi, ""


def _chunk_drafts(path: str, numbers: range, chunk_index: int, source: Source | None,
                  definitions: Sequence[Definition], line_terms: Callable[[str, int], frozenset[str]],
                  weights: dict[str, float], policy: SpanPolicy, lines: _Lines) -> list[_Draft]:
    """The anchors of one chunk as drafts (steps 2-3).

    Anchors are the lines scoring at least ``anchor_share`` of the chunk's best line; each
    becomes a span (:func:`_window`), and spans closer than ``merge_gap`` merge later, so a
    chunk whose matches are spread over it stays (nearly) whole while one whose matches sit
    in one place is cut to that place. No matching line → the chunk's first lines (step 2);
    ``source`` ``None`` (a whole file, step 2b) → nothing.
    """
    scores = {n: sum(weights[t] for t in line_terms(path, n)) for n in numbers}
    best = max(scores.values(), default=0.0)
    if source is None and (best <= 0.0 or not policy.focus):
        return []
    if not policy.focus or best <= 0.0:
        end = source.end
        if policy.focus:  # a chunk no line of which matches (found by the vectors): its first lines, a window's worth
            total = lines.tokens(source.start, end)
            while end > source.start and total > policy.max_span_tokens:
                total -= lines.tokens(end, end)
                end -= 1
        return [_Draft(source.start, end, "retrieved", chunk_index)]
    anchors = [n for n, score in scores.items() if score >= policy.anchor_share * best]
    anchors.sort(key=lambda n: (-scores[n], n))
    drafts = []
    for n in anchors[: policy.max_anchors]:
        window = _window(n, definitions, policy, lines)
        if window is not None:
            drafts.append(_Draft(*window, chunk_index))
    return drafts


def _whole_file(path: str, read_lines: ReadLines | None, known: dict[int, str], max_lines: int) -> range | None:
    """The line numbers of ``path`` read whole into ``known`` (step 2b); ``None`` when it cannot be read or
    has more than ``max_lines`` lines."""
    if read_lines is None:
        return None
    try:
        text = read_lines(path, 1, max_lines + 1)
    except (OSError, ValueError, KeyError) as exc:
        log.debug("evidence span: cannot read %s whole (%s)", path, type(exc).__name__)
        return None
    file_lines = text.split("\n") if text else []
    if not file_lines or len(file_lines) > max_lines:
        return None
    for number, line in enumerate(file_lines, 1):
        known.setdefault(number, line)
    return range(1, len(file_lines) + 1)


def _with_order(span: Span, order: int) -> Span:
    return Span(span.path, span.start, span.end, span.text, span.file_rank, order, span.weight, span.score,
                span.reason, span.callee)


def _merge(drafts: list[_Draft], policy: SpanPolicy, lines: _Lines | None = None) -> list[_Draft]:
    """Merge overlapping or near drafts (module docstring, step 4); the earliest chunk wins, and a span that
    grew past its first draft loses that draft's reason (a symbol name would no longer describe it)."""
    merged: list[_Draft] = []
    for d in sorted(drafts, key=lambda d: (d.start, d.end)):
        last = merged[-1] if merged else None
        if last is not None and d.start <= last.end + policy.merge_gap + 1 \
                and max(last.end, d.end) - last.start + 1 <= policy.max_merged_lines \
                and (lines is None or lines.tokens(last.start, max(last.end, d.end)) <= policy.max_merged_tokens):
            if (d.start, d.end) != (last.start, last.end) and not (last.start <= d.start and d.end <= last.end):
                last.reason = "" if d.reason != "retrieved" or last.reason != "retrieved" else "retrieved"
            last.end = max(last.end, d.end)
            last.chunk = min(last.chunk, d.chunk)
        elif last is not None and d.start <= last.end:  # overlapping but too long to merge: keep disjoint
            if d.end > last.end:
                merged.append(_Draft(last.end + 1, d.end, d.reason, d.chunk))
        else:
            merged.append(_Draft(d.start, d.end, d.reason, d.chunk))
    return merged


def _text(read_lines: ReadLines | None, known: dict[int, str], path: str, start: int,
          end: int) -> tuple[str, int, int]:
    """``(text of lines start..end, first line, last line present)``: from ``read_lines``, else the
    known lines (the first run of known lines in the range: a window reaching before the chunk keeps
    the chunk's own lines)."""
    if read_lines is not None:
        try:
            text = read_lines(path, start, end).rstrip("\n")
            if text:
                return text, start, start + len(text.split("\n")) - 1
        except (OSError, ValueError, KeyError) as exc:
            log.debug("evidence span: cannot read %s:%d-%d (%s)", path, start, end, type(exc).__name__)
    first = next((n for n in range(start, end + 1) if n in known), start)
    lines = []
    for number in range(first, end + 1):
        if number not in known:
            break
        lines.append(known[number])
    return "\n".join(lines), first, first + len(lines) - 1


_CALLEE_NAME = re.compile(r"[A-Za-z_$#][\w$]*$")


def _callees(graph: CodeGraph, path: str, spans: list[Span], read_lines: ReadLines | None,
             known_lines: dict[str, dict[int, str]], file_rank: int, score: float, policy: SpanPolicy) -> list[Span]:
    """Definitions called from ``spans`` (module docstring, step 5), not already inside a span."""
    structure = graph.structure(path)
    if structure is None or not spans:
        return []
    covered = [(s.path, s.start, s.end) for s in spans]
    out: list[Span] = []
    seen: set[tuple[str, int]] = set()
    for span in spans:
        for call in structure.calls:
            if len(out) >= policy.max_callees:
                return out
            if not span.start <= call.line <= span.end:
                continue
            match = _CALLEE_NAME.search(call.callee)
            if match is None:
                continue
            name = match.group(0)
            target = _definition(graph, path, name)
            if target is None:
                continue
            where, d = target
            if (where, d.start) in seen or any(p == where and s <= d.start and d.end <= e for p, s, e in covered):
                continue
            end = min(d.end, d.start + policy.max_symbol_lines - 1)
            text, first, last = _text(read_lines, known_lines.get(where, {}), where, d.start, end)
            if not text.strip():
                continue
            seen.add((where, d.start))
            covered.append((where, first, last))
            out.append(Span(where, first, last, text, file_rank, 0, 0.0, score,
                            f"{d.kind} {d.name}, called from {path}:{call.line}", callee=True))
    return out


def _definition(graph: CodeGraph, path: str, name: str) -> tuple[str, Definition] | None:
    """The definition of ``name`` called from ``path``: in ``path`` itself, else in a file it imports."""
    for where in (path, *graph.dependencies(path)):
        structure = graph.structure(where)
        if structure is None:
            continue
        for d in structure.definitions:
            if d.name == name and d.kind in ("function", "method", "arrow", "generator", "class"):
                return where, d
    return None
