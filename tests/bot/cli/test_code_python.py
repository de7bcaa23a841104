"""``slackzilla code …`` on Python (tests/fixtures/py-repo/) and on repositories without structure (issue 15)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "py-repo"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("py") / "repo"
    shutil.copytree(FIXTURE, dest)
    return dest


def run(repo: Path, *args: str):
    return CliRunner().invoke(cli, [*args, "--repo", str(repo), "--index", str(repo.parent / "i.sqlite")])


def test_routes_json_have_mount_prefixes_and_handlers(repo):
    result = run(repo, "code", "routes", "--json")
    assert result.exit_code == 0, result.output
    routes = {(r["method"], r["route"], r["path"], r["line"], r["handler"]) for r in json.loads(result.stdout)}
    assert {("GET", "/auth/login", "src/shop/auth.py", 19, "login"),
            ("GET", "/admin/stats", "src/shop/admin.py", 7, "stats"),
            ("PUT", "/items/{item_id}", "src/shop/api/routers/items.py", 11, "update_item"),
            ("ANY", "/blog/post/<slug:slug>/", "site/blog/urls.py", 8, "views.PostDetail"),
            ("USE", "/blog/", "site/urls.py", 6, None)} <= routes
    assert "note:" not in result.stderr


def test_routes_text_names_the_handler(repo):
    result = run(repo, "code", "routes")
    assert result.exit_code == 0
    line = next(ln for ln in result.stdout.splitlines() if "/auth/logout" in ln)
    assert line.split() == ["POST", "/auth/logout", "src/shop/auth.py:25", "→", "logout"]


def test_env_lists_os_environ_getenv_and_settings_fields(repo):
    records = json.loads(run(repo, "code", "env", "--json").stdout)
    found = {(r["name"], r["path"], r["line"]) for r in records}
    assert {("SECRET_KEY", "src/shop/app.py", 14), ("PORT", "src/shop/app.py", 43),
            ("SHOP_DATABASE_URL", "src/shop/settings.py", 11), ("LEGACY_PORT", "src/shop/settings.py", 20),
            ("DJANGO_SETTINGS_MODULE", "site/manage.py", 6)} <= found
    assert "PATH_INFO" not in {r["name"] for r in records}


def test_symbols_have_decorated_ranges_and_class_parents(repo):
    records = json.loads(run(repo, "code", "symbols", "--json").stdout)
    logout = next(r for r in records if r["name"] == "logout")
    assert (logout["path"], logout["line"], logout["end"], logout["kind"]) == ("src/shop/auth.py", 25, 29, "function")
    total = next(r for r in records if r["name"] == "total")
    assert (total["kind"], total["parent"], total["line"], total["end"]) == ("method", "Order", 13, 14)


def test_deps_resolves_python_imports(repo):
    data = json.loads(run(repo, "code", "deps", "src/shop/settings.py", "--json").stdout)
    assert data == {"dependencies": [], "dependants": ["src/shop/app.py", "src/shop/core/db.py"]}
    text = run(repo, "code", "deps", "src/shop/settings.py")
    assert text.stdout.splitlines()[:2] == ["dependencies:", "  (none)"]


def test_deps_of_a_file_without_structure_says_so(repo):
    result = run(repo, "code", "deps", "README.md")
    assert result.exit_code == 0
    assert "note: README.md has no code structure: its file type is not parsed" in result.stderr
    assert "Python" in result.stderr


def test_context_gets_python_code_contexts(repo):
    data = json.loads(run(repo, "context", "how does login work?", "--json").stdout)
    assert data["code_contexts"] > 0
    assert "src/shop/auth.py" in data["files"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("command", ["routes", "env", "symbols"])
def test_a_repository_without_supported_languages_gets_a_note(tmp_path, command):
    repo = _write(tmp_path / "repo", {"README.md": "# notes\n", "run.sh": "echo hi\n"})
    result = run(repo, "code", command, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []
    assert "no indexed file is in a language with code structure" in result.stderr
    assert "Python" in result.stderr and "Go" in result.stderr


def test_definitions_only_languages_list_symbols_and_explain_empty_routes(tmp_path):
    repo = _write(tmp_path / "repo", {"main.go": "package main\n\nfunc main() {}\n"})
    symbols = json.loads(run(repo, "code", "symbols", "--json").stdout)
    assert [(s["path"], s["name"], s["kind"], s["line"]) for s in symbols] == [("main.go", "main", "function", 3)]
    result = run(repo, "code", "routes")
    assert result.exit_code == 0 and result.stdout == ""
    assert "parsed for definitions only" in result.stderr
    deps = run(repo, "code", "deps", "main.go")
    assert "Go files are parsed for definitions only" in deps.stderr


def test_python_files_without_routes_say_nothing_was_found(tmp_path):
    repo = _write(tmp_path / "repo", {"lib.py": "def f():\n    return 1\n"})
    result = run(repo, "code", "routes")
    assert result.exit_code == 0
    assert "note: no routes found in the 1 parsed files (Python 1)" in result.stderr
