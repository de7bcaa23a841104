"""`slackzilla index` loads only what indexing needs (issue 20, "fast to the first answer").

Importing the answer stack, retrieval, numpy or detect-secrets' scanner cost a cold
`slackzilla index` of eslint about 0.5 s of its CPU; these tests pin which modules a run loads,
in a fresh interpreter each (the test process has imported everything already).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("numpy", "detect_secrets", "requests", "openai", "slack_bolt", "slack_sdk", "rag.search", "rag.context",
         "rag.answer", "rag.tools", "rag.sources", "bot.cli.ask", "bot.cli.bench", "bot.cli.serve")
"""Module prefixes an index update without embeddings has no use for (copies are paired without numpy)."""


def _loaded(code: str) -> list[str]:
    """The ``HEAVY`` prefixes loaded after ``code`` ran in a fresh interpreter."""
    probe = (f"{code}\nimport sys, json\n"
             f"print(json.dumps(sorted({{p for p in {HEAVY!r} for m in sys.modules if m == p or m.startswith(p + '.')}})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_resolving_the_index_command_imports_nothing_heavy() -> None:
    assert _loaded("import bot.cli; bot.cli.cli.get_command(None, 'index')") == []


def test_a_full_index_run_loads_neither_retrieval_nor_the_answer_stack(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.js").write_text("export function handle(req) {\n  return req.url;\n}\n")
    (repo / "README.md").write_text("# App\n\nIt handles requests.\n")
    index = tmp_path / "index.sqlite"
    code = ("import sys\nfrom bot.cli import main\n"
            f"sys.argv = ['slackzilla', 'index', '--full', '--repo', {str(repo)!r}, '--index', {str(index)!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n")
    assert _loaded(code) == []


def test_the_cli_still_lists_and_runs_every_command() -> None:
    from click.testing import CliRunner

    from bot.cli import COMMANDS, cli

    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert all(name in result.output for name in COMMANDS)
    assert CliRunner().invoke(cli, ["nope"]).exit_code == 2
    assert sorted(cli.list_commands(None)) == sorted(COMMANDS)
