"""The outcome of one index update: :class:`IndexStats` (the ``slackzilla index --json`` shape)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["IndexStats"]


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

    def skip(self, reason: str) -> None:
        """Count one more file not indexed for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def to_json(self) -> dict:
        """The fields as a JSON-ready dict, in field order; seconds rounded to 4 decimals."""
        data = asdict(self)
        data["seconds"] = round(self.seconds, 4)
        data["parse_seconds"] = round(self.parse_seconds, 4)
        return data
