"""What is running: the installed ``slackzilla`` version and the latest CHANGELOG section (``getReleaseInfo``, ``/api/release``)."""
from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

__all__ = ["DEFAULT_CHANGELOG", "PACKAGE_NAME", "latest_changelog_section", "package_version", "release_info"]

PACKAGE_NAME = "slackzilla"
DEFAULT_CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"


_CHANGELOG_HEADING = re.compile(r"^##\s+(?!#)(.+?)\s*$", re.MULTILINE)


def latest_changelog_section(text: str) -> dict | None:
    """The first ``## `` section of a Keep-a-Changelog file: ``{"title", "body"}`` or ``None``.

    A section headed ``Unreleased`` with an empty body is skipped.
    """
    matches = list(_CHANGELOG_HEADING.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end():end].strip()
        title = match.group(1).strip()
        if "unreleased" in title.lower() and not body:
            continue
        return {"title": title, "body": body}
    return None


def package_version() -> str:
    """The installed ``slackzilla`` version from package metadata (``0.0.0+unknown`` if not installed)."""
    try:
        return importlib.metadata.version(PACKAGE_NAME)
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def release_info(*, changelog: Path = DEFAULT_CHANGELOG) -> dict:
    """``{"name", "version", "changelog": {"title", "body"} | None}`` of the running bot.

    The version comes from the installed package metadata; the changelog section
    from ``changelog`` (default: ``CHANGELOG.md`` of the project checkout next to
    this package), ``None`` when that file is not there (e.g. a wheel install).
    """
    try:
        section = latest_changelog_section(changelog.read_text(encoding="utf-8"))
    except OSError:
        section = None
    return {"name": PACKAGE_NAME, "version": package_version(), "changelog": section}
