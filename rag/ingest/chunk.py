"""Chunking: split one file's text into chunks, at its own boundaries where it has them.

:func:`chunk_file` picks the method per file (DESIGN.md §3 "Chunk"):

* code whose structure parsed cleanly (its definitions given): symbol-boundary chunks,
  :func:`rag.ingest.symbol_chunks.symbol_chunks` — a chunk per function/class/method,
  large ones split at inner boundaries, small neighbours merged;
* Markdown: heading sections, :func:`rag.ingest.symbol_chunks.section_chunks`;
* everything else (config, text, code that did not parse): line windows,
  :func:`chunk_text` — 60-line windows every 40 lines (20 lines of overlap, so a
  passage cut by one window is whole in the next), for Markdown-like types with the
  nearest heading.

All give 1-based inclusive line ranges. No chunk exceeds ``max_chars``: a window that is
too long is cut into fewer lines, and a single line longer than the cap (minified code)
is cut by characters, each piece keeping that line's number.

Line numbering matches git and editors: only ``\\n`` (and ``\\r\\n``) end a
line, so CRLF files give the same numbers as LF files.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rag.ingest.symbol_chunks import SymbolSpan, cap_pieces, heading_for, section_chunks, symbol_chunks
from rag.types import Chunk

__all__ = ["ChunkPolicy", "DEFAULT_CHUNK_POLICY", "CHUNKER_VERSION", "chunk_file", "chunk_text", "split_lines",
           "markdown_headings"]

DEFAULT_WINDOW_LINES = 60
DEFAULT_STEP_LINES = 40
DEFAULT_MAX_CHARS = 3500
DEFAULT_MAX_LINES = 60
DEFAULT_MERGE_LINES = 60
CHUNKER_VERSION = 4
"""Bump when the chunking rules change: an index built by another version is rebuilt
(the engine compares it with :meth:`ChunkPolicy.signature`). 2: symbol and section chunks. 3: an inline
source map's payload is elided from the chunked text (:func:`rag.ingest.prepare.elide_inline_source_map`). 4: a
plural acronym is one index term (``UUIDs``, not ``uui`` + ``ds``: :func:`rag.text.identifier_parts`)."""

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_MARKDOWN_TYPES = frozenset({"md", "markdown", "mdx", "rst"})


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """Chunk sizes.

    Attributes:
        window: lines per line window (default 60).
        step: lines between window starts (default 40; ``step < window`` overlaps).
        max_chars: hard cap on one chunk's text, in characters (default 3,500).
        max_lines: symbol and section chunks: a definition or section longer than this is
            split (default 60).
        merge_lines: symbol and section chunks: small neighbours merge while the merged
            chunk stays within this many lines (default 60; 0 merges only tiny units).

    Example: ``chunk_text(path, text, policy=ChunkPolicy(window=30, step=20))``.

    Raises:
        ValueError: ``window < 1``, ``step`` outside ``1..window``, ``max_chars < 1``,
            ``max_lines < 1`` or ``merge_lines`` outside ``0..max_lines``.
    """

    window: int = DEFAULT_WINDOW_LINES
    step: int = DEFAULT_STEP_LINES
    max_chars: int = DEFAULT_MAX_CHARS
    max_lines: int = DEFAULT_MAX_LINES
    merge_lines: int = DEFAULT_MERGE_LINES

    def __post_init__(self) -> None:
        if (self.window < 1 or not 1 <= self.step <= self.window or self.max_chars < 1 or self.max_lines < 1
                or not 0 <= self.merge_lines <= self.max_lines):
            raise ValueError(
                f"invalid chunk policy: need window >= 1, 1 <= step <= window, max_chars >= 1, max_lines >= 1, "
                f"0 <= merge_lines <= max_lines (got window={self.window}, step={self.step}, "
                f"max_chars={self.max_chars}, max_lines={self.max_lines}, merge_lines={self.merge_lines})"
            )

    def signature(self) -> str:
        """The chunker version and every knob, as text: indexes chunked otherwise are rebuilt."""
        return (f"{CHUNKER_VERSION}:{self.window}/{self.step}/{self.max_chars}/"
                f"{self.max_lines}/{self.merge_lines}")


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
        for start, end, body in cap_pieces(window, begin + 1, policy.max_chars):
            if not body.strip():
                continue
            heading = heading_for(headings, start, end)
            chunks.append(Chunk(path, start, end, body, file_type, kind, heading))
        if begin + policy.window >= total:
            break
        begin += policy.step
    return chunks


def chunk_file(
    path: str,
    text: str,
    *,
    file_type: str,
    kind: str,
    definitions: Iterable[SymbolSpan] | None = None,
    policy: ChunkPolicy = DEFAULT_CHUNK_POLICY,
    problems: list[str] | None = None,
) -> list[Chunk]:
    """Chunk one file by the method that fits it (module docstring).

    Args:
        path: repository-relative path (copied into each chunk).
        text: the file's full text (secrets already redacted).
        file_type: extension-derived type.
        kind: chunk kind (see :class:`rag.types.Chunk`).
        definitions: the file's definitions when its structure parsed cleanly (any
            language: start/end lines, name, kind, parent), an empty list for a parsed file
            without any; ``None`` when it was not parsed or had syntax errors (line windows).
        policy: sizes.
        problems: when given, gets the reason appended when the file is chunked coarser than
            usual (:data:`rag.ingest.symbol_chunks.DEEP_NESTING`: definitions nested past
            :data:`rag.ingest.symbol_chunks.MAX_SYMBOL_DEPTH` levels stay in their enclosing one's chunks).

    Returns:
        Chunks in file order; ``[]`` for an empty or all-blank file.
    """
    if definitions is not None:
        return symbol_chunks(path, split_lines(text), definitions, file_type=file_type, kind=kind,
                             max_lines=policy.max_lines, merge_lines=policy.merge_lines, max_chars=policy.max_chars,
                             problems=problems)
    if file_type in _MARKDOWN_TYPES:
        lines = split_lines(text)
        return section_chunks(path, lines, markdown_headings(lines), file_type=file_type, kind=kind,
                              max_lines=policy.max_lines, merge_lines=policy.merge_lines, max_chars=policy.max_chars)
    return chunk_text(path, text, file_type=file_type, kind=kind, policy=policy)

