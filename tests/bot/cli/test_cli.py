"""The ``slackzilla`` CLI (DESIGN.md §6 contract, issue 2): index, retrieve
(single, --batch, --type, --json), ask (--no-ai, --json), eval and bench, the
error paths (one line on stderr, non-zero exit, no traceback), and planted
secrets absent from every output. One real subprocess run of the console script."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fixtures_engine import PLANTED_SECRETS, SECRET_FRAGMENTS, make_sample_repo
from bot.cli import cli

SOURCE_KEYS = {"path", "start", "end", "score", "type", "kind", "heading", "repo", "symbol"}
CLEAN_ENV = {"REPO_PATH": None, "RAG_INDEX_PATH": None, "AI_API_KEY": None, "AI_URL": None, "AI_MODEL": None,
             "SLACKZILLA_ENV_FILE": None}


@pytest.fixture()
def repo(tmp_path):
    return make_sample_repo(tmp_path / "repo")


@pytest.fixture()
def index_path(tmp_path):
    return tmp_path / "idx" / "index.sqlite"


def run(*args, env=None):
    """Invoke the CLI in-process; stdout and stderr are captured separately (click ≥ 8.2)."""
    runner = CliRunner(env={**CLEAN_ENV, **(env or {})})
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def run_repo(repo, index_path, command, *args):
    """``slackzilla COMMAND --repo R --index I ARGS…`` (options first, so ``--`` may end ARGS)."""
    return run(command, "--repo", repo, "--index", index_path, *args)


def assert_one_line_error(result, code=None):
    assert result.exit_code != 0, result.stdout
    if code is not None:
        assert result.exit_code == code
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and len(lines[0]) > len("error: ") + 10
    assert result.stdout == ""
    return lines[0]


def assert_no_secrets(text: str) -> None:
    low = text.lower()
    for secret in PLANTED_SECRETS:
        assert secret.lower() not in low
    for fragment in SECRET_FRAGMENTS:
        assert fragment not in low


# -- index ---------------------------------------------------------------------------------------


def test_index_json_then_incremental(repo, index_path):
    result = run_repo(repo, index_path, "index", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    stats = json.loads(result.stdout)
    assert {"files", "chunks", "added", "changed", "removed", "skipped", "seconds"} <= set(stats)
    assert (stats["files"], stats["added"], stats["changed"], stats["removed"]) == (12, 12, 0, 0)
    assert isinstance(stats["skipped"], dict) and stats["skipped"].get("secret", 0) >= 1
    assert index_path.is_file() and not (repo / ".rag").exists()

    (repo / "src" / "util" / "format.js").unlink()
    again = json.loads(run_repo(repo, index_path, "index", "--json").stdout)
    assert (again["added"], again["changed"], again["removed"], again["files"]) == (0, 0, 1, 11)
    full = json.loads(run_repo(repo, index_path, "index", "--full", "--json").stdout)
    assert (full["added"], full["files"]) == (11, 11)


def test_index_text_summary(repo, index_path):
    result = run_repo(repo, index_path, "index")
    assert result.exit_code == 0
    assert result.stdout.startswith("12 files, ") and "12 added" in result.stdout
    assert "secrets redacted: 2" in result.stdout


def test_repo_and_index_from_environment(repo, index_path):
    result = run("index", "--json", env={"REPO_PATH": str(repo), "RAG_INDEX_PATH": str(index_path)})
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["files"] == 12 and index_path.is_file()


def test_docs_and_repos_use_the_repository_and_index_of_the_environment(repo, index_path, tmp_path, monkeypatch):
    """``REPO_PATH=… RAG_INDEX_PATH=… slackzilla docs add`` (the bot's own settings): the document went
    into ``<current directory>/.rag/index.sqlite``, where the bot never looks, and ``repos`` listed
    the current directory; every other command reads the two variables."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = {"REPO_PATH": str(repo), "RAG_INDEX_PATH": str(index_path)}
    added = CliRunner(env={**CLEAN_ENV, **env}).invoke(cli, ["docs", "add", "-", "--title", "Rollback runbook", "--json"],
                                                       input="Roll back with the zebrafish-release tag.\n",
                                                       catch_exceptions=False)
    assert added.exit_code == 0, added.output
    assert not (elsewhere / ".rag").exists()
    found = run("retrieve", "zebrafish release rollback", "--json", env=env)
    assert json.loads(found.stdout)["sources"][0]["path"] == f"doc:{json.loads(added.stdout)['id']}"
    listed = json.loads(run("repos", "--json", env=env).stdout)["repositories"]
    assert [(r["path"], r["index"], r["documents"]) for r in listed] == [(str(repo), str(index_path), 1)]


def test_docs_take_the_index_every_other_command_takes(repo, index_path, tmp_path, monkeypatch):
    """A break-it review: ``docs`` had no ``--index``; ``docs add --repo PATH`` ignored ``$RAG_INDEX_PATH`` and
    silently made ``PATH/.rag/index.sqlite``; ``show`` and ``remove`` had no ``--repo``, so a document added for a
    path could only be removed from inside it; ``clear --repo ''`` cleared the current directory's documents."""
    monkeypatch.chdir(tmp_path)
    assert run_repo(repo, index_path, "index").exit_code == 0
    body = tmp_path / "rollback.md"
    body.write_text("Roll back with the albatross-release tag.\n", encoding="utf-8")
    added = run("docs", "add", body, "--title", "Rollback", "--repo", repo, "--index", index_path, "--json")
    assert added.exit_code == 0, added.output
    doc_id = json.loads(added.stdout)["id"]
    assert not (repo / ".rag").exists()
    found = json.loads(run_repo(repo, index_path, "retrieve", "albatross release rollback", "--json").stdout)
    assert found["sources"][0]["path"] == f"doc:{doc_id}"
    shown = run("docs", "show", doc_id, "--repo", repo, "--index", index_path)
    assert shown.exit_code == 0 and "albatross" in shown.stdout
    # $RAG_INDEX_PATH with --repo PATH, as retrieve reads it
    listed = run("docs", "list", "--repo", repo, "--json", env={"RAG_INDEX_PATH": str(index_path)})
    assert [d["id"] for d in json.loads(listed.stdout)["documents"]] == [doc_id]
    assert run("docs", "remove", doc_id, "--repo", repo, "--index", index_path).exit_code == 0
    cleared = run("docs", "clear", "--repo", "", "--json")
    assert cleared.exit_code == 2 and "--repo" in cleared.output


def test_every_command_reads_the_env_file_serve_reads(repo, index_path, tmp_path, monkeypatch):
    """``REPO_PATH`` and ``RAG_INDEX_PATH`` in ``./.env`` or in ``SLACKZILLA_ENV_FILE`` (the bot's
    settings, which ``serve`` reads) were ignored by ``index``, ``repos`` and every other command but
    ``ask``: ``slackzilla index`` indexed the current directory into another file than the bot's."""
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    (workdir / ".env").write_text(f"REPO_PATH={repo}\nRAG_INDEX_PATH={index_path}\n", encoding="utf-8")
    indexed = run("index", "--json")
    assert indexed.exit_code == 0, indexed.stderr
    assert json.loads(indexed.stdout)["files"] == 12 and index_path.is_file() and not (workdir / ".rag").exists()
    listed = json.loads(run("repos", "--json").stdout)["repositories"]
    assert [(r["path"], r["index"]) for r in listed] == [(str(repo), str(index_path))]
    (workdir / ".env").unlink()
    named = tmp_path / "bot.env"
    named.write_text(f"REPO_PATH={repo}\nRAG_INDEX_PATH={index_path}\n", encoding="utf-8")
    found = run("retrieve", "database connection pool", "--json", env={"SLACKZILLA_ENV_FILE": str(named)})
    assert found.exit_code == 0 and json.loads(found.stdout)["sources"][0]["path"] == "src/db/pool.js", found.stderr
    # the environment wins over the file
    other = tmp_path / "other.sqlite"
    run("index", "--json", env={"SLACKZILLA_ENV_FILE": str(named), "RAG_INDEX_PATH": str(other)})
    assert other.is_file()


@pytest.mark.parametrize("command", [["index"], ["retrieve", "retry"], ["repos"], ["code", "symbols"]])
def test_a_missing_env_file_is_an_error_for_every_command(command, tmp_path, monkeypatch):
    """``SLACKZILLA_ENV_FILE=/nonexistent`` stopped ``ask`` and ``serve`` but was ignored by the rest."""
    monkeypatch.chdir(tmp_path)
    result = run(*command, env={"SLACKZILLA_ENV_FILE": str(tmp_path / "missing.env")})
    line = assert_one_line_error(result, 1)
    assert "SLACKZILLA_ENV_FILE" in line and "missing.env is not a file" in line


def test_ask_prints_snippets_without_slacks_zero_width_spaces(repo, index_path):
    """The local answer breaks ``` runs inside snippets with zero-width spaces (they would close Slack's
    fence); the terminal printed them too, so code copied from it carried invisible characters."""
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "zebrafish.md").write_text("# Zebrafish deploy\n\nRun:\n\n```sh\nnpm run zebrafish-deploy\n```\n",
                                               encoding="utf-8")
    result = run_repo(repo, index_path, "ask", "how do I run the zebrafish deploy?")
    assert result.exit_code == 0, result.stderr
    assert "npm run zebrafish-deploy" in result.stdout and "```sh" in result.stdout
    assert "\u200b" not in result.stdout


