"""Hostile trees: odd names, odd ignore files, odd encodings and virtual environments (issue 14).

Each case was a real failure: an index build that raised, a walk that hung, or files indexed
that git (or a reader of the tree) would not call the repository's code.
"""
from __future__ import annotations

import codecs
import os
import subprocess
import threading
from pathlib import Path

import pytest

from rag.engine import Engine
from rag.ingest.walk import decode_text, walk

from test_walk import git, make_tree, paths


def _walk_within(root: Path, seconds: float = 10.0):
    """``walk(root)`` in a daemon thread; fails the test instead of hanging it."""
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("report", walk(root)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"walk did not finish within {seconds} s"
    return box["report"]


def test_a_file_name_that_is_not_utf8_is_skipped_and_the_index_still_builds(tmp_path: Path) -> None:
    make_tree(tmp_path, {"src/app.js": "export function greetVisitor() { return 'hello'; }\n"})
    fd = os.open(os.fsencode(tmp_path / "src") + b"/caf\xe9.js", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"export const menu = 1;\n")
    os.close(fd)
    report = walk(tmp_path)
    assert [f.path for f in report.files] == ["src/app.js"]
    assert report.skipped["undecodable_name"] == 1
    engine = Engine.open(tmp_path, index_path=tmp_path / "idx" / "index.sqlite")
    try:
        stats = engine.update()
        assert stats.files == 1 and stats.skipped["undecodable_name"] == 1
        assert [s.path for s in engine.retrieve("greetVisitor")][:1] == ["src/app.js"]
    finally:
        engine.close()


def test_a_fifo_named_gitignore_does_not_hang_the_walk(tmp_path: Path, caplog) -> None:
    make_tree(tmp_path, {"src/app.js": "x\n", "lib/.keep.md": "keep\n"})
    os.mkfifo(tmp_path / ".gitignore")
    os.mkfifo(tmp_path / "lib" / ".szignore")
    report = _walk_within(tmp_path)
    assert [f.path for f in report.files] == ["lib/.keep.md", "src/app.js"]
    assert "not a regular file" in caplog.text


def test_a_gitignore_with_a_byte_order_mark_applies_its_first_pattern_as_git_does(tmp_path: Path) -> None:
    files = {"secrets/token.js": "const t = 1;\n", "src/app.js": "x\n"}
    make_tree(tmp_path, files)
    (tmp_path / ".gitignore").write_bytes(codecs.BOM_UTF8 + b"secrets/\n")
    git(tmp_path, "init", "-q")
    git_ignored = git(tmp_path, "check-ignore", "--stdin", stdin="\n".join(files)).split()
    assert git_ignored == ["secrets/token.js"]
    assert paths(tmp_path) == ["src/app.js"]


def test_an_ignore_file_negation_reincludes_inside_a_built_in_skipped_directory(tmp_path: Path) -> None:
    make_tree(tmp_path, {
        ".gitignore": "!vendor/patched-http/\n!.git/\n",
        "vendor/patched-http/index.js": "module.exports = patchedRequest;\n",
        "vendor/patched-http/lib/retry.js": "x\n",
        "vendor/other/index.js": "x\n",
        "vendor/readme.md": "x\n",
        "node_modules/left-pad/index.js": "x\n",
        "src/app.js": "x\n",
        ".git/config.json": "{}\n",
    })
    assert paths(tmp_path) == ["src/app.js", "vendor/patched-http/index.js", "vendor/patched-http/lib/retry.js"]
    # A re-included built-in directory by its own name works too.
    (tmp_path / ".gitignore").write_text("!node_modules/\n")
    assert "node_modules/left-pad/index.js" in paths(tmp_path)
    assert ".git/config.json" not in paths(tmp_path)


def test_secret_and_version_control_directories_are_never_reincluded(tmp_path: Path) -> None:
    make_tree(tmp_path, {".gitignore": "!.ssh/\n!.aws/config.json\n!.rag/\n",
                         ".ssh/known.md": "x\n", ".aws/config.json": "{}\n", ".rag/x.md": "x\n", "a.js": "x\n"})
    assert paths(tmp_path) == ["a.js"]


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
                                           ("utf-32-le", codecs.BOM_UTF32_LE)])
def test_utf16_and_utf32_files_with_a_byte_order_mark_are_text(tmp_path: Path, encoding: str, bom: bytes) -> None:
    text = "# Überblick\nThe retry budget is 3 attempts.\n"
    assert decode_text(bom + text.encode(encoding)) == text
    (tmp_path / "NOTES.md").write_bytes(bom + text.encode(encoding))
    engine = Engine.open(tmp_path, index_path=tmp_path / "idx" / "index.sqlite")
    try:
        stats = engine.update()
        assert stats.files == 1 and "binary" not in stats.skipped
        assert "retry budget" in engine.read_lines("NOTES.md", 1, 2)
    finally:
        engine.close()
    assert decode_text(b"\x00\x01binary") is None  # no mark: a NUL byte still means binary


