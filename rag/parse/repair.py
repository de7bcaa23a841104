"""Error recovery for files tree-sitter cannot parse cleanly.

tree-sitter always returns a tree, but its error recovery can swallow the
declarations that follow a syntax error (DESIGN.md §7): ``function f( {``
turns the rest of the file into one ``ERROR`` node in which later functions
look like object methods. Three repairs, applied at most
``DEFAULT_MAX_REPAIR_ROUNDS`` times, each keeping byte offsets and line
numbers unchanged (bytes are replaced by spaces, never removed):

1. **Bare ``&`` in JSX text.** ``<p>Tom & Jerry</p>`` is valid JSX (Babel and
   TypeScript accept it) but tree-sitter-javascript expects an entity after
   ``&``. A lone ``&`` inside an error next to JSX nodes is replaced by a
   space; the repair is kept only if the first error moves forward or
   disappears. This repair alone does not flag the file.
2. **A generic call signature after a line without ``;``** (TypeScript only). In an interface
   or object type, overloads such as ``): Out<S>`` followed by a line ``<P extends X>(p: P): R``
   are valid TypeScript (automatic semicolon insertion), but tree-sitter-typescript 0.23 reads the
   ``<`` as type arguments of the line before and the rest of the file goes wrong (Redux Toolkit's
   ``listenerMiddleware/types.ts``, MobX's ``api/observable.ts``, Immer's ``types-external.ts``).
   The first indentation character of such a line (:data:`_GENERIC_SIGNATURE`, after a line that
   does not end in an opening bracket, an operator or a separator, comments skipped) becomes
   ``;``; kept only if the first error moves forward or disappears, and it does not flag the file.
3. **Blank the broken statement.** From the start of the top-level statement
   holding the first error up to the next line that starts, at column 0, a
   top-level declaration (``function``, ``class``, ``const``, ``export``,
   ``module.exports`` …), the text is blanked and the file re-parsed. The
   records found in the blanked lines are taken from the tree *before* the
   blanking, so nothing that parsed is lost; the file is flagged ``has_error``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node, Tree

__all__ = ["DEFAULT_MAX_REPAIR_ROUNDS", "RepairedParse", "parse_with_repair", "first_error"]

DEFAULT_MAX_REPAIR_ROUNDS = 8
# Lines that may start a new top-level statement after a broken one.
_RESTART_LINE = re.compile(
    rb"^(?:export\s|import[\s{*'\"]|(?:async\s+)?function[\s*]|class\s|const\s|let\s|var\s"
    rb"|module\.exports|exports\.|interface\s|type\s+\w+\s*=|enum\s)",
    re.MULTILINE,
)
# A lone "&" that is neither "&&", "&=" nor an HTML entity.
_LONE_AMPERSAND = re.compile(rb"(?<!&)&(?![&=]|#?[A-Za-z0-9]+;)")
_JSX_NEIGHBOURHOOD = 3
# An indented line opening a generic call or construct signature: "  <P extends X>(", "  new <T>(".
_GENERIC_SIGNATURE = re.compile(rb"^[ \t]+(?:new[ \t]*)?<(?:[A-Za-z_$]|[ \t]*\r?$)", re.MULTILINE)
# The last character of a line after which "<" cannot be read as type arguments of that line.
_NOT_CONTINUED = b"{;,([|&=:?<"


@dataclass(slots=True)
class RepairedParse:
    """Result of :func:`parse_with_repair`.

    Attributes:
        tree: the final tree; its records are valid everywhere except in ``blanked``.
        earlier: ``(tree, first_line, last_line)`` per blanked region: take the
            records of those lines from that tree.
        has_error: the file had syntax errors that needed a blanking repair
            or are still present.
    """

    tree: Tree
    earlier: list[tuple[Tree, int, int]]
    has_error: bool


def first_error(root: Node) -> Node | None:
    """The first ``ERROR`` or ``MISSING`` node in document order, descending into errors."""
    if not root.has_error:
        return None
    node = root
    found: Node | None = None
    while True:
        if node.is_error or node.is_missing:
            found = node
        nxt = next((child for child in node.children if child.has_error or child.is_missing), None)
        if nxt is None:
            return found or (node if node != root else None)
        node = nxt


def _near_jsx(node: Node) -> bool:
    current: Node | None = node
    for _ in range(_JSX_NEIGHBOURHOOD):
        if current is None:
            break
        if current.type.startswith("jsx"):
            return True
        current = current.parent
    neighbours = list(node.children)
    if node.prev_sibling is not None:
        neighbours.append(node.prev_sibling)
    return any(child.type.startswith("jsx") for child in neighbours)


def _jsx_ampersand_fix(buf: bytes, error: Node) -> bytes | None:
    outer = error
    while outer.parent is not None and outer.parent.is_error:
        outer = outer.parent
    if not (_near_jsx(error) or _near_jsx(outer)):
        return None
    start, end = outer.start_byte, outer.end_byte
    segment = buf[start:end]
    fixed = _LONE_AMPERSAND.sub(b" ", segment)
    if fixed == segment:
        return None
    return buf[:start] + fixed + buf[end:]


def _previous_code_char(buf: bytes, at: int) -> bytes:
    """The last character of the nearest line before offset ``at`` that is not blank nor a ``//``
    or ``*`` comment line (``b""`` at the start of the file)."""
    end = at
    while end > 0:
        start = buf.rfind(b"\n", 0, end - 1) + 1
        line = buf[start:end].strip()
        if line and not line.startswith((b"//", b"*", b"/*")):
            return line[-1:]
        end = start
    return b""


def _generic_signature_fix(buf: bytes) -> bytes | None:
    """``buf`` with a ``;`` in place of the first indentation character of every generic call
    signature line that follows a line tree-sitter would continue (module docstring, repair 2);
    ``None`` when there is none."""
    out = bytearray(buf)
    for match in _GENERIC_SIGNATURE.finditer(buf):
        before = _previous_code_char(buf, match.start())
        if before and before not in _NOT_CONTINUED:
            out[match.start()] = ord(";")
    return bytes(out) if out != buf else None


def _top_level_ancestor(root: Node, node: Node) -> Node:
    current = node
    while current.parent is not None and current.parent != root:
        current = current.parent
    return current


def _blank_region(buf: bytes, root: Node, error: Node) -> tuple[int, int] | None:
    """Byte range to blank: from the broken statement's line to the next restart line."""
    statement = _top_level_ancestor(root, error)
    region_start = buf.rfind(b"\n", 0, min(statement.start_byte, error.start_byte)) + 1
    line_end = buf.find(b"\n", error.start_byte)
    if line_end < 0:
        return None
    restart = _RESTART_LINE.search(buf, line_end + 1)
    if restart is None:
        return None
    return region_start, restart.start()