def test_repo_option_wins_over_the_environment_and_a_bad_repo_path_is_one_line(repo, index_path, tmp_path):
    env = {"REPO_PATH": str(tmp_path / "missing"), "RAG_INDEX_PATH": str(tmp_path / "unused.sqlite")}
    result = run("index", "--json", "--repo", repo, "--index", index_path, env=env)
    assert result.exit_code == 0, result.stderr
    assert index_path.is_file() and not (tmp_path / "unused.sqlite").exists()
    line = assert_one_line_error(run("index", "--json", env=env))
    assert line == f"error: Repository not found: {tmp_path / 'missing'} is not a directory."


def test_a_bad_provider_variable_disables_that_provider_with_one_warning(repo, index_path):
    env = {"RERANK_URL": "ftp://example.com", "RERANK_MIN_SCORE": "high", "EMBEDDINGS": "sometimes"}
    result = run("retrieve", "database connection pool", "--json", "--repo", repo, "--index", index_path, env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: embeddings disabled: EMBEDDINGS: expected auto or off",
        "warning: reranking disabled: RERANK_URL: expected an http(s) URL such as https://host/path; "
        "RERANK_MIN_SCORE: expected a number, got 'high'",
    ]
    assert json.loads(result.stdout)["sources"][0]["path"] == "src/db/pool.js"


