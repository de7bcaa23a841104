"""Chunking: split one file's text into overlapping line windows.

Defaults follow DESIGN.md §3: 60-line windows every 40 lines (20 lines of
overlap, so a function cut by one window is whole in the next), 1-based
inclusive line ranges, and for Markdown the nearest heading. No chunk exceeds
``max_chars``: a window that is too long is cut into fewer lines, and a single
line longer than the cap (minified code) is cut by characters, each piece
keeping that line's number.

Line numbering matches git and editors: only ``\\n`` (and ``\\r\\n``) end a
line, so CRLF files give the same numbers as LF files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from rag.types import Chunk

__all__ = ["ChunkPolicy", "DEFAULT_CHUNK_POLICY", "chunk_text", "split_lines", "markdown_headings"]

DEFAULT_WINDOW_LINES = 60
DEFAULT_STEP_LINES = 40
DEFAULT_MAX_CHARS = 3500

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_MARKDOWN_TYPES = frozenset({"md", "markdown", "mdx", "rst"})


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """Chunk sizes.

    Attributes:
        window: lines per chunk (default 60).
        step: lines between chunk starts (default 40; ``step < window`` overlaps).
        max_chars: hard cap on one chunk's text, in characters (default 3,500).

    Example: ``chunk_text(path, text, policy=ChunkPolicy(window=30, step=20))``.

    Raises:
        ValueError: ``window < 1``, ``step`` outside ``1..window`` or ``max_chars < 1``.
    """

    window: int = DEFAULT_WINDOW_LINES
    step: int = DEFAULT_STEP_LINES
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        if self.window < 1 or not 1 <= self.step <= self.window or self.max_chars < 1:
            raise ValueError(
                f"invalid chunk policy: need window >= 1, 1 <= step <= window, max_chars >= 1 "
                f"(got window={self.window}, step={self.step}, max_chars={self.max_chars})"
            )


DEFAULT_CHUNK_POLICY = ChunkPolicy()


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` as git counts them (``\\n`` and ``\\r\\n`` end a line)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def markdown_headings(lines: list[str]) -> list[tuple[int, str]]:
    """``[(line_number, heading_text)]`` of ATX headings, skipping fenced code blocks."""
    out: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fenced = not fenced
            continue
        if not fenced:
            match = _MD_HEADING.match(line)
            if match:
                out.append((number, match.group(2)))
    return out


def _pieces(lines: list[str], first: int, max_chars: int) -> list[tuple[int, int, str]]:
    """Cut the lines starting at line ``first`` into (start, end, text) pieces ≤ max_chars."""
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
        if buf and size + len(line) + 1 > max_chars:
            out.append((start, number - 1, "\n".join(buf)))
            buf, size, start = [], 0, number
        buf.append(line)
        size += len(line) + 1
    if buf:
        out.append((start, first + len(lines) - 1, "\n".join(buf)))
    return out


def chunk_text(
    path: str,
    text: str,
    *,
    file_type: str,
    kind: str,
    policy: ChunkPolicy = DEFAULT_CHUNK_POLICY,
) -> list[Chunk]:
    """Split ``text`` into chunks.

    Args:
        path: repository-relative path (copied into each chunk).
        text: the file's full text (secrets already redacted).
        file_type: extension-derived type; ``md`` files get headings.
        kind: chunk kind (see :class:`rag.types.Chunk`).
        policy: window, step and character cap.

    Returns:
        Chunks in file order; empty for an empty or all-blank file. Windows
        that contain only blank lines are dropped.
    """
    lines = split_lines(text)
    if not any(line.strip() for line in lines):
        return []
    headings = markdown_headings(lines) if file_type in _MARKDOWN_TYPES else []
    chunks: list[Chunk] = []
    total = len(lines)
    begin = 0
    while True:
        window = lines[begin : begin + policy.window]
        for start, end, body in _pieces(window, begin + 1, policy.max_chars):
            if not body.strip():
                continue
            heading = _heading_for(headings, start, end)
            chunks.append(Chunk(path, start, end, body, file_type, kind, heading))
        if begin + policy.window >= total:
            break
        begin += policy.step
    return chunks


def _heading_for(headings: list[tuple[int, str]], start: int, end: int) -> str | None:
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
