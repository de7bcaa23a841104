"""Records that cross module boundaries inside the engine and out of it.

All line numbers are 1-based and inclusive. All paths are repository-relative
POSIX paths (``lib/router/index.js``), never absolute, never with ``./``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["WalkedFile", "WalkReport", "Chunk", "Source", "ImageHit"]


MAX_PROBLEMS = 50
"""Odd files listed by path per walk or update (the counts by reason are complete)."""


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """One text file accepted by the walker.

    Attributes:
        path: repository-relative POSIX path.
        os_path: absolute path on disk, as ``os.scandir`` gave it (a ``str``: building a
            :class:`~pathlib.Path` per file was a third of a walk's time); :attr:`abs_path` is it as a ``Path``.
        size: size in bytes (``stat().st_size``).
        mtime_ns: modification time in nanoseconds (``stat().st_mtime_ns``).
        file_type: lower-case extension without the dot (``js``, ``md``), or the
            file name for extension-less known files (``dockerfile``).
        ctime_ns: inode change time in nanoseconds (``stat().st_ctime_ns``; any write or
            ``utime`` moves it, and no user can set it back); 0 when unknown.
        ino: inode number (``stat().st_ino``; a file replaced by another has another); 0 when unknown.
        seen_ns: wall-clock time (``time.time_ns()``) at the start of the walk that took this stat;
            0 when unknown. With the three above it tells an unchanged file without reading it
            (:func:`rag.ingest.prepare.stat_unchanged`).
    """

    path: str
    os_path: str
    size: int
    mtime_ns: int
    file_type: str
    ctime_ns: int = 0
    ino: int = 0
    seen_ns: int = 0

    @property
    def abs_path(self) -> Path:
        """The absolute path on disk as a :class:`~pathlib.Path` (made on each call)."""
        return Path(self.os_path)


@dataclass(slots=True)
class WalkReport:
    """What one walk found.

    Attributes:
        files: accepted text files, sorted by path.
        images: repository-relative paths of image files (collected by path only).
        skipped: reason -> number of files or directories skipped for it
            (``ignored``, ``secret``, ``lockfile``, ``skipped_dir``, ``too_large``,
            ``symlink``, ``unsupported_type``, ``max_files``, ``max_total_bytes``,
            ``max_depth``, ``unreadable``, ``virtualenv``, ``undecodable_name``, ``control_character_name`` …).
        secret_files: repository-relative paths of the secret files skipped (``.env`` …);
            never indexed, but their values are redacted wherever else they appear.
        problems: ``(path, reason)`` of the odd files among the skipped ones (a name that
            is not UTF-8, shown with escapes; a FIFO, socket or device; an unreadable entry;
            a file over the size cap), at most :data:`MAX_PROBLEMS`, in walk order.
    """

    files: list[WalkedFile] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    secret_files: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A contiguous span of one file, the unit of indexing and retrieval.

    Attributes:
        path: repository-relative POSIX path.
        start: first line (1-based, inclusive).
        end: last line (1-based, inclusive).
        text: the chunk's text, secrets already redacted.
        file_type: the file's type (see ``WalkedFile.file_type``).
        kind: ``documentation``, ``source``, ``config``, ``example``, ``test`` or ``types``.
        heading: nearest Markdown heading above or inside the chunk, or ``None``.
        symbol: the symbol path of a code chunk (``proto.handle``, ``Router.get, Router.post``:
            the definition enclosing it, or the whole ones it holds; see
            :mod:`rag.ingest.symbol_chunks`), or ``None``.
        header: the signature lines of the definitions enclosing the chunk that it does not
            show itself (``function handle(req, res, out) {``), or ``None``. Indexed and
            embedded with the chunk, never part of ``text`` or of the cited lines.
    """

    path: str
    start: int
    end: int
    text: str
    file_type: str
    kind: str
    heading: str | None = None
    symbol: str | None = None
    header: str | None = None


@dataclass(slots=True)
class Source:
    """One retrieved chunk with its relevance score.

    ``score`` is comparable only within one result list (higher is better).

    ``repo`` names the repository the chunk comes from (:attr:`rag.engine.Engine.name`;
    ``None`` when unknown). In a list fused from several repositories
    (:mod:`rag.federation`) ``path`` is qualified as ``<repo>/<path>`` so that it is
    unique and citable, and ``repo_path`` keeps the path inside the repository;
    elsewhere ``repo_path`` is ``None`` and ``path`` is that path. Documents
    (:mod:`rag.documents`) have the path ``doc:<id>`` and their title as ``heading``.
    """

    path: str
    start: int
    end: int
    score: float
    file_type: str
    kind: str
    text: str
    heading: str | None = None
    focus: int | None = None
    repo: str | None = None
    repo_path: str | None = None
    symbol: str | None = None

    @property
    def relative_path(self) -> str:
        """The path inside its repository (``repo_path`` when ``path`` is qualified, else ``path``)."""
        return self.repo_path if self.repo_path is not None else self.path

    def to_json(self) -> dict:
        """The CLI/API shape: ``{"repo", "path", "start", "end", "score", "type", "kind", "heading", "symbol"}``.

        ``type`` is the file type (``js``, ``md``); ``kind`` what the file is (``source``,
        ``documentation``, ``test``, ``example``, ``config``, ``types``: what ``--type`` filters on).

        ``path`` is the path inside the repository ``repo`` (see :attr:`relative_path`).
        ``symbol`` is the chunk's symbol path (:attr:`Chunk.symbol`), ``None`` for chunks
        that are not code at symbol boundaries. ``focus`` (not in the JSON) is the line
        inside the chunk that best matches the question, used to centre snippets; ``None``
        when unknown.
        """
        return {
            "repo": self.repo,
            "path": self.relative_path,
            "start": self.start,
            "end": self.end,
            "score": round(self.score, 4),
            "type": self.file_type,
            "kind": self.kind,
            "heading": self.heading,
            "symbol": self.symbol,
        }


@dataclass(frozen=True, slots=True)
class ImageHit:
    """An image file whose path matched the question: ``{"path", "url", "score"}``."""

    path: str
    url: str | None
    score: float

    def to_json(self) -> dict:
        return {"path": self.path, "url": self.url, "score": round(self.score, 4)}
