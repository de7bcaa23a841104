"""``slackzilla code …`` and ``slackzilla context …`` on the code fixture repository (real CLI, real index)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "code-repo"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("code") / "repo"
    shutil.copytree(FIXTURE, dest)
    return dest


def run(repo: Path, *args: str):
    result = CliRunner().invoke(cli, [*args, "--repo", str(repo), "--index", str(repo.parent / "i.sqlite")])
    return result


def test_code_routes_json_has_full_paths(repo):
    result = run(repo, "code", "routes", "--json")
    assert result.exit_code == 0, result.output
    routes = {(r["path"], r["line"], r["method"], r["route"]) for r in json.loads(result.stdout)}
    assert ("src/routes/users.js", 7, "GET", "/api/users") in routes


def test_code_symbols_json_shape(repo):
    records = json.loads(run(repo, "code", "symbols", "--json").stdout)
    create = next(r for r in records if r["name"] == "createUser")
    assert (create["path"], create["line"], create["end"]) == ("src/routes/users.js", 14, 17)
    assert create["kind"] in {"function", "arrow"}


def test_code_env_lists_destructured_names(repo):
    records = json.loads(run(repo, "code", "env", "--json").stdout)
    found = {(r["name"], r["path"], r["line"]) for r in records}
    assert {("DATABASE_URL", "src/server.js", 8), ("API_KEY", "src/server.js", 8), ("DB_HOST", "src/lib/db.js", 1)} <= found


def test_code_env_shows_what_a_dynamic_read_reads_through(tmp_path):
    root = tmp_path / "env-repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "run.js").write_text(
        "const key = pick()\nconst one = process.env[key]\n"
        "spawn('node', [], { env: { ...process.env, A: '1' } })\n"
        "if (process.env && process.env.DEBUG) {}\n", encoding="utf-8")
    records = json.loads(run(root, "code", "env", "--json").stdout)
    assert records == [
        {"name": "*", "path": "src/run.js", "line": 2, "expression": "key"},
        {"name": "*", "path": "src/run.js", "line": 3, "expression": "process.env"},
        {"name": "DEBUG", "path": "src/run.js", "line": 4},  # `process.env && …` only checks it exists
    ]
    lines = run(root, "code", "env").stdout.splitlines()
    assert [line.split()[:2] for line in lines[:2]] == [["*", "(key)"], ["*", "(process.env)"]]


def test_code_deps(repo):
    data = json.loads(run(repo, "code", "deps", "src/lib/store.js", "--json").stdout)
    assert data == {"dependencies": [], "dependants": ["src/routes/users.js"]}


def test_code_deps_unknown_path_is_a_usage_error(repo):
    result = run(repo, "code", "deps", "src/nope.js")
    assert result.exit_code == 2 and "not an indexed file" in result.output


@pytest.mark.parametrize("given", ["./src/lib/store.js", "src/routes/../lib/store.js", ".//src/./lib/store.js",
                                   "{repo}/src/lib/store.js", "{repo}/src/../src/lib/store.js"])
def test_code_deps_takes_a_path_as_a_shell_gives_it(repo, given):
    """``./lib/x.js`` (tab completion) and ``$PWD/lib/x.js`` were "not an indexed file of this repository";
    they name the repository-relative path the index stores."""
    result = run(repo, "code", "deps", given.format(repo=repo), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"dependencies": [], "dependants": ["src/routes/users.js"]}


def test_code_deps_through_a_link_to_the_repository(repo, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(repo)
    result = run(repo, "code", "deps", str(link / "src" / "lib" / "store.js"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["dependants"] == ["src/routes/users.js"]


@pytest.mark.parametrize("given, said", [("{outside}/store.js", "is outside the repository"),
                                         ("../repo/src/lib/store.js", "leads out of the repository"),
                                         ("src/../../store.js", "leads out of the repository")])
def test_code_deps_path_out_of_the_repository_is_a_usage_error(repo, tmp_path, given, said):
    result = run(repo, "code", "deps", given.format(outside=tmp_path), "--json")
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output


def test_context_respects_the_budget(repo):
    data = json.loads(run(repo, "context", "how is a user created?", "--budget", "300", "--json").stdout)
    assert data["budget"] == 300 and 0 < data["tokens_used"] <= 300
    assert "src/routes/users.js" in data["files"]