# -- retrieve ------------------------------------------------------------------------------------


def test_retrieve_json_shape(repo, index_path):
    result = run_repo(repo, index_path, "retrieve", "database connection pool", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"sources", "images", "absent_terms"}
    assert data["sources"][0]["path"] == "src/db/pool.js"
    for s in data["sources"]:
        assert set(s) == SOURCE_KEYS
        assert 1 <= s["start"] <= s["end"] and isinstance(s["score"], float)


def test_retrieve_text_and_limit(repo, index_path):
    result = run_repo(repo, index_path, "retrieve", "checkout order", "--limit", "2")
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert 1 <= len(lines) <= 2
    assert all(":" in ln and "-" in ln for ln in lines)


def test_retrieve_images_in_json(repo, index_path):
    data = json.loads(run_repo(repo, index_path, "retrieve", "architecture diagram", "--json").stdout)
    assert [i["path"] for i in data["images"]] == ["docs/images/architecture-diagram.png"]
    assert set(data["images"][0]) == {"path", "url", "score"}


def test_retrieve_nothing_matches(repo, index_path):
    result = run_repo(repo, index_path, "retrieve", "sourdough bread with rye flour", "--json")
    assert json.loads(result.stdout) == {"sources": [], "images": [],
                                         "absent_terms": ["sourdough", "bread", "rye", "flour"]}
    text = run_repo(repo, index_path, "retrieve", "sourdough bread with rye flour")
    assert text.exit_code == 0
    assert text.stdout.strip() == "No matching sources. No indexed file mentions sourdough, bread, rye, flour."


@pytest.mark.parametrize(("kind", "suffixes"), [("documentation", (".md",)), ("test", (".test.js",)), ("source", (".js",))])
def test_retrieve_type_filter(repo, index_path, kind, suffixes):
    data = json.loads(run_repo(repo, index_path, "retrieve", "checkout discount", "--type", kind, "--json").stdout)
    assert data["sources"]
    assert all(s["path"].endswith(suffixes) for s in data["sources"])
    assert {s["kind"] for s in data["sources"]} == {kind}  # what --type filters on is in the JSON
    if kind == "source":
        assert not any(s["path"].startswith(("test/", "examples/")) for s in data["sources"])


def test_retrieve_unknown_type_is_a_usage_error(repo, index_path):
    result = run_repo(repo, index_path, "retrieve", "checkout", "--type", "images")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "images" in result.stderr


def test_retrieve_batch(repo, index_path, tmp_path):
    batch = tmp_path / "q.jsonl"
    items = [
        {"id": "pool", "question": "database connection pool"},
        {"id": 7, "question": "what does src/util/format.js do?"},
        {"id": "none", "question": "sourdough bread with rye flour"},
        {"id": "hostile", "question": 'NEAR( "pool* AND -connection:'},
        {"id": "empty", "question": ""},
    ]
    batch.write_text("\n".join(json.dumps(i) for i in items) + "\n\n", encoding="utf-8")
    result = run_repo(repo, index_path, "retrieve", "--batch", batch, "--limit", "3")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["pool", 7, "none", "hostile", "empty"]
    assert rows[0]["sources"][0]["path"] == "src/db/pool.js"
    assert rows[1]["sources"][0]["path"] == "src/util/format.js"
    assert rows[2]["sources"] == [] and rows[4]["sources"] == []
    assert all(len(r["sources"]) <= 3 and all(set(s) == SOURCE_KEYS for s in r["sources"]) for r in rows)


