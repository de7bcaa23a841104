"""A repository's include/exclude patterns: which walked files one configured repository indexes.

    scope = PathScope(include=("src/**", "docs/**"), exclude=("**/*.test.js",))
    scope.selects("src/app.js")        # True
    scope.apply(report)                # drops the others from a WalkReport, counted as "out_of_scope"

Patterns use git's wildmatch syntax through ``pathspec.GitIgnoreSpec`` (the library the
walker already uses for ``.gitignore``), matched against repository-relative POSIX paths:
a file is indexed when it matches some ``include`` pattern (or ``include`` is empty) and
no ``exclude`` pattern. The walker's own rules (ignore files, secret files, caps) are
applied first; a scope only narrows what they accepted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pathspec import GitIgnoreSpec

from rag.types import WalkReport

__all__ = ["PathScope", "OUT_OF_SCOPE"]

OUT_OF_SCOPE = "out_of_scope"
"""The ``WalkReport.skipped`` reason counted for files a scope leaves out."""


@dataclass(frozen=True)
class PathScope:
    """Include/exclude patterns (git wildmatch syntax) of one repository.

    Attributes:
        include: patterns a file must match one of (empty: every file).
        exclude: patterns a file must match none of.

    Raises:
        ValueError: a pattern that is not a string or does not compile (the message names it).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    _include: GitIgnoreSpec | None = field(default=None, init=False, repr=False, compare=False)
    _exclude: GitIgnoreSpec | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("include", "exclude"):
            patterns = tuple(getattr(self, name))
            for pattern in patterns:
                if not isinstance(pattern, str) or not pattern.strip():
                    raise ValueError(f"{name}: every pattern must be a non-empty string, got {pattern!r}")
            try:
                spec = GitIgnoreSpec.from_lines(patterns) if patterns else None
            except Exception as exc:  # pathspec raises its own GitWildMatchPatternError (a ValueError subclass)
                raise ValueError(f"{name}: {exc}") from None
            object.__setattr__(self, name, patterns)
            object.__setattr__(self, f"_{name}", spec)

    @property
    def empty(self) -> bool:
        """Whether the scope selects every file."""
        return not self.include and not self.exclude

    def selects(self, path: str) -> bool:
        """Whether the repository-relative POSIX ``path`` is inside the scope."""
        if self._include is not None and not self._include.match_file(path):
            return False
        return not (self._exclude is not None and self._exclude.match_file(path))

    def apply(self, report: WalkReport) -> WalkReport:
        """Drop the files and images outside the scope from ``report`` (in place; returned), counting
        the files as ``skipped["out_of_scope"]``."""
        if self.empty:
            return report
        kept = [f for f in report.files if self.selects(f.path)]
        dropped = len(report.files) - len(kept)
        report.files = kept
        report.images = [p for p in report.images if self.selects(p)]
        if dropped:
            report.skipped[OUT_OF_SCOPE] = report.skipped.get(OUT_OF_SCOPE, 0) + dropped
        return report
