"""Boundary chunking: chunks that follow a file's own structure instead of fixed line windows.

Two entry points, both pure functions of their inputs:

* :func:`symbol_chunks` — code. Given the file's definitions as :class:`SymbolSpan` records
  (1-based start/end lines, name, kind, parent; any language whose parser gives them), it
  builds their nesting tree and emits, recursively:

  1. a definition that fits the cap (``max_lines`` lines and ``max_chars`` characters) as
     one unit, its leading comments and decorators (the lines directly above it) included;
  2. a larger one split at its inner definitions (the methods of a class, the inner
     functions of a function), the code between them kept as units of their own;
  3. a region with no inner definition left split at statement boundaries (a blank line,
     or a line back at the region's base indentation), into pieces of balanced size, each
     piece after the first also showing the last :data:`PIECE_OVERLAP_LINES` lines before its
     cut (as line windows overlap: a passage cut at a boundary is whole in one of them);
  4. top-level code between definitions (imports, constants, ``module.exports``) as units.

  Adjacent units of one level are then merged while the merged chunk stays within
  ``merge_lines`` (small neighbours: three one-line getters, the imports and a helper),
  and a unit with at most :data:`TINY_LINES` non-blank lines (a closing brace,
  ``'use strict'``, blank lines) joins a neighbour whatever its kind. This is the
  split-then-merge scheme of AST-based chunkers (LlamaIndex ``CodeSplitter``, Sweep's
  chunker; Zhang et al. 2025, "cAST: Enhancing Code Retrieval-Augmented Generation with
  Structural Chunking via Abstract Syntax Tree"), run over definition line ranges rather
  than every syntax node, so it needs nothing from a parser beyond its definitions.

* :func:`section_chunks` — Markdown: one unit per heading section (the lines from a
  heading to the next one), a large section split at paragraph boundaries (overlapping
  like the pieces above), small consecutive sections merged up to ``merge_lines``.

Every chunk carries exact 1-based inclusive line ranges, its text is the file's real lines
(verbatim, joined by ``\\n``), chunks are in line order and together cover every line of the
file (blank lines included); they overlap only where a split piece repeats the end of the
piece before it. A single line longer than ``max_chars`` (minified code) is cut by
characters into several chunks of that one line (:func:`cap_pieces`). No chunk is longer
than ``max_lines`` lines, except a definition whose leading comments push it past the cap
(they count up to half the cap extra) and a unit that took in a tiny neighbour.

Definitions nested more than :data:`MAX_SYMBOL_DEPTH` levels deep (generated code) are not split
out of the one enclosing them: their lines are chunked as its body, by rule 3, and
:func:`symbol_chunks` reports the file (:data:`DEEP_NESTING`). Every walk over the tree uses an
explicit stack, so no nesting depth raises ``RecursionError``.

A code chunk also carries:

* ``symbol`` — the symbol path it belongs to: the whole definitions it holds when they make
  up at least half of it or it is top-level code (``res.status, res.links``, at most
  :data:`MAX_SYMBOLS_LISTED` then ``…``; a chunk that also shows its enclosing definition's
  signature names that one first), else the innermost definition enclosing it
  (``proto.handle``, ``Router.dispatch``, ``proto.handle.next`` for an inner function);
  ``None`` for top-level code alone. A top-level definition's path starts with the owner
  its parser names (``proto`` in ``proto.handle = function handle() {}``).
* ``header`` — for a chunk that starts inside a definition, the signature lines of the
  enclosing definitions it does not show (outermost first, at most :data:`MAX_HEADER_LINES`,
  each stripped and cut to :data:`MAX_HEADER_CHARS`), so the lexical index and the
  embedding know that lines 200–240 belong to ``function handle(req, res, out)``. The
  header is *not* part of ``text``: the cited range and the text shown stay the real lines.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, repeat
from operator import add, sub
from dataclasses import dataclass, field

from rag.types import Chunk

__all__ = ["SymbolSpan", "symbol_chunks", "section_chunks", "cap_pieces", "heading_for",
           "TINY_LINES", "MAX_HEADER_LINES", "MAX_HEADER_CHARS", "MAX_SYMBOLS_LISTED", "PIECE_OVERLAP_LINES",
           "MAX_SYMBOL_DEPTH", "DEEP_NESTING"]

TINY_LINES = 2
"""A unit with at most this many non-blank lines always joins a neighbour (brace, ``'use strict'``)."""
MAX_HEADER_LINES = 3
"""Enclosing signatures repeated in a chunk's header (the innermost ones)."""
MAX_HEADER_CHARS = 160
"""Each header line is cut to this many characters."""
MAX_SYMBOLS_LISTED = 3
"""A chunk holding more whole definitions lists the first ones, then ``…``."""
PIECE_OVERLAP_LINES = 15
"""Lines of the previous piece a split piece repeats (capped at a quarter of ``max_lines``);
the 60/40 line windows overlap by 20."""
MIN_PIECE_SHARE = 0.6
"""A split piece is at least this share of the balanced piece size (unless a boundary forces less)."""
MAX_SYMBOL_DEPTH = 100
"""Definitions nested more levels deep than this are not split out of the one enclosing them: their
lines are chunked as that one's body (at statement boundaries), and no symbol path names more
definitions. Hand-written code stays far below (the deepest of the JavaScript, TypeScript and Python
files of the eval repositories, eslint, express, fastify, koa, starlette …, is 5 levels); generated
code can nest thousands deep, and a path per level would cost memory quadratic in the depth (a
5,000-level file: 75 MB of paths, 28 KB symbols)."""
DEEP_NESTING = "deep_nesting"
"""The problem :func:`symbol_chunks` reports for a file whose definitions nest past :data:`MAX_SYMBOL_DEPTH`."""