def _blank(buf: bytes, start: int, end: int) -> bytes:
    middle = bytes(b if b in (0x0A, 0x0D) else 0x20 for b in buf[start:end])
    return buf[:start] + middle + buf[end:]


def _if_better(parse: Callable[[bytes], Tree], fixed: bytes | None, error: Node) -> tuple[bytes, Tree] | None:
    """``(fixed, its tree)`` when ``fixed`` parses with its first error after ``error`` or none; else ``None``."""
    if fixed is None:
        return None
    candidate = parse(fixed)
    next_error = first_error(candidate.root_node)
    if next_error is None or next_error.start_byte > error.start_byte:
        return fixed, candidate
    return None


def parse_with_repair(
    parse: Callable[[bytes], Tree], source: bytes, *, max_rounds: int = DEFAULT_MAX_REPAIR_ROUNDS,
    typescript: bool = False,
) -> RepairedParse:
    """Parse ``source`` and repair syntax errors as the module docstring describes.

    Args:
        parse: ``Parser.parse`` of the file's language.
        source: the file's bytes.
        max_rounds: repair attempts before giving up (the file stays flagged).
        typescript: the file is TypeScript without JSX (``.ts``, ``.mts``, ``.cts``): repair 2 applies.

    Returns:
        A :class:`RepairedParse`; never raises on bad code.
    """
    buf = source
    tree = parse(buf)
    earlier: list[tuple[Tree, int, int]] = []
    flagged = False
    last_error_at = -1
    signatures_tried = not typescript
    for _ in range(max_rounds):
        error = first_error(tree.root_node)
        if error is None:
            break
        if not signatures_tried:
            signatures_tried = True
            improved = _if_better(parse, _generic_signature_fix(buf), error)
            if improved is not None:
                buf, tree = improved
                continue
        improved = _if_better(parse, _jsx_ampersand_fix(buf, error), error)
        if improved is not None:
            buf, tree = improved
            continue
        flagged = True
        if error.start_byte <= last_error_at:
            break
        last_error_at = error.start_byte
        region = _blank_region(buf, tree.root_node, error)
        if region is None:
            break
        start, end = region
        first_line = buf.count(b"\n", 0, start) + 1
        last_line = first_line + buf.count(b"\n", start, end) - 1
        earlier.append((tree, first_line, last_line))
        buf = _blank(buf, start, end)
        tree = parse(buf)
    if tree.root_node.has_error:
        flagged = True
    return RepairedParse(tree=tree, earlier=earlier, has_error=flagged)
