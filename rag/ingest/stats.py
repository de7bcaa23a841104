"""The outcome of one index update: :class:`IndexStats` (the ``slackzilla index --json`` shape)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from rag.ingest.symbol_chunks import DEEP_NESTING
from rag.types import MAX_PROBLEMS

__all__ = ["IndexStats", "DEGRADED_REASONS"]

DEGRADED_REASONS = frozenset({DEEP_NESTING})
"""Problems of files that are indexed, only chunked coarser than usual (:meth:`IndexStats.degraded`);
every other reason in ``problems`` is a file not indexed."""


@dataclass(slots=True)
class IndexStats:
    """Outcome of one update (the ``slackzilla index --json`` shape plus extras).

    Attributes:
        files, chunks: totals in the index after the update.
        added, changed, removed: files by change type in this update.
        skipped: reason → count (walker reasons plus ``binary``, ``unreadable``).
        seconds: wall time of the update.
        redactions: secrets redacted in the files (re)read by this update.
        generation: index generation after the update.
        parse_seconds: time spent parsing code structure (part of ``seconds``).
        copies: indexed files recorded as copies of another indexed file (compiled output,
            declarations, source-mapped bundles, ``PKG-INFO``, near-duplicates:
            :mod:`rag.ingest.copies`); retrieval ranks them below their sources.
        problems: ``{"path", "reason"}`` of the odd files not indexed (the walk's, plus
            ``unreadable``, ``binary``, ``data_file``, ``minified`` found while reading), and of
            the files this update indexed coarser than usual (a reason of :data:`DEGRADED_REASONS`:
            ``deep_nesting``), at most :data:`rag.types.MAX_PROBLEMS`.
    """

    files: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    redactions: int = 0
    generation: int = 0
    parse_seconds: float = 0.0
    copies: int = 0
    problems: list[dict] = field(default_factory=list)

    def skip(self, reason: str, path: str | None = None) -> None:
        """Count one more file not indexed for ``reason``; with ``path``, list it among the problems."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if path is not None and len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"path": path, "reason": reason})

    def degraded(self, reason: str, path: str) -> None:
        """List ``path``, indexed but chunked coarser than usual for ``reason`` (one of
        :data:`DEGRADED_REASONS`), among the problems; it is not counted in ``skipped``."""
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"path": path, "reason": reason})

    def to_json(self) -> dict:
        """The fields as a JSON-ready dict, in field order; seconds rounded to 4 decimals."""
        data = asdict(self)
        data["seconds"] = round(self.seconds, 4)
        data["parse_seconds"] = round(self.parse_seconds, 4)
        return data