def test_retrieve_batch_written_with_a_bom_and_crlf(repo, index_path, tmp_path):
    """Notepad and PowerShell write a UTF-8 byte-order mark: the batch failed on line 1 with
    "not valid JSON (Unexpected UTF-8 BOM)"."""
    batch = tmp_path / "windows.jsonl"
    batch.write_bytes(b"\xef\xbb\xbf" + b'{"id": "pool", "question": "database connection pool"}\r\n\r\n')
    result = run_repo(repo, index_path, "retrieve", "--batch", batch, "--limit", "1")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sources"][0]["path"] == "src/db/pool.js"


def test_retrieve_batch_with_a_bad_line_is_one_error_line(repo, index_path, tmp_path):
    batch = tmp_path / "bad.jsonl"
    batch.write_text('{"id": 1, "question": "pool"}\n{not json\n', encoding="utf-8")
    line = assert_one_line_error(run_repo(repo, index_path, "retrieve", "--batch", batch))
    assert "bad.jsonl:2" in line


def test_retrieve_batch_with_a_line_nested_too_deeply_is_one_error_line(repo, index_path, tmp_path):
    """``[[[[…`` past Python's recursion limit: a RecursionError traceback reached the terminal."""
    batch = tmp_path / "deep.jsonl"
    batch.write_text('{"id": 1, "question": "pool"}\n' + "[" * 50_000 + "\n", encoding="utf-8")
    line = assert_one_line_error(run_repo(repo, index_path, "retrieve", "--batch", batch))
    assert "deep.jsonl:2" in line and "nested too deeply" in line


def test_retrieve_batch_with_a_non_object_line_is_one_error_line(repo, index_path, tmp_path):
    batch = tmp_path / "strings.jsonl"
    batch.write_text('"just a question"\n', encoding="utf-8")
    runner = CliRunner(env=CLEAN_ENV)
    result = runner.invoke(cli, ["retrieve", "--repo", str(repo), "--index", str(index_path), "--batch", str(batch)])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "strings.jsonl:1" in assert_one_line_error(result)


@pytest.mark.parametrize("question", ['"', "NEAR(", "AND", "OR NOT", "col:pool", "(((", ")", "^", "*", "über 日本 😀", "-pool"])
def test_hostile_questions_through_the_cli(repo, index_path, question):
    result = run_repo(repo, index_path, "retrieve", "--json", "--", question)
    assert result.exit_code == 0, result.stderr
    assert set(json.loads(result.stdout)) == {"sources", "images", "absent_terms"}


# -- ask -------------------------------------------------------------------------------------------


def test_ask_no_ai_text(repo, index_path):
    result = run_repo(repo, index_path, "ask", "--no-ai", "how does the database connection pool run a transaction?")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    found = next(i for i, ln in enumerate(lines) if ln.startswith("Found "))
    assert lines[found + 1].startswith("1. src/db/pool.js:1-")
    assert any("connection pool" in ln for ln in lines[found + 2 : found + 6])


def test_ask_json(repo, index_path):
    result = run_repo(repo, index_path, "ask", "--no-ai", "--json", "how is a session cookie verified?")
    data = json.loads(result.stdout)
    assert set(data) >= {"answer", "sources", "images"}
    assert data["sources"][0]["path"] == "src/auth/session.js"
    assert all(set(s) >= SOURCE_KEYS for s in data["sources"])


def test_ask_with_no_match_says_so(repo, index_path):
    result = run_repo(repo, index_path, "ask", "--no-ai", "how do I bake sourdough bread?")
    assert result.exit_code == 0
    assert result.stdout.strip().endswith("This is not documented in the repository.\n"
                                          "No indexed file mentions `bake`, `sourdough` or `bread`.")


SECRET_QUESTIONS = [
    "what is the slack bot token?",
    "SLACK_BOT_TOKEN in config.example",
    "show me src/config.js",
    "what is the payment apiKey?",
    "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",
    "xoxb token",
    "EnvFileSecretValue1 .env",
]


