"""Fixes from a fresh-user review: index path safety, secret-file values, terminal output."""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from bot.cli import cli
from bot.cli.common import printable
from rag.engine import Engine
from rag.errors import IndexUnavailableError
from rag.secrets import LiteralRedactor, redact_secrets, secret_file_values


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / ".env").write_text("OPENAI_API_KEY=zz9envOnlyValue777\nPORT=3000\nDEBUG=true\n")
    (root / "README.md").write_text("# Setup\n\nRun with the key zz9envOnlyValue777 exported.\n")
    (root / "src" / "run.sh").write_text("#!/bin/sh\nexport OPENAI_KEY=zz9openaiKeyValue12345\nnode app.js\n")
    (root / "src" / "app.js").write_text("// app\nconsole.log('\\x1b]52;c;aGk=\\x07 hello');\n")
    return root


def test_a_directory_or_device_at_the_index_path_is_refused_not_replaced(tmp_path, repo):
    target = tmp_path / "a-dir"
    target.mkdir()
    with pytest.raises(IndexUnavailableError, match="not a regular file"):
        Engine.open(repo, index_path=target)
    assert target.is_dir() and not list(tmp_path.glob("a-dir.broken-*"))
    if os.path.exists("/dev/null"):
        with pytest.raises(IndexUnavailableError):
            Engine.open(repo, index_path="/dev/null")
        assert not os.path.isfile("/dev/null")


def test_values_of_secret_files_are_redacted_everywhere(tmp_path, repo):
    engine = Engine.open(repo, index_path=tmp_path / "i.sqlite")
    try:
        stats = engine.update()
        assert stats.redactions >= 2
        texts = [t for (t,) in engine.index.conn.execute("SELECT text FROM chunks")]
        joined = "\n".join(texts)
        assert "zz9envOnlyValue777" not in joined and "zz9openaiKeyValue12345" not in joined
        assert "3000" not in {v for v in secret_file_values("PORT=3000")}  # short values are not secrets
        # A new value in .env re-redacts files that did not change.
        (repo / "README.md").write_text("# Setup\n\nold value zz9rotatedValue888 here.\n")
        engine.update()
        assert "zz9rotatedValue888" in "\n".join(t for (t,) in engine.index.conn.execute("SELECT text FROM chunks"))
        (repo / ".env").write_text("OPENAI_API_KEY=zz9rotatedValue888\n")
        engine.update()
        assert "zz9rotatedValue888" not in "\n".join(t for (t,) in engine.index.conn.execute("SELECT text FROM chunks"))
    finally:
        engine.close()


def test_env_style_key_names_are_secrets():
    text, count = redact_secrets("export STRIPE_KEY=zz9shellrcvalue42\nkey = 'not-a-secret'\n", file_type="sh")
    assert "zz9shellrcvalue42" not in text and count == 1


def test_literal_redactor_prefers_the_longest_value():
    redactor = LiteralRedactor({"abcdefgh", "abcdefgh-longer"})
    assert redactor.redact("x abcdefgh-longer y abcdefgh") == ("x [REDACTED] y [REDACTED]", 2)
    assert LiteralRedactor(set()).redact("nothing") == ("nothing", 0)


def test_terminal_output_shows_control_characters_escaped(tmp_path, repo):
    assert printable("a\x1b[2Jb\x07\n\tc") == "a\\x1b[2Jb\\x07\n\tc"
    # text-direction controls and tag characters reorder or hide text on a terminal (a break-it review saw a
    # document preview print U+202E raw)
    assert printable("x \u202e bidi \u2066y\U000e0069") == "x \\u202e bidi \\u2066y\\U000e0069"
    result = CliRunner().invoke(cli, ["context", "hello console log", "--repo", str(repo),
                                      "--index", str(tmp_path / "c.sqlite")])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout


def test_json_output_never_carries_raw_control_characters(tmp_path, repo):
    result = CliRunner().invoke(cli, ["retrieve", "console log hello", "--json", "--repo", str(repo),
                                      "--index", str(tmp_path / "j.sqlite")])
    assert result.exit_code == 0 and "\x1b" not in result.stdout
    json.loads(result.stdout)


def test_names_with_control_characters_are_not_indexed_and_are_reported_escaped(tmp_path):
    """File names are repository data: ``code symbols|env|deps`` printed them raw (an escape sequence in
    a name reached the terminal), and a newline or tab in a name split one listing line in two, or forged a
    header line of the context given to the model. Such names are not indexed; the index run names them,
    escaped."""
    root = tmp_path / "names"
    (root / "src").mkdir(parents=True)
    (root / "src" / "\x1b[31mevil.py").write_text("import os\n\ndef evil_escape():\n    return os.environ['EVIL_MODE']\n")
    (root / "src" / "new\nline.py").write_text("def newline_file():\n    return 1\n")
    (root / "src" / "tab\there.py").write_text("def tab_file():\n    return 2\n")
    (root / "src" / "plain.py").write_text("def plain_file():\n    return 3\n")
    index = str(tmp_path / "names.sqlite")

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, [*args, "--repo", str(root), "--index", index], color=True)
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\t" not in result.output, args
        return result.output

    indexed = run("index")
    assert "src/\\x1b[31mevil.py" in indexed and "src/new\\x0aline.py" in indexed and "control_character_name" in indexed
    assert run("code", "symbols").splitlines() == ["src/plain.py:1-2  function  plain_file"]
    assert "EVIL_MODE" not in run("code", "env")
    listed = run("retrieve", "newline_file tab_file evil_escape plain_file").splitlines()
    assert all("plain.py" in line for line in listed if ":" in line), listed

def test_json_output_escapes_c1_control_characters(tmp_path):
    """JSON escapes U+0000-U+001F itself, but ``ensure_ascii=False`` printed U+007F-U+009F raw: a
    repository string holding U+009B (CSI) or U+009D (OSC) reached the terminal through ``--json``
    and ``slackzilla tool``, though the text output escapes them."""
    root = tmp_path / "c1"
    root.mkdir()
    (root / "app.js").write_text('// banner printer\nconsole.log("\u009b31m red \u009d0;title\x07 hello");\n',
                                 encoding="utf-8")
    index = str(tmp_path / "c1.sqlite")
    for args in (["context", "banner printer hello", "--json"], ["ask", "banner printer hello", "--no-ai", "--json"],
                 ["tool", "readFile", "--args", '{"path": "app.js"}']):
        result = CliRunner().invoke(cli, [*args, "--repo", str(root), "--index", index])
        assert result.exit_code in (0, 1), result.output
        assert not any(0x7F <= ord(ch) <= 0x9F for ch in result.stdout), args
        data = json.loads(result.stdout)
        assert "\u009b31m red" in json.dumps(data, ensure_ascii=False), args  # the text itself is kept