_COMMENT_STARTS = ("//", "/*", "*", "#", "@")
_CLOSERS = (")", "]", "}", ".", "?", ":", "&", "|", "+")
"""What a line continuing the statement above starts with: never a good place to start a piece."""


@dataclass(frozen=True, slots=True)
class SymbolSpan:
    """One definition as the chunker needs it (the shape of :class:`rag.parse.records.Definition`).

    Attributes:
        start: first line (1-based, inclusive) — the signature line.
        end: last line (1-based, inclusive).
        name: the defined name (``handle``, ``Router``).
        kind: ``function``, ``class``, ``method`` … (informational).
        parent: the owner the parser names (``proto``, the enclosing class or function),
            used for the symbol path of a top-level definition (``proto.handle``).
    """

    start: int
    end: int
    name: str
    kind: str = "function"
    parent: str | None = None


@dataclass(slots=True)
class _Node:
    """A definition in the nesting tree; ``top`` includes its leading comments/decorators."""

    top: int
    sig: int
    end: int
    path: str
    parent: _Node | None
    children: list[_Node] = field(default_factory=list)


@dataclass(slots=True)
class _Unit:
    """Lines ``start..end`` inside ``owner`` (``None``: the module), holding the whole ``defs``.

    ``mergeable`` is false for the pieces of a split definition: they only take in tiny units.
    ``continued`` marks a piece after the first of a region cut at statement boundaries.
    """

    start: int
    end: int
    owner: _Node | None
    defs: list[_Node]
    mergeable: bool = True
    continued: bool = False


