"""The per-file ingest step: bytes on disk → a :class:`~rag.store.index.FileUpdate` ready to write.

For one walked file :func:`prepare_file` runs, in order (DESIGN.md §3):

0. a file whose stat is as stored and was stored settled is :class:`Unchanged` unread
   (:func:`stat_unchanged`, git's racy-clean rule);
1. read the bytes (an ``OSError`` → skipped as ``unreadable``);
2. hash them (BLAKE2b-128, hex): the same hash as the indexed version → :class:`Unchanged`;
3. decode (:func:`rag.ingest.walk.decode_text`; not text → skipped as ``binary``); an inline
   source map's payload (the base64 of a ``//# sourceMappingURL=data:…`` last line) is elided
   from the text, its listed sources kept for copy detection (:func:`elide_inline_source_map`);
   a file that is mostly very long lines is data or generated code, not something to read
   (a 150 KB one-line JSON, a bundle without ``.min`` in its name): skipped as
   ``data_file``, or ``minified`` for code types (:func:`is_long_line_file`);
4. redact secrets (:func:`rag.secrets.redact_secrets`), then the literal values of the
   repository's secret files (:func:`secret_literals`);
5. parse the structure (:class:`StructureParser`: JavaScript, TypeScript, Python; definitions
   only for Go, Java, Rust, Ruby; other types get none);
6. classify the kind (``source``, ``documentation``, ``test``, …) and chunk
   (:func:`rag.ingest.chunk.chunk_file`): a file whose structure parsed without errors at its
   definitions (symbol chunks), Markdown by heading sections, the rest in line windows;
7. per chunk, the symbol text that feeds the FTS5 ``symbols`` column (:func:`chunk_symbol_text`).

Parsing comes before chunking because the chunk boundaries are the definitions' lines.
The step is a pure function of its inputs (the file on disk, the indexed row, the
redactor, the parser and the policy), so it can run in worker processes.

It writes nothing: :meth:`rag.engine.Engine.update` walks, loops over this step,
applies the updates in one transaction and reports an :class:`~rag.ingest.stats.IndexStats`.
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

from rag.ingest.chunk import DEFAULT_CHUNK_POLICY, ChunkPolicy, chunk_file, split_lines
from rag.ingest.copies import map_sources
from rag.ingest.symbol_chunks import SymbolSpan
from rag.ingest.walk import classify_kind, decode_text, read_regular_file
from rag.parse.parser import PARSEABLE_EXTENSIONS, CodeParser, FileStructure
from rag.secrets import LiteralRedactor, redact_secrets, secret_file_values
from rag.store.index import FileRow, FileUpdate
from rag.types import Chunk, WalkedFile

__all__ = ["MAX_SECRET_FILE_BYTES", "Prepared", "Unchanged", "Skipped", "StructureParser",
           "chunk_symbol_text", "content_hash", "file_kind", "is_long_line_file", "elide_inline_source_map", "ELIDED_MAP", "prepare_file", "secret_literals",
           "stat_unchanged", "symbol_spans", "RACY_WINDOW_NS"]

MAX_SECRET_FILE_BYTES = 256 * 1024
"""Bytes read from the start of each secret file (``.env`` …) when collecting its values."""


LONG_LINE_CHARS = 1000
"""A line longer than this is not written by hand (DESIGN.md's minified threshold)."""
LONG_LINE_FILE_MIN_CHARS = 20_000
"""Files shorter than this are always read: a short file with one long line is still small."""
LONG_LINE_SHARE = 0.5
"""A file whose long lines hold more than this share of its characters is data."""
_CODE_TYPES = frozenset({"js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts", "css", "scss", "py"})


_INLINE_MAP = re.compile(r"(?P<head>\s*(?://|/\*)\s*[#@]\s*sourceMappingURL=data:[^,\s]*,)(?P<payload>\S+?)"
                         r"(?P<tail>\s*\*/)?\s*$")
ELIDED_MAP = "…"
"""What an inline source map's payload becomes in the indexed text (:func:`elide_inline_source_map`)."""


def elide_inline_source_map(text: str) -> tuple[str, str | None]:
    """``(text, comment)``: ``text`` with the payload of its inline source map elided, and the original
    ``//# sourceMappingURL=data:…`` (or CSS ``/*# … */``) comment; ``(text, None)`` without one.

    Transpilers (Babel, TypeScript with ``inlineSourceMap``, esbuild) end a compiled file with its
    source map as a base64 ``data:`` URL on one line, often most of the file: superagent 10.1.1's
    ``lib/node/index.js`` is 70% map, so the whole module was skipped as minified
    (:func:`is_long_line_file`), and in a smaller file the base64 was indexed as words and embedded.
    Only the last non-blank line is looked at (where the comment belongs); its payload becomes
    :data:`ELIDED_MAP`, so the line numbers stay the file's. The comment is returned for
    :func:`rag.ingest.copies.map_sources`.
    """
    end = len(text.rstrip())
    start = text.rfind("\n", 0, end) + 1
    match = _INLINE_MAP.match(text, start, end)
    if match is None:
        return text, None
    line = text[start:end]
    return text[:start] + match.group("head") + ELIDED_MAP + (match.group("tail") or "") + text[end:], line


def is_long_line_file(text: str) -> bool:
    """Whether ``text`` is at least :data:`LONG_LINE_FILE_MIN_CHARS` characters and more than
    :data:`LONG_LINE_SHARE` of them sit on lines longer than :data:`LONG_LINE_CHARS`.

    Chunked, such a file gives dozens of chunks of one line each that no question
    is about (a 150 KB one-line JSON gave 43), and they crowd out real matches.
    """
    if len(text) < LONG_LINE_FILE_MIN_CHARS:
        return False
    long_chars = sum(len(line) for line in text.split("\n") if len(line) > LONG_LINE_CHARS)
    return long_chars > LONG_LINE_SHARE * len(text)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A new or changed file, ready for :meth:`rag.store.index.Index.apply`.

    Attributes:
        update: the file's row, chunks (text redacted), structure and chunk symbols.
        parse_seconds: wall time spent parsing its structure (0.0 for unparsed types).
        problems: why the file is indexed less finely than usual, :data:`rag.ingest.stats.DEGRADED_REASONS`
            (``deep_nesting``: definitions nested past :data:`rag.ingest.symbol_chunks.MAX_SYMBOL_DEPTH`
            levels are chunked as part of their enclosing one); ``()`` normally.
    """

    update: FileUpdate
    parse_seconds: float = 0.0
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unchanged:
    """The file is as indexed: nothing to write (it stays indexed).

    ``settled`` is set when the file had to be read to tell (its stored stat was not trusted,
    :func:`stat_unchanged`) and the stat it has now can be trusted next time: the update stores it
    (:meth:`rag.store.index.Index.refresh_stats`), so the file is not read again while it stays as it is.
    """

    settled: WalkedFile | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """The file is not indexed; ``reason`` is an :attr:`IndexStats.skipped` key
    (``unreadable``, ``binary``, ``data_file``, ``minified``)."""

    reason: str


PrepareResult = Prepared | Unchanged | Skipped


def content_hash(data: bytes) -> str:
    """Content hash of a file: BLAKE2b with a 16-byte digest, as 32 hex characters."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def secret_literals(repo_root: Path, secret_files: Sequence[str]) -> LiteralRedactor:
    """A redactor for the values found in the repository's secret files (never indexed themselves).

    Args:
        repo_root: repository root.
        secret_files: repository-relative paths of the secret files the walker found
            (:attr:`rag.types.WalkReport.secret_files`).

    Returns:
        A :class:`rag.secrets.LiteralRedactor` over the values of
        :func:`rag.secrets.secret_file_values` of the first :data:`MAX_SECRET_FILE_BYTES`
        bytes of each file; unreadable and undecodable files are passed over.
    """
    values: set[str] = set()
    for rel in secret_files:
        try:
            text = decode_text(read_regular_file(repo_root / rel, MAX_SECRET_FILE_BYTES))
        except OSError:
            continue
        if text:
            values |= secret_file_values(text)
    return LiteralRedactor(values)


class StructureParser:
    """Parses the structure of source files for the index; types without a grammar get none.

    Holds one :class:`rag.parse.parser.CodeParser`, built on first use; like it, an
    instance is not safe to share between threads (the engine serialises updates).
    """

    def __init__(self) -> None:
        self._parser: CodeParser | None = None

    def structure(self, path: str, file_type: str, text: str) -> FileStructure | None:
        """The structure of one file; ``None`` unless ``file_type`` is in
        :data:`rag.parse.parser.PARSEABLE_EXTENSIONS`."""
        if file_type not in PARSEABLE_EXTENSIONS:
            return None
        if self._parser is None:
            self._parser = CodeParser()
        return self._parser.parse(path, text)

    parse = structure
    """The step's name for :meth:`structure` (parse before chunking)."""

    @staticmethod
    def chunk_symbols(structure: FileStructure, chunks: Sequence[Chunk]) -> list[str]:
        """Per chunk, its FTS5 ``symbols`` text (:func:`chunk_symbol_text`)."""
        return chunk_symbol_text(structure, chunks)


def symbol_spans(structure: FileStructure | None) -> list[SymbolSpan] | None:
    """The definitions the chunker cuts at: ``None`` (line windows) without a structure or
    when the file had syntax errors (its definitions may be cut short), else every named
    definition as a :class:`~rag.ingest.symbol_chunks.SymbolSpan` (possibly none)."""
    if structure is None or structure.has_error:
        return None
    return [SymbolSpan(d.start, d.end, d.name, d.kind, d.parent) for d in structure.definitions if d.name]


def chunk_symbol_text(structure: FileStructure, chunks: Sequence[Chunk]) -> list[str]:
    """Per chunk, the text of its FTS5 ``symbols`` column: the chunk's symbol path, then the
    names of the definitions that start inside it, the env vars it reads and the route paths
    it declares (in that order, each in the structure's order), space-separated.

    The names are found by binary search over their lines, so the cost grows with chunks + names
    rather than their product: React DOM 18.3.1's ``react-dom.development.js`` (1 MB, 729 chunks,
    1,173 names) 31 → 1.5 ms; the 10,517 parseable files of eslint, fastify and 25 npm packages
    2.1 → 0.7 s on one core, the same text for every chunk.
    """
    named = [(d.start, d.name) for d in structure.definitions if d.name]
    named += [(e.line, e.name) for e in structure.env_vars]
    named += [(r.line, r.path) for r in structure.routes if r.path]
    marks = sorted((line, order, name) for order, (line, name) in enumerate(named))
    lines = [line for line, _, _ in marks]
    out = []
    for c in chunks:
        inside = sorted(marks[bisect_left(lines, c.start):bisect_right(lines, c.end)], key=itemgetter(1))
        out.append(" ".join([*([c.symbol] if c.symbol else []), *(name for _, _, name in inside)]))
    return out


_POSIX = os.name == "posix"
RACY_WINDOW_NS = 2_000_000_000
"""A stored stat is trusted only for a file last changed at least this long (2 s, in nanoseconds) before the walk
that took it: a change in the same timestamp tick as that walk could leave the stat unchanged (git's "racy clean"
entries, Documentation/technical/racy-git.txt; 2 s covers the coarsest common timestamps, FAT's)."""


def stat_unchanged(wf: WalkedFile, row: FileRow) -> bool:
    """Whether ``wf`` is the file ``row`` was read from, told by its stat alone (no read, no hash).

    As git does for its index (``ie_match_stat``): size, mtime, inode change time and inode number all
    as stored, and the file was not "racily clean" when stored (changed less than :data:`RACY_WINDOW_NS`
    before the walk that stored it; such files are read and hashed every time, as all files were
    before). Any write, and any ``utime`` that would hide one, moves the inode change time, which no user
    can set back; a file replaced by another (``git checkout``, an editor's save-as-rename) has another
    inode. Rows without a stored stat (written before migration m010, or by hand) are never trusted, nor is
    any stat off POSIX systems (Windows' ``st_ctime`` is the creation time, which a write does not move).
    """
    if not wf.ctime_ns or (row.size, row.mtime_ns, row.ctime_ns, row.ino) != (wf.size, wf.mtime_ns, wf.ctime_ns, wf.ino):
        return False
    return _settled(row.ctime_ns, row.mtime_ns, row.seen_ns)


def _settled(ctime_ns: int, mtime_ns: int, seen_ns: int) -> bool:
    """Whether a stat taken by the walk that began at ``seen_ns`` can be trusted later: on POSIX, with a known
    inode change time and walk time, and the file last changed :data:`RACY_WINDOW_NS` or more before that walk."""
    return _POSIX and ctime_ns > 0 and seen_ns > 0 and max(ctime_ns, mtime_ns) < seen_ns - RACY_WINDOW_NS


TYPE_DEFINITIONS = frozenset({"type", "interface"})
"""Definition kinds that declare types only (TypeScript's ``type`` aliases and ``interface`` declarations)."""


_DECLARATION_ONLY_LINE = re.compile(
    r"\s*(?:$|//|/\*|\*|import\b|(?:export\s+)?declare\b|export\s+(?:type\b|\*|\{)|[}\])](?:\s*from\s*['\"][^'\"]*['\"])?;?\s*$"
    r"|(?:type\s+)?[\w$]+(?:\s+as\s+[\w$]+)?,?\s*$)")
"""A line outside the type definitions that runs nothing: blank, a comment, an import, an ambient
(``declare``) declaration, a type-only or re-export statement, a closing bracket, a name of a
multi-line import or export list."""


def file_kind(path: str, structure: FileStructure | None, text: str = "") -> str:
    """:func:`rag.ingest.walk.classify_kind` of ``path``, except that a TypeScript source that only
    declares types is ``types``, as declaration files are: it says what the options are, not what the
    code does with them (``src/types.ts`` of @tanstack/query-core 5.59: 85 types and interfaces).
    Only types means: its definitions are all types and interfaces (:data:`TYPE_DEFINITIONS`), and
    every line of ``text`` outside them runs nothing (:data:`_DECLARATION_ONLY_LINE`): the parser
    records no definition for a top-level ``const`` or statement."""
    kind = classify_kind(path)
    if (kind != "source" or structure is None or structure.language not in ("typescript", "tsx")
            or not structure.definitions or any(d.kind not in TYPE_DEFINITIONS for d in structure.definitions)):
        return kind
    inside = set()
    for d in structure.definitions:
        inside.update(range(d.start, d.end + 1))
    for number, line in enumerate(text.split("\n"), 1):
        if number not in inside and not _DECLARATION_ONLY_LINE.match(line):
            return kind
    return "types"


def prepare_file(
    wf: WalkedFile,
    *,
    indexed: FileRow | None,
    literals: LiteralRedactor,
    parser: StructureParser,
    chunk_policy: ChunkPolicy = DEFAULT_CHUNK_POLICY,
) -> PrepareResult:
    """Run the ingest step (module docstring) for one walked file.

    Args:
        wf: the file as the walker found it (path, absolute path, size, mtime, type).
        indexed: what the index holds for this path (``None``: new, or a full rebuild).
        literals: redactor of the secret-file values (:func:`secret_literals`).
        parser: the structure parser of this update.
        chunk_policy: chunking knobs.

    Returns:
        :class:`Prepared` (new or changed; its ``problems`` say when it is chunked coarser than
        usual), :class:`Unchanged` (same content hash) or
        :class:`Skipped` (``unreadable``: reading failed; ``binary``: not decodable as text;
        ``data_file``/``minified``: mostly very long lines).
        Never raises for a bad file; a parser failure propagates.
    """
    if indexed is not None and stat_unchanged(wf, indexed):
        return Unchanged()
    try:
        data = read_regular_file(wf.os_path)  # never through a link or into a FIFO swapped in since the walk
    except OSError:
        return Skipped("unreadable")
    digest = content_hash(data)
    if indexed is not None and indexed.hash == digest:
        return Unchanged(wf if _settled(wf.ctime_ns, wf.mtime_ns, wf.seen_ns) else None)
    text = decode_text(data)
    if text is None:
        return Skipped("binary")
    text, inline_map = elide_inline_source_map(text)
    if is_long_line_file(text):
        return Skipped("minified" if wf.file_type in _CODE_TYPES else "data_file")
    text, redactions = redact_secrets(text, file_type=wf.file_type)
    text, literal_hits = literals.redact(text)
    redactions += literal_hits
    t0 = time.perf_counter()
    structure = parser.parse(wf.path, wf.file_type, text)
    parse_seconds = time.perf_counter() - t0
    kind = file_kind(wf.path, structure, text)
    problems: list[str] = []
    chunks = chunk_file(wf.path, text, file_type=wf.file_type, kind=kind, definitions=symbol_spans(structure),
                        policy=chunk_policy, problems=problems)
    chunk_symbols = chunk_symbol_text(structure, chunks) if structure is not None else None
    update = FileUpdate(wf.path, wf.size, wf.mtime_ns, digest, wf.file_type, kind, len(split_lines(text)),
                        redactions, chunks, structure.to_json() if structure is not None else None, chunk_symbols,
                        ctime_ns=wf.ctime_ns, ino=wf.ino, seen_ns=wf.seen_ns,
                        map_sources=map_sources(wf.path, inline_map, None) if inline_map is not None else None)
    return Prepared(update, parse_seconds, tuple(problems))
