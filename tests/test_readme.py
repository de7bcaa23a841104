"""The README stays true: its command table is the registry's, its quick start is what CI runs."""
from __future__ import annotations

import re
from pathlib import Path

from commands import build_registry

ROOT = Path(__file__).resolve().parents[1]


def test_readme_command_table_matches_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- commands:start -->\n(.*?)\n<!-- commands:end -->", readme, re.S)
    assert match, "README lacks the generated commands section"
    assert match.group(1).strip() == build_registry().markdown_table().strip()


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    test_cmd = next(c for c in commands if "pytest" in c)
    assert test_cmd in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