class _Sizes:
    """Per-line facts of one file, computed once (the chunker asks about the same lines many times).

    ``chars``: prefix sums of per-line characters, each line counted with its newline and capped at
    the character cap (a longer line is cut by :func:`cap_pieces` anyway); ``solid``: prefix sums of
    non-blank lines; ``indent[i]``: leading whitespace characters of line ``i + 1``;
    ``stripped[i]``: that line without them. Built with C-level ``map``/``accumulate`` passes (no
    Python call per line), and read by the splitting and comment rules instead of stripping the
    same lines again: chunking eslint 9.39.5's 380 JavaScript/TypeScript files took 88 ms instead
    of 104 ms on one core (best of 7, both versions alternated in one process), the chunks identical.
    """

    __slots__ = ("chars", "solid", "indent", "stripped")

    def __init__(self, lines: Sequence[str], max_chars: int) -> None:
        lengths = list(map(len, lines))
        if lengths and max(lengths) > max_chars:
            lengths = [min(n, max_chars) for n in lengths]
        self.chars = list(accumulate(map(add, lengths, repeat(1)), initial=0))
        self.stripped = list(map(str.lstrip, lines))
        self.solid = list(accumulate(map(bool, self.stripped), initial=0))
        self.indent = list(map(sub, map(len, lines), map(len, self.stripped)))

    def char_count(self, start: int, end: int) -> int:
        return self.chars[end] - self.chars[start - 1] - 1

    def non_blank(self, start: int, end: int) -> int:
        return self.solid[end] - self.solid[start - 1]

    def min_indent(self, start: int, end: int) -> int | None:
        """Smallest indentation of the non-blank lines ``start..end`` (1-based, inclusive); ``None``
        when all are blank."""
        return min(compress(self.indent[start - 1 : end], self.stripped[start - 1 : end]), default=None)


def cap_pieces(lines: Sequence[str], first: int, max_chars: int) -> list[tuple[int, int, str]]:
    """Cut consecutive lines (the first is line ``first``) into ``(start, end, text)`` pieces of at
    most ``max_chars`` characters each, in order, losing no line.

    Lines are kept whole and joined by ``\\n``; a single line longer than the cap (minified
    code) is cut by characters, every piece keeping that line's number.
    """
    out: list[tuple[int, int, str]] = []
    buf: list[str] = []
    size = 0
    start = first
    for offset, line in enumerate(lines):
        number = first + offset
        if len(line) > max_chars:
            if buf:
                out.append((start, number - 1, "\n".join(buf)))
                buf, size = [], 0
            for i in range(0, len(line), max_chars):
                out.append((number, number, line[i : i + max_chars]))
            start = number + 1
            continue
        if buf and size + 1 + len(line) > max_chars:
            out.append((start, number - 1, "\n".join(buf)))
            buf, size, start = [], 0, number
        size += len(line) + (1 if buf else 0)  # the length of "\n".join(buf)
        buf.append(line)
    if buf:
        out.append((start, first + len(lines) - 1, "\n".join(buf)))
    return out


# -- the definition tree -----------------------------------------------------------------------


def _is_comment(stripped: str) -> bool:
    """Whether a line, given without its leading whitespace, is a comment or decorator line."""
    return stripped.startswith(_COMMENT_STARTS)


def _tree(spans: Iterable[SymbolSpan], stripped: Sequence[str]) -> tuple[list[_Node], bool]:
    """The nesting tree of ``spans`` (roots in line order) in a file whose lines, without their
    leading whitespace, are ``stripped``, and whether spans were left out for nesting deeper than
    :data:`MAX_SYMBOL_DEPTH`.

    Spans outside the file are clipped, empty or nameless ones dropped, a span that starts
    inside another but ends past it is cut at the other's end (so the tree is proper), and a
    span with the same range as its parent is the same unit (dropped). A span that would sit
    more than :data:`MAX_SYMBOL_DEPTH` levels deep is left out (its lines stay in its deepest
    ancestor's body). Each node's ``top`` then moves up over the comment and decorator lines
    directly above its signature, as far as the previous sibling's end (or the parent's signature).
    """
    total = len(stripped)
    clipped = ((max(1, s.start), min(total, s.end), s) for s in spans if s.name)
    clean = sorted(((start, end, s) for start, end, s in clipped if start <= end),
                   key=lambda item: (item[0], -item[1]))
    roots: list[_Node] = []
    stack: list[_Node] = []
    capped = False
    for start, end, span in clean:
        while stack and start > stack[-1].end:
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is not None:
            if (start, end) == (parent.sig, parent.end):
                continue
            if len(stack) >= MAX_SYMBOL_DEPTH:
                capped = True
                continue
            end = min(end, parent.end)
            path = f"{parent.path}.{span.name}"
        else:
            path = f"{span.parent}.{span.name}" if span.parent else span.name
        node = _Node(start, start, end, path, parent)
        (parent.children if parent is not None else roots).append(node)
        stack.append(node)
    _attach_comments(roots, 1, stripped)
    return roots, capped


