"""`slackzilla index` and `ask` on a tree holding every hostile indexing case at once (issue 14).

Names that are not UTF-8, a FIFO named .gitignore, a BOM-prefixed .gitignore, a negation inside
a built-in skipped directory, a UTF-16 file, a one-line JSON data file, a virtual environment, a
FIFO among the files and generated code nesting 2,000 functions: the run completes, names each odd
file with its reason, and a question about an ordinary file is answered from it. An empty
repository says why nothing is indexed.
"""
from __future__ import annotations

import codecs
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli


def _run(*args: str | Path):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "billing.js").write_text(
        "// chargeInvoice retries a declined card three times before giving up.\n"
        "export function chargeInvoice(invoice) {\n  return retryCharge(invoice, 3);\n}\n")
    fd = os.open(os.fsencode(root / "src") + b"/caf\xe9.js", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"export const menu = 1;\n")
    os.close(fd)
    (root / "lib").mkdir()
    os.mkfifo(root / "lib" / ".gitignore")
    os.mkfifo(root / "src" / "pipe.js")
    (root / ".gitignore").write_bytes(codecs.BOM_UTF8 + b"secrets/\n!vendor/patched-http/\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "prod.js").write_text("const k = 1;\n")
    (root / "vendor" / "patched-http").mkdir(parents=True)
    (root / "vendor" / "patched-http" / "index.js").write_text("module.exports = function patchedRequest() {};\n")
    (root / "vendor" / "other.js").write_text("x\n")
    (root / "NOTES.md").write_bytes(codecs.BOM_UTF16_LE + "# Notes\nRefunds are issued within 5 days.\n".encode("utf-16-le"))
    (root / "data").mkdir()
    (root / "data" / "cities.json").write_text(json.dumps([{"id": i, "name": f"city-{i}"} for i in range(6000)]))
    (root / "env").mkdir()
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "env" / "lib.py").write_text("x = 1\n")
    (root / "gen").mkdir()  # indexed, in coarser chunks past 100 levels (RecursionError before)
    (root / "gen" / "nested.js").write_text("".join(f"function f{i}() {{\n" for i in range(2000)) + "}\n" * 2000)
    return root


def test_index_completes_and_names_each_odd_file_by_reason(hostile: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx.sqlite"
    result = _run("index", "--repo", hostile, "--index", index, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    reasons = {p["reason"]: p["path"] for p in data["problems"]}
    assert reasons["undecodable_name"] == "src/caf\\xe9.js"
    assert reasons["special_file"] in ("lib/.gitignore", "src/pipe.js")
    assert reasons["data_file"] == "data/cities.json"
    assert reasons["deep_nesting"] == "gen/nested.js" and "deep_nesting" not in data["skipped"]
    assert data["skipped"]["virtualenv"] == 1 and data["skipped"]["special_file"] == 2
    # src/billing.js, NOTES.md (UTF-16), vendor/patched-http/index.js (re-included), gen/nested.js
    assert data["files"] == 4
    human = _run("index", "--repo", hostile, "--index", index, "--full")
    assert "not indexed: data/cities.json (data_file)" in human.output
    assert "indexed with coarser chunks: gen/nested.js (deep_nesting)" in human.output

    asked = _run("ask", "Which function retries a declined card?", "--repo", hostile, "--index", index,
                 "--no-ai", "--json")
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["sources"][0]["path"] == "src/billing.js"
    notes = _run("retrieve", "how fast are refunds issued", "--repo", hostile, "--index", index, "--json")
    assert "NOTES.md" in [s["path"] for s in json.loads(notes.stdout)["sources"]]


def test_an_empty_repository_says_nothing_is_indexed_and_why(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    (root / "logo.bin").write_bytes(b"\x00\x01")
    (root / ".gitignore").write_text("*.md\n")
    (root / "README.md").write_text("# ignored\n")
    index = tmp_path / "idx.sqlite"
    result = _run("index", "--repo", root, "--index", index)
    assert result.exit_code == 0
    assert "Nothing is indexed in empty" in result.output and "1 ignored" in result.output
    asked = _run("ask", "What does it do?", "--repo", root, "--index", index, "--no-ai")
    assert asked.exit_code != 0
    assert "Nothing is indexed in empty" in asked.output and "REPO_PATH" in asked.output
    # retrieve and context said only "No matching sources." / an empty context, as if nothing matched
    for command in ("retrieve", "context"):
        shown = CliRunner().invoke(cli, [command, "What does it do?", "--repo", str(root), "--index", str(index)])
        assert shown.exit_code == 0, shown.output
        assert "note: Nothing is indexed in empty" in shown.stderr, command
        as_json = CliRunner().invoke(cli, [command, "What does it do?", "--repo", str(root), "--index", str(index),
                                           "--json"])
        json.loads(as_json.stdout)  # the note is on stderr only


def test_the_operators_dotenv_is_read_when_repo_points_elsewhere(tmp_path: Path, monkeypatch) -> None:
    # --repo decides like REPO_PATH: ./.env outside the indexed repository is the operator's.
    repo = tmp_path / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.js").write_text("export function greetVisitor() { return 'hi'; }\n")
    work = tmp_path / "ops"
    work.mkdir()
    (work / ".env").write_text("AI_API_KEY=sk-operator\nAI_MODEL=from-operator-dotenv\nAI_URL=http://127.0.0.1:9/v1\n"
                               "AI_TIMEOUT_S=2\n")
    monkeypatch.chdir(work)
    result = _run("ask", "greetVisitor", "--repo", repo, "--index", tmp_path / "idx.sqlite", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"] == "from-operator-dotenv"
    monkeypatch.chdir(repo)  # the same .env inside the repository is not read
    (repo / ".env").write_text((work / ".env").read_text())
    inside = _run("ask", "greetVisitor", "--repo", ".", "--index", tmp_path / "idx.sqlite", "--json")
    assert json.loads(inside.stdout)["model"] != "from-operator-dotenv"