def test_a_latin1_or_cp1252_file_is_read_as_such_not_as_replacement_characters(tmp_path: Path) -> None:
    """A legacy source file in Latin-1 (or Windows-1252) was decoded as UTF-8 with every accented
    letter turned into U+FFFD: ``menu_café`` could not be found, and was shown as ``menu_caf�``."""
    latin1 = "# Menu du café\ndef menu_café():\n    return 'crème brûlée — 5 €'\n"
    data = latin1.encode("cp1252")
    assert decode_text(data) == latin1
    assert decode_text("façade".encode("latin-1")) == "façade"
    # UTF-8 text with one stray byte stays UTF-8 (the stray byte replaced), not re-read as cp1252
    assert decode_text("naïve café".encode("utf-8") + b"\xff") == "naïve café\ufffd"
    (tmp_path / "menu.py").write_bytes(data)
    engine = Engine.open(tmp_path, index_path=tmp_path / "idx" / "index.sqlite")
    try:
        engine.update()
        assert "menu_café" in engine.read_lines("menu.py", 1, 3)
        assert [s.path for s in engine.retrieve("crème brûlée")] == ["menu.py"]
    finally:
        engine.close()


def test_a_pattern_git_never_matches_is_skipped_not_fatal(tmp_path: Path, caplog) -> None:
    """A lone ``!``, a trailing backslash or a reversed range in a ``.gitignore``: git accepts the file
    and those lines match nothing; pathspec refused the whole file, and the index build failed
    ("indexing failed: GitIgnorePatternError: Invalid git pattern: '!'")."""
    make_tree(tmp_path, {
        ".gitignore": "*.log\n!\nbuild/\nnotes\\\n[z-a].js\n!keep.log\n",
        "app.js": "x\n", "debug.log": "x\n", "keep.log": "x\n", "build/out.js": "x\n", "a.js": "x\n",
        "sub/.gitignore": "\\\n*.tmp.js\n", "sub/b.js": "x\n", "sub/c.tmp.js": "x\n",
    })
    found = paths(tmp_path)
    assert found == ["a.js", "app.js", "sub/b.js"]  # keep.log is re-included, but .log is not indexed
    git(tmp_path, "init", "-q")
    tracked = set(git(tmp_path, "ls-files", "--others", "--exclude-standard").split())
    assert set(found) <= tracked and not ({"debug.log", "build/out.js", "sub/c.tmp.js"} & tracked)
    assert "'!'" in caplog.text and ".gitignore" in caplog.text  # the skipped line is named in the log
    engine = Engine.open(tmp_path, index_path=tmp_path / "idx" / "index.sqlite")
    try:
        assert engine.update().files >= 3
    finally:
        engine.close()


@pytest.mark.parametrize("swap", ["fifo", "symlink"])
def test_a_file_swapped_after_the_walk_is_not_read_through(tmp_path: Path, swap: str) -> None:
    """Between the walk and the read a file became a FIFO (the read blocked forever: the index build
    hung) or a symbolic link to a file outside the repository (which was then read and indexed)."""
    from rag.ingest.prepare import Skipped, StructureParser, prepare_file
    from rag.secrets import LiteralRedactor

    outside = tmp_path / "outside.txt"
    outside.write_text("PRIVATE outside the repository\n")
    repo = tmp_path / "repo"
    make_tree(repo, {"a.js": "export const a = 1;\n", "b.js": "export const b = 2;\n"})
    report = walk(repo)
    (repo / "b.js").unlink()
    if swap == "fifo":
        os.mkfifo(repo / "b.js")
    else:
        (repo / "b.js").symlink_to(outside)
    box: dict = {}

    def prepare_all() -> None:
        box["results"] = [prepare_file(wf, indexed=None, literals=LiteralRedactor(set()), parser=StructureParser())
                          for wf in report.files]

    thread = threading.Thread(target=prepare_all, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so the test process can exit
        fd = os.open(repo / "b.js", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("reading a file that became a FIFO blocked")
    by_path = dict(zip([wf.path for wf in report.files], box["results"]))
    assert isinstance(by_path["b.js"], Skipped) and by_path["b.js"].reason == "unreadable"
    assert not isinstance(by_path["a.js"], Skipped)


def test_virtual_environments_and_installed_packages_are_not_the_repository(tmp_path: Path) -> None:
    make_tree(tmp_path, {
        "app.py": "print('hi')\n",
        "env/pyvenv.cfg": "home = /usr/bin\n",
        "env/lib/python3.11/site-packages/requests/api.py": "x\n",
        ".venv/lib/python3.11/site-packages/six.py": "x\n",
        "venv/bin/activate.sh": "x\n",
        "lib/python3.11/site-packages/flask/app.py": "x\n",
        ".tox/py311/lib/x.py": "x\n",
    })
    report = walk(tmp_path)
    assert [f.path for f in report.files] == ["app.py"]
    assert report.skipped["virtualenv"] == 1
    # the root itself may be a virtual environment someone asked to index on purpose
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert "app.py" in paths(tmp_path)


def test_walk_from_a_cli_run_inside_a_folder_holding_a_venv(tmp_path: Path) -> None:
    # `slackzilla index` without --repo, run where a virtual environment lives.
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(tmp_path / "myenv")], check=True, timeout=120)
    make_tree(tmp_path, {"main.py": "def main():\n    return 1\n"})
    assert paths(tmp_path) == ["main.py"]