def _attach_comments(nodes: list[_Node], floor: int, stripped: Sequence[str]) -> None:
    """Move each node's ``top`` (of ``nodes`` and of all their descendants) up over the comment and
    decorator block right above its signature — across one blank line after a comment block, as in
    ``/** … */``, blank, ``proto.use = function use(fn) {`` — never above ``floor`` for the first of
    ``nodes``, its previous sibling's end for the others, its parent's signature for a first child.

    An explicit stack of sibling lists, not recursion: a definition nested thousands deep (generated
    code) must not exhaust Python's call stack. Each node's ``top`` depends only on its siblings' and
    parent's ``sig``/``end``, so the visiting order does not matter.
    """
    pending: list[tuple[list[_Node], int]] = [(nodes, floor)]
    while pending:
        siblings, floor = pending.pop()
        for node in siblings:
            top = node.sig
            above = top - 1
            if above - 1 >= floor and not stripped[above - 1] and _is_comment(stripped[above - 2]):
                above -= 1  # one blank line between a comment block and its definition
            while above >= floor and _is_comment(stripped[above - 1]):
                top = above
                above -= 1
            node.top = top
            if node.children:
                pending.append((node.children, node.sig + 1))
            floor = node.end + 1


# -- units: split, then merge ------------------------------------------------------------------