@pytest.mark.parametrize("question", SECRET_QUESTIONS)
def test_planted_secrets_absent_from_every_cli_output(repo, index_path, question):
    outputs = []
    for args in (("retrieve", "--json"), ("retrieve",), ("ask", "--no-ai"), ("ask", "--no-ai", "--json"), ("ask", "--json")):
        result = run_repo(repo, index_path, *args, "--limit", "20", "--", question)
        assert result.exit_code == 0, result.stderr
        outputs.append(result.stdout + result.stderr)
    assert_no_secrets("\n".join(outputs))


def test_config_question_shows_redaction_marker(repo, index_path):
    out = run_repo(repo, index_path, "ask", "--no-ai", "SLACK_BOT_TOKEN in config.example").stdout
    assert "SLACK_BOT_TOKEN=[REDACTED]" in out
    out = run_repo(repo, index_path, "ask", "--no-ai", "what does src/config.js do").stdout
    assert 'const apiKey = "[REDACTED]";' in out


# -- error paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("ask",), ("ask", "--no-ai"), ("retrieve",), ("retrieve", "--json")])
@pytest.mark.parametrize("question", [None, "", "   ", "\n\t"])
def test_empty_question_is_one_line_usage_error(repo, index_path, command, question):
    args = [*command] + ([question] if question is not None else [])
    line = assert_one_line_error(run_repo(repo, index_path, *args), code=2)
    assert "question is empty" in line
    assert not index_path.exists()  # rejected before any work


@pytest.mark.parametrize("command", [("index",), ("index", "--json"), ("retrieve", "pool"), ("ask", "pool"), ("bench",)])
def test_missing_repo_is_one_line_error(tmp_path, command):
    line = assert_one_line_error(run(*command, "--repo", tmp_path / "does-not-exist"))
    assert "does-not-exist" in line and "not found" in line.lower()


def test_repo_that_is_a_file_is_one_line_error(tmp_path):
    (tmp_path / "file.js").write_text("x")
    assert "file.js" in assert_one_line_error(run("ask", "pool", "--repo", tmp_path / "file.js"))


def _parent_is_file(tmp_path: Path) -> Path:
    (tmp_path / "blocker").write_text("not a directory")
    return tmp_path / "blocker" / "index.sqlite"


def _index_is_directory(tmp_path: Path) -> Path:
    (tmp_path / "dir.sqlite").mkdir()
    return tmp_path / "dir.sqlite"


