"""bot.observability.release: the running bot's version and latest CHANGELOG section."""
from __future__ import annotations

from bot.observability.release import release_info


def test_release_info_reads_the_latest_changelog_section(tmp_path):
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2025-01-02\n### Fixed\n- a bug\n\n"
                         "## [1.1.0] - 2024-12-01\n- older\n", encoding="utf-8")
    info = release_info(changelog=changelog)
    assert info["changelog"] == {"title": "[1.2.0] - 2025-01-02", "body": "### Fixed\n- a bug"}
    assert release_info(changelog=tmp_path / "missing.md")["changelog"] is None