class _Chunker:
    """One file's boundary chunking (the algorithm of the module docstring)."""

    def __init__(self, lines: Sequence[str], *, max_lines: int, merge_lines: int, max_chars: int,
                 overlap_lines: int = 0) -> None:
        self.lines = lines
        self.overlap_lines = overlap_lines
        self.max_lines = max_lines
        self.merge_lines = merge_lines
        self.max_chars = max_chars
        self.sizes = _Sizes(lines, max_chars)

    def fits(self, start: int, end: int, max_lines: int | None = None) -> bool:
        """Whether lines ``start..end`` make one chunk: at most ``max_lines`` (default the cap)
        lines and at most the character cap."""
        limit = self.max_lines if max_lines is None else max_lines
        return end - start + 1 <= limit and self.sizes.char_count(start, end) <= self.max_chars

    # -- code --

    def region(self, start: int, end: int, owner: _Node | None, children: list[_Node]) -> list[_Unit]:
        """Units tiling lines ``start..end`` of ``owner``'s body, given its child definitions there.

        A child definition that fits (:meth:`_fits_definition`) is one unit; a larger one is split
        into pieces not mergeable with their siblings: at its own children (a region of its own, the
        same way) or, without children, at statement boundaries (:meth:`split`). The regions being
        split are kept on an explicit stack rather than Python's, so a definition nested thousands
        of levels deep (generated code) is chunked like any other instead of raising ``RecursionError``.
        """
        # The regions being split around this one, outermost first: (end, owner, children, cursor, next
        # child, units so far) of each, resumed once the child definition it descended into is done.
        frames: list[tuple[int, _Node | None, list[_Node], int, int, list[_Unit]]] = []
        cursor, index, units = start, 0, []
        while True:
            while index < len(children):
                child = children[index]
                index += 1
                if child.top > cursor:
                    units += self.split(cursor, child.top - 1, owner)
                cursor = child.end + 1
                if self._fits_definition(child):
                    units.append(_Unit(child.top, child.end, child.parent, [child]))
                elif child.children:
                    frames.append((end, owner, children, cursor, index, units))
                    end, owner, children, cursor, index, units = child.end, child, child.children, child.top, 0, []
                else:
                    pieces = self.split(child.top, child.end, child)
                    for piece in pieces:
                        piece.mergeable = False
                    units += pieces
            if cursor <= end:
                units += self.split(cursor, end, owner)
            done = self.merge(units)
            if not frames:
                return done
            end, owner, children, cursor, index, units = frames.pop()
            for piece in done:  # the pieces of a definition too large for one unit
                piece.mergeable = False
            units += done

    def _fits_definition(self, node: _Node) -> bool:
        """Whether definition ``node`` makes one unit. Its leading comments do not count against the
        line cap (up to half of it more: a 50-line function with a 20-line JSDoc block stays whole),
        only against the character cap."""
        comment_lines = min(node.sig - node.top, self.max_lines // 2)
        return self.fits(node.top, node.end, self.max_lines + comment_lines)

    # -- splitting at statement boundaries --

    def split(self, start: int, end: int, owner: _Node | None) -> list[_Unit]:
        """Balanced pieces of lines ``start..end`` cut at blank lines or base-indentation lines."""
        if self.fits(start, end):
            return [_Unit(start, end, owner, [])]
        base = self._base_indent(start, end)
        # Pieces leave room for the overlap added below (at most a quarter of the cap), so that
        # none is longer than the cap.
        overlap = min(self.overlap_lines, self.max_lines // 4)
        piece_lines = self.max_lines - overlap
        units: list[_Unit] = []
        cursor = start
        while not self.fits(cursor, end, piece_lines):
            # The rest needs ``count`` pieces at least; aim at an equal share for this one.
            count = max(math.ceil((end - cursor + 1) / piece_lines),
                        math.ceil(self.sizes.char_count(cursor, end) / self.max_chars), 2)
            target = (end - cursor + 1) / count
            far = self._reach(cursor, end, piece_lines)
            # Cut before line ``cut`` (the next piece starts there): cursor < cut <= far + 1.
            low = min(far + 1, cursor + max(1, int(target * MIN_PIECE_SHARE)))
            ideal = cursor + target
            best, best_key = far + 1, None
            for cut in range(low, far + 2):
                key = (self._boundary(cut, base), -abs(cut - ideal))
                if best_key is None or key > best_key:
                    best, best_key = cut, key
            units.append(_Unit(cursor, best - 1, owner, []))
            cursor = best
        units.append(_Unit(cursor, end, owner, []))
        for unit in units[1:]:
            unit.continued = True
        return units

    def overlap(self, units: list[_Unit]) -> list[_Unit]:
        """Let each continued piece also show the last lines of the piece before it (as line
        windows overlap), so a passage cut at a piece boundary is whole in one of them: at most
        :data:`PIECE_OVERLAP_LINES` (and a quarter of the cap) lines, within the character cap."""
        overlap = min(self.overlap_lines, self.max_lines // 4)
        for before, unit in zip(units, units[1:]):
            if not unit.continued or before.owner is not unit.owner:
                continue
            first = max(before.start + 1, unit.start - overlap)
            while first < unit.start and self.sizes.char_count(first, unit.end) > self.max_chars:
                first += 1
            unit.start = first
        return units

    def _reach(self, start: int, end: int, max_lines: int) -> int:
        """The last line ``far`` (``start <= far <= end``) such that lines ``start..far`` fit in
        ``max_lines`` and the character cap, or ``start`` when even one line does not: a binary
        search over the character prefix sums (both counts grow with ``far``)."""
        chars = self.sizes.chars
        by_chars = bisect_right(chars, chars[start - 1] + 1 + self.max_chars) - 1
        return max(start, min(end, start + max_lines - 1, by_chars))

    def _base_indent(self, start: int, end: int) -> int:
        """Smallest indentation of the non-blank lines strictly inside ``start..end``
        (the signature and the closing line left out), or of all of them when there is none."""
        inner = self.sizes.min_indent(start + 1, end - 1) if end - start >= 2 else None
        if inner is None:
            inner = self.sizes.min_indent(start, end)
        return 0 if inner is None else inner

    def _boundary(self, cut: int, base: int) -> int:
        """How good a place it is to start a piece at line ``cut``: 3 after a blank line at the
        base indentation, 2 after a blank line, 1 at the base indentation, 0 elsewhere."""
        if cut > len(self.lines):
            return 3
        stripped = self.sizes.stripped[cut - 1]
        if not stripped:
            return 0
        after_blank = cut >= 2 and not self.sizes.stripped[cut - 2]
        at_base = self.sizes.indent[cut - 1] <= base and not stripped.startswith(_CLOSERS)
        return (2 if after_blank else 0) + (1 if at_base else 0)

    # -- merging neighbours --

    def merge(self, units: list[_Unit]) -> list[_Unit]:
        """Merge adjacent mergeable units up to ``merge_lines``; tiny units join a neighbour."""
        out: list[_Unit] = []
        for unit in units:
            if out and out[-1].mergeable and unit.mergeable and self.fits(out[-1].start, unit.end, self.merge_lines):
                last = out[-1]
                last.end, last.defs = unit.end, last.defs + unit.defs
                last.owner = _common_owner(last.owner, unit.owner)
            else:
                out.append(unit)
        # Tiny units (closing braces, one-line statements, blank lines) join the previous unit,
        # else the next one, whatever its length (they add at most TINY_LINES lines of code)
        # as long as the character cap holds; the other unit keeps its symbol.
        limit = len(self.lines)
        i = 0
        while i < len(out) and len(out) > 1:
            unit = out[i]
            if self.sizes.non_blank(unit.start, unit.end) <= TINY_LINES:
                if i > 0 and self.fits(out[i - 1].start, unit.end, limit):
                    _take_tiny(out[i - 1], unit)
                    del out[i]
                    continue
                if i + 1 < len(out) and self.fits(unit.start, out[i + 1].end, limit):
                    _take_tiny(out[i + 1], unit)
                    del out[i]
                    continue
            i += 1
        return out


def _take_tiny(big: _Unit, tiny: _Unit) -> None:
    """Extend ``big`` over the adjacent ``tiny`` unit; ``big`` keeps its owner (and so its symbol)."""
    big.start, big.end = min(big.start, tiny.start), max(big.end, tiny.end)
    if tiny.owner is big.owner:
        big.defs = sorted(big.defs + tiny.defs, key=lambda d: d.top)


def _common_owner(a: _Node | None, b: _Node | None) -> _Node | None:
    """The innermost definition enclosing both owners (``None``: the module)."""
    chain = set()
    node = a
    while node is not None:
        chain.add(id(node))
        node = node.parent
    node = b
    while node is not None and id(node) not in chain:
        node = node.parent
    return node


def _symbol(unit: _Unit) -> str | None:
    """The chunk's symbol path (module docstring): the whole definitions it holds when they make
    up at least half of it or it is top-level code (after its owner when it shows the owner's
    signature), else its owner."""
    owner = unit.owner
    held = sum(d.end - d.top + 1 for d in unit.defs)
    if unit.defs and (owner is None or 2 * held >= unit.end - unit.start + 1):
        shown = [owner.path] if owner is not None and unit.start <= owner.sig <= unit.end else []
        paths = list(dict.fromkeys(shown + [d.path for d in unit.defs]))
        listed = ", ".join(paths[:MAX_SYMBOLS_LISTED])
        return listed + (", …" if len(paths) > MAX_SYMBOLS_LISTED else "")
    return unit.owner.path if unit.owner is not None else None


def _header(unit: _Unit, lines: Sequence[str]) -> str | None:
    """Signature lines of the definitions enclosing ``unit`` whose signature it does not show."""
    out: list[str] = []
    node = unit.owner
    while node is not None and len(out) < MAX_HEADER_LINES:  # the innermost ones: no need to climb further
        if node.sig < unit.start:
            line = lines[node.sig - 1].strip()[:MAX_HEADER_CHARS]
            if line:
                out.append(line)
        node = node.parent
    return "\n".join(reversed(out)) or None


def _emit(units: list[_Unit], lines: Sequence[str], *, path: str, file_type: str, kind: str,
          max_chars: int, headings: list[tuple[int, str]] | None = None,
          with_symbols: bool = True) -> list[Chunk]:
    chunks: list[Chunk] = []
    for unit in units:
        symbol = _symbol(unit) if with_symbols else None
        header = _header(unit, lines) if with_symbols else None
        body = lines[unit.start - 1 : unit.end]
        text = "\n".join(body)
        pieces = [(unit.start, unit.end, text)] if len(text) <= max_chars else cap_pieces(body, unit.start, max_chars)
        for start, end, text in pieces:
            heading = heading_for(headings, start, end) if headings else None
            chunks.append(Chunk(path, start, end, text, file_type, kind, heading, symbol, header))
    return chunks


def symbol_chunks(
    path: str,
    lines: Sequence[str],
    spans: Iterable[SymbolSpan],
    *,
    file_type: str,
    kind: str,
    max_lines: int,
    merge_lines: int,
    max_chars: int,
    problems: list[str] | None = None,
) -> list[Chunk]:
    """Chunk a code file at its definitions (algorithm in the module docstring).

    Args:
        path: repository-relative path (copied into each chunk).
        lines: the file's lines (:func:`rag.ingest.chunk.split_lines`).
        spans: its definitions, in any order (nested ones included).
        file_type, kind: copied into each chunk.
        max_lines: a definition longer than this is split.
        merge_lines: neighbours merge while the merged chunk stays within this many lines.
        max_chars: no chunk's text is longer (long lines are cut by :func:`cap_pieces`).
        problems: when given, :data:`DEEP_NESTING` is appended to it if definitions nested more
            than :data:`MAX_SYMBOL_DEPTH` levels deep were not split out of their enclosing one
            (the chunks still tile the file with exact line ranges).

    Returns:
        Chunks in line order, tiling the file; ``[]`` for an empty or all-blank file.
    """
    chunker = _Chunker(lines, max_lines=max_lines, merge_lines=merge_lines, max_chars=max_chars,
                       overlap_lines=PIECE_OVERLAP_LINES)
    if not chunker.sizes.non_blank(1, len(lines)):
        return []
    roots, capped = _tree(spans, chunker.sizes.stripped)
    if capped and problems is not None:
        problems.append(DEEP_NESTING)
    units = chunker.overlap(chunker.region(1, len(lines), None, roots))
    return _emit(units, lines, path=path, file_type=file_type, kind=kind, max_chars=max_chars)


def section_chunks(
    path: str,
    lines: Sequence[str],
    headings: list[tuple[int, str]],
    *,
    file_type: str,
    kind: str,
    max_lines: int,
    merge_lines: int,
    max_chars: int,
) -> list[Chunk]:
    """Chunk a Markdown file by heading sections (module docstring).

    Args:
        path: repository-relative path.
        lines: the file's lines.
        headings: ``[(line, title)]`` of its headings (:func:`rag.ingest.chunk.markdown_headings`).
        file_type, kind: copied into each chunk.
        max_lines, merge_lines, max_chars: as for :func:`symbol_chunks`.

    Returns:
        Chunks in line order, tiling the file, each with the nearest heading at or above its
        first line (else the first one inside it) as ``heading``; ``[]`` for an all-blank file.
    """
    if not any(line.strip() for line in lines):
        return []
    chunker = _Chunker(lines, max_lines=max_lines, merge_lines=merge_lines, max_chars=max_chars,
                       overlap_lines=PIECE_OVERLAP_LINES)
    starts = sorted({1, *(number for number, _ in headings)})
    units: list[_Unit] = []
    for first, nxt in zip(starts, [*starts[1:], len(lines) + 1]):
        pieces = chunker.split(first, nxt - 1, None)
        if len(pieces) > 1:
            for piece in pieces:
                piece.mergeable = False
        units += pieces
    units = chunker.overlap(chunker.merge(units))
    return _emit(units, lines, path=path, file_type=file_type, kind=kind, max_chars=max_chars,
                 headings=headings, with_symbols=False)


def heading_for(headings: list[tuple[int, str]], start: int, end: int) -> str | None:
    """Nearest heading at or above ``start``; else the first one inside the chunk."""
    best: str | None = None
    for number, title in headings:
        if number <= start:
            best = title
        elif best is None and number <= end:
            return title
        else:
            break
    return best