@pytest.mark.parametrize("make_location", [_parent_is_file, _index_is_directory])
@pytest.mark.parametrize("command", [("index",), ("index", "--json"), ("retrieve", "pool", "--json"), ("ask", "pool")])
def test_unusable_index_location_is_one_line_error(repo, tmp_path, make_location, command):
    location = make_location(tmp_path)
    line = assert_one_line_error(run(*command, "--repo", repo, "--index", location))
    assert "index" in line.lower()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_index_under_read_only_directory_is_one_line_error(repo, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert_one_line_error(run("index", "--repo", repo, "--index", ro / "sub" / "index.sqlite"))
    finally:
        ro.chmod(0o700)


def test_read_only_repository_with_index_elsewhere_works(repo, index_path):
    # DESIGN.md §6: with --index elsewhere the repository may be read-only.
    for p in [repo, *repo.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        result = run_repo(repo, index_path, "retrieve", "database connection pool", "--json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["sources"][0]["path"] == "src/db/pool.js"
    finally:
        for p in [repo, *repo.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)


@pytest.mark.parametrize("content", [b"\x00garbage" * 500, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_corrupt_index_file_is_rebuilt_by_the_cli(repo, index_path, content):
    index_path.parent.mkdir()
    index_path.write_bytes(content)
    result = run_repo(repo, index_path, "retrieve", "database connection pool", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sources"][0]["path"] == "src/db/pool.js"
    assert "Traceback" not in result.stderr


def test_another_programs_database_as_index_is_refused_by_the_cli(repo, index_path):
    index_path.parent.mkdir()
    conn = sqlite3.connect(index_path)
    conn.execute("CREATE TABLE accounts (id INTEGER)")
    conn.commit()
    conn.close()
    result = run_repo(repo, index_path, "retrieve", "database connection pool", "--json")
    assert result.exit_code != 0 and "another program's SQLite database" in result.stderr
    assert "Traceback" not in result.stderr
    conn = sqlite3.connect(index_path)
    assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("accounts",)]
    conn.close()


def test_damaged_index_is_not_a_traceback(repo, index_path):
    assert run_repo(repo, index_path, "index").exit_code == 0
    conn = sqlite3.connect(index_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='files'").fetchone()[0]
    conn.close()
    data = bytearray(index_path.read_bytes())
    data[(root - 1) * page_size : root * page_size] = b"\xa5" * page_size
    index_path.write_bytes(bytes(data))
    runner = CliRunner(env=CLEAN_ENV)
    result = runner.invoke(cli, ["retrieve", "pool", "--json", "--repo", str(repo), "--index", str(index_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 0:
        assert json.loads(result.stdout)["sources"][0]["path"] == "src/db/pool.js"  # rebuilt
    else:
        assert_one_line_error(result)


# -- eval and bench ----------------------------------------------------------------------------------


def test_eval_scores_a_small_set(repo, tmp_path):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    shutil.copytree(repo, corpora / "shop")
    qs = [
        {"id": "s1", "corpus": "shop", "kind": "path", "question": "What does src/util/format.js export?", "gold": ["src/util/format.js"]},
        {"id": "s2", "corpus": "shop", "kind": "concept", "question": "database connection pool transaction", "gold": ["src/db/pool.js"]},
        {"id": "s3", "corpus": "shop", "kind": "none", "question": "How do I bake sourdough bread?", "gold": []},
    ]
    set_path = tmp_path / "set.jsonl"
    set_path.write_text("\n".join(json.dumps(q) for q in qs) + "\n", encoding="utf-8")
    result = run("eval", "--set", set_path, "--corpora", corpora, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["all"] == {"n": 2, "r1": 1.0, "r5": 1.0, "mrr10": 1.0}
    assert data["abstain"] == {"n": 1, "rate": 1.0}
    text = run("eval", "--set", set_path, "--corpora", corpora)
    assert text.exit_code == 0 and "ALL" in text.stdout and "abstain rate 1.000" in text.stdout


def test_eval_streams_option(repo, tmp_path):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    shutil.copytree(repo, corpora / "shop")
    set_path = tmp_path / "set.jsonl"
    set_path.write_text(json.dumps({"id": "s2", "corpus": "shop", "kind": "concept",
                                    "question": "database connection pool transaction", "gold": ["src/db/pool.js"]}) + "\n")
    result = run("eval", "--set", set_path, "--corpora", corpora, "--streams", "lexical", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["streams"] == ["lexical", "structure"] and data["hybrid"] is None and data["all"]["r1"] == 1.0
    # The vector stream alone needs an embeddings provider: a clear one-line error, nothing run.
    assert "embeddings" in assert_one_line_error(run("eval", "--set", set_path, "--corpora", corpora,
                                                     "--streams", "vectors", "--embeddings", "off"))


def test_eval_with_missing_corpus_is_one_line_error(tmp_path):
    set_path = tmp_path / "set.jsonl"
    set_path.write_text(json.dumps({"id": "x", "corpus": "ghost", "kind": "path", "question": "q", "gold": ["a"]}) + "\n")
    (tmp_path / "corpora").mkdir()
    assert "ghost" in assert_one_line_error(run("eval", "--set", set_path, "--corpora", tmp_path / "corpora"))


def test_eval_with_a_malformed_set_line_is_one_error_line(tmp_path):
    set_path = tmp_path / "set.jsonl"
    set_path.write_text(json.dumps({"id": "x", "question": "q"}) + "\n")
    (tmp_path / "corpora").mkdir()
    runner = CliRunner(env=CLEAN_ENV)
    result = runner.invoke(cli, ["eval", "--set", str(set_path), "--corpora", str(tmp_path / "corpora")])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "corpus" in assert_one_line_error(result)


@pytest.mark.parametrize("corpus", ["../outside", "{outside}", ".", "..", "shop/../../outside", "shop/src"])
def test_eval_corpus_must_be_a_folder_name_under_corpora(repo, tmp_path, corpus):
    """A set's ``corpus`` named a folder anywhere (``../../../etc``, ``/etc``): it was indexed and its index
    written beside --index-dir (``/tmp/etc.sqlite``, ``/etc.sqlite``). Now one ``FILE:LINE:`` error, nothing run."""
    corpora, index_dir, outside = tmp_path / "corpora", tmp_path / "work" / "idx", tmp_path / "work" / "outside"
    corpora.mkdir()
    shutil.copytree(repo, corpora / "shop")
    shutil.copytree(repo, outside)
    index_dir.mkdir()
    set_path = tmp_path / "set.jsonl"
    set_path.write_text(json.dumps({"id": "x", "corpus": corpus.format(outside=outside), "kind": "path",
                                    "question": "What does src/db/pool.js do?", "gold": ["src/db/pool.js"]}) + "\n")
    line = assert_one_line_error(run("eval", "--set", set_path, "--corpora", corpora, "--index-dir", index_dir))
    assert f"{set_path}:1: 'corpus' must be the name of a folder in the corpora directory" in line
    assert list(tmp_path.rglob("*.sqlite")) == []


def _question(**fields) -> str:
    return json.dumps({"id": "q1", "corpus": "shop", "kind": "path", "question": "What does src/util/format.js export?",
                       "gold": ["src/util/format.js"], **fields})


@pytest.mark.parametrize("lines, expected", [
    ([_question(question=123)], ":1: 'question' must be a non-blank string, got 123"),
    (["", _question(question="  \t")], ":2: 'question' must be a non-blank string"),
    ([_question(question=None)], ":1: 'question' must be a non-blank string, got null"),
    ([_question(gold="src/util/format.js")], ":1: 'gold' must be a list of paths (strings), got \"src/util/format.js\""),
    ([_question(gold=["src/util/format.js", 7])], ":1: 'gold' must be a list of paths"),
    ([_question(gold=[])], ":1: 'gold' is empty; only a question of kind 'none' has no gold paths"),
    ([_question(kind="none")], ":1: a question of kind 'none' has no gold paths"),
    ([_question(id=5)], ":1: 'id' must be a non-blank string, got 5"),
    ([json.dumps({"id": "q1", "corpus": "shop", "question": "q", "gold": ["a.js"]})], ":1: missing key 'kind'"),
    ([_question(), "", _question(question="another")], ":3: duplicate id \"q1\" (first on line 1)"),
    ([], ": no questions"),
    (["", "  "], ": no questions"),
])
def test_eval_rejects_a_set_file_it_cannot_score(repo, tmp_path, lines, expected):
    """A wrong set file was a traceback (``"question": 123``), scored as misses (gold a string, a blank
    question), merged (duplicate ids) or printed an empty table with exit 0 (no question). Now one
    ``FILE:LINE:`` error (the line as in the file, blank lines counted) before anything is indexed."""
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    shutil.copytree(repo, corpora / "shop")
    set_path = tmp_path / "set.jsonl"
    set_path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    index_dir = tmp_path / "idx"
    line = assert_one_line_error(run("eval", "--set", set_path, "--corpora", corpora, "--index-dir", index_dir))
    assert f"error: {set_path}{expected}" in line
    assert list(index_dir.iterdir()) == []  # rejected before any corpus was indexed


def test_the_eval_sets_in_the_repository_are_valid():
    from rag.evaluation import load_eval_set

    sets = sorted((Path(__file__).resolve().parents[3] / "eval").glob("*.jsonl"))
    assert len(sets) >= 3
    for path in sets:
        questions = load_eval_set(path)
        assert questions and any(q.get("lines") for q in questions)  # the optional "lines" key is accepted


def test_bench_skips_special_files_as_the_walk_does(repo):
    """``slackzilla index`` skips a FIFO (``special_file``); bench's scratch copy failed on it with a Python list
    of copy errors. Now it is left out of the copy and said in one line."""
    os.mkfifo(repo / "src" / "pipe.js")
    result = run("bench", "--repo", repo, "--queries", "2", "--scale", "0")
    assert result.exit_code == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "pipe.js" in line]
    assert said == ["not copied (the index skips these too): src/pipe.js (special_file)"]
    assert "not_copied" not in result.stdout and "files: 12" in result.stdout
    data = json.loads(run("bench", "--repo", repo, "--copies", "2", "--queries", "2", "--scale", "0", "--json").stdout)
    assert data["not_copied"] == {"src/pipe.js": "special_file"} and data["files"] == 24


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_bench_scratch_copy_leaves_out_what_it_cannot_read(repo, tmp_path):
    from rag.evaluation import scratch_copy

    (repo / "src" / "db" / "pool.js").chmod(0)
    (repo / "docs").chmod(0)
    try:
        left_out = scratch_copy(repo, tmp_path / "copy")
    finally:
        (repo / "src" / "db" / "pool.js").chmod(0o644)
        (repo / "docs").chmod(0o755)
    assert left_out == {"src/db/pool.js": "unreadable", "docs": "unreadable"}
    assert (tmp_path / "copy" / "src" / "util" / "format.js").is_file()


def test_bench_json_shape(repo):
    result = run("bench", "--repo", repo, "--queries", "5", "--scale", "0", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"files", "chunks", "bytes", "full_index_s", "noop_update_s", "one_file_update_s",
            "query_p50_ms", "query_p95_ms", "peak_rss_mb"} <= set(data)
    assert data["files"] == 12 and data["query_p95_ms"] >= data["query_p50_ms"] > 0
    assert data["isolated_one_file_update_s"] > 0  # as `slackzilla serve` updates: through its update process
    assert not (repo / ".rag").exists()  # bench works on a scratch copy


# -- the real console script -------------------------------------------------------------------------


def _script() -> str:
    found = shutil.which("slackzilla") or str(Path(sys.executable).with_name("slackzilla"))
    assert Path(found).exists(), "the slackzilla console script is not installed (pip install -e .)"
    return found


def test_console_script_subprocess(repo, index_path):
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    ok = subprocess.run(
        [_script(), "retrieve", "database connection pool", "--json", "--repo", str(repo), "--index", str(index_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["sources"][0]["path"] == "src/db/pool.js"
    assert_no_secrets(ok.stdout + ok.stderr)

    bad = subprocess.run(
        [_script(), "ask", "   ", "--repo", str(repo), "--index", str(index_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_a_reader_that_stops_reading_is_not_an_error(repo, index_path):
    """``slackzilla retrieve … | head -1``: the pipe closes before the output is written. That printed
    ``error: [Errno 32] Broken pipe``, as if the command had failed."""
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    subprocess.run([_script(), "index", "--repo", str(repo), "--index", str(index_path)],
                   capture_output=True, timeout=120, env=env, check=True)
    for args in (["retrieve", "database connection pool"], ["ask", "database connection pool", "--no-ai"],
                 ["code", "symbols"]):
        proc = subprocess.Popen([_script(), *args, "--repo", str(repo), "--index", str(index_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        proc.stdout.close()  # the reader went away before anything was printed
        stderr = proc.stderr.read().decode()
        proc.wait(timeout=120)
        proc.stderr.close()
        assert "Broken pipe" not in stderr and "error:" not in stderr and "Traceback" not in stderr, (args, stderr)
        assert proc.returncode != 0, args  # nothing was delivered: not a success, but not an error message


def _run_with_tty_stderr(args: list[str]) -> tuple[int, str, str]:
    """Run the console script with stderr on a pseudo-terminal; return (code, stdout, terminal text)."""
    import pty
    import select

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    proc = subprocess.Popen([_script(), *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    try:
        out = proc.stdout.read()
        proc.wait(timeout=120)
        term = b""
        while select.select([master], [], [], 0.2)[0]:
            try:
                data = os.read(master, 4096)
            except OSError:  # the other side closed
                break
            if not data:
                break
            term += data
    finally:
        proc.stdout.close()
        os.close(master)
    return proc.returncode, out.decode(), term.decode(errors="replace")


def test_embedding_has_its_own_bar_after_the_indexing_one(repo, index_path, monkeypatch):
    """With the local model, ``slackzilla index`` spends most of its time embedding: that phase has a bar
    of its own, on a line after the finished indexing bar."""
    from rag.providers.local_embeddings import local_extra_installed

    if not local_extra_installed():
        pytest.skip("the local-embeddings extra is not installed (pip install '.[local-embeddings]')")
    for name in ("EMBEDDINGS", "EMBEDDINGS_URL", "EMBEDDINGS_LOCAL_PATH"):
        monkeypatch.delenv(name, raising=False)
    code, out, term = _run_with_tty_stderr(["index", "--repo", str(repo), "--index", str(index_path)])
    assert code == 0 and out.startswith("12 files"), term
    indexing, embedding = term.rindex("indexing"), term.index("embedding  ")
    assert indexing < embedding and "\n" in term[indexing:embedding]  # the indexing bar's line was ended
    assert "100%" in term[embedding:], term[-200:]


def test_progress_bar_on_a_terminal_only_without_json(repo, index_path):
    code, out, term = _run_with_tty_stderr(["index", "--repo", str(repo), "--index", str(index_path)])
    assert code == 0 and out.startswith("12 files")
    assert "indexing" in term and "100%" in term
    code, out, term = _run_with_tty_stderr(["index", "--full", "--json", "--repo", str(repo), "--index", str(index_path)])
    assert code == 0 and json.loads(out)["files"] == 12
    assert term == ""


def test_docs_add_of_an_endless_file_stops_at_the_size_limit(repo, index_path):
    """``slackzilla docs add /dev/zero`` (or a named pipe that never ends) read the whole input into memory before
    any check: it ran until the machine's memory was gone. The input is read only up to the document size limit,
    and what is longer is refused with that limit named. The child gets a 1 GiB address-space limit, so the
    unbounded read fails fast here instead of filling the machine."""
    import resource

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    done = subprocess.run([_script(), "docs", "add", "/dev/zero", "--title", "Endless"],
                          capture_output=True, text=True, timeout=120, preexec_fn=cap_memory,
                          env={**env, "REPO_PATH": str(repo), "RAG_INDEX_PATH": str(index_path)})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "200,000 characters" in done.stderr, done.stderr
