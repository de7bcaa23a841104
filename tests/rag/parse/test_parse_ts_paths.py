"""TypeScript path aliases: ``compilerOptions.paths`` / ``baseUrl`` of ``tsconfig.json`` and
``jsconfig.json`` resolve non-relative imports (``@/lib/db``, ``~/core/x``) to repository files.

Through :class:`rag.parse.tsconfig.PathAliases` and :func:`resolve_imports`, and through a real
index (``Engine.code_graph()`` and ``slackzilla code deps --json``). Expected values were read
off the sources by hand.
"""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bot.cli import cli
from rag.engine import Engine
from rag.parse.parser import Import, JsParser, resolve_imports
from rag.parse.tsconfig import PathAliases, is_config_path

# JSONC as tsc accepts it: comments, trailing commas, a glob with "/*" inside a string.
ROOT_CONFIG = """\
{
  // shared options
  "compilerOptions": {
    "baseUrl": ".",
    /* the aliases */
    "paths": {
      "@/*": ["./src/*"],
      "#db": ["src/lib/db.ts",],
      "~shared/*": ["missing/*", "packages/shared/src/*"],
    },
  },
}
"""
APP_CONFIG = '{ "extends": "../../tsconfig", "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["./src/*"] } } }'
WORKER_CONFIG = '{ "extends": "../../tsconfig.json" }'
WEB_CONFIG = '{ "files": [], "references": [{ "path": "./tsconfig.app.json" }] }'
WEB_APP_CONFIG = '{ "compilerOptions": { "baseUrl": "src" } }'

FILES = [
    "src/index.ts", "src/lib/db.ts", "src/lib/index.ts", "src/routes/users.ts",
    "packages/shared/src/util.ts",
    "apps/api/src/main.ts", "apps/api/src/config.ts",
    "apps/web/src/main.tsx", "apps/web/src/components/Button.tsx", "apps/worker/src/job.ts",
]


def _aliases() -> PathAliases:
    return PathAliases.from_configs({
        "tsconfig.json": ROOT_CONFIG,
        "apps/api/tsconfig.json": APP_CONFIG,
        "apps/worker/tsconfig.json": WORKER_CONFIG,
        "apps/web/tsconfig.json": WEB_CONFIG,
        "apps/web/tsconfig.app.json": WEB_APP_CONFIG,
    })


def _resolved(from_path: str, spec: str) -> str | None:
    structures = {from_path: JsParser().parse(from_path, f"import x from '{spec}';\n")}
    resolve_imports(structures, known_paths=FILES, aliases=_aliases())
    return structures[from_path].imports[0].resolved


def test_config_paths():
    assert is_config_path("tsconfig.json") and is_config_path("apps/web/tsconfig.app.json")
    assert is_config_path("jsconfig.json")
    assert not is_config_path("src/tsconfig.ts") and not is_config_path("package.json")


def test_paths_resolve_to_repository_files():
    assert _resolved("src/index.ts", "@/lib/db") == "src/lib/db.ts"
    assert _resolved("src/index.ts", "@/lib/db.js") == "src/lib/db.ts"  # nodenext: `.js` names the `.ts`
    assert _resolved("src/index.ts", "@/lib") == "src/lib/index.ts"
    assert _resolved("src/routes/users.ts", "#db") == "src/lib/db.ts"  # an exact (non-glob) alias
    assert _resolved("src/index.ts", "~shared/util") == "packages/shared/src/util.ts"  # second target
    assert _resolved("src/index.ts", "src/lib/db") == "src/lib/db.ts"  # baseUrl "."
    # bare package names stay unresolved
    assert _resolved("src/index.ts", "express") is None
    assert _resolved("src/index.ts", "@/missing") is None


def test_nearest_config_applies_with_its_own_directory():
    # apps/api/tsconfig.json maps "@/*" to ITS src (its own baseUrl), not the root's
    assert _resolved("apps/api/src/main.ts", "@/config") == "apps/api/src/config.ts"
    # its own `paths` replaces the extended config's (tsc merges per option): no "#db" there
    assert _resolved("apps/api/src/main.ts", "#db") is None
    # a config that only extends inherits the root's aliases, relative to the root
    assert _resolved("apps/worker/src/job.ts", "#db") == "src/lib/db.ts"
    assert _resolved("apps/worker/src/job.ts", "@/lib/db") == "src/lib/db.ts"
    # a solution-style config (no options, `references`) takes the referenced config's baseUrl
    assert _resolved("apps/web/src/main.tsx", "components/Button") == "apps/web/src/components/Button.tsx"


def test_without_aliases_nothing_changes():
    structures = {"src/index.ts": JsParser().parse("src/index.ts", "import { db } from '@/lib/db';\n")}
    resolve_imports(structures, known_paths=FILES)
    assert structures["src/index.ts"].imports == [
        Import(spec="@/lib/db", line=1, kind="esm", names=["db"], resolved=None)]


def test_malformed_config_is_ignored():
    aliases = PathAliases.from_configs({"tsconfig.json": '{ "compilerOptions": { "paths": ', "a/tsconfig.json": "[1]"})
    structures = {"src/index.ts": JsParser().parse("src/index.ts", "import { db } from '@/lib/db';\n")}
    resolve_imports(structures, known_paths=FILES, aliases=aliases)
    assert structures["src/index.ts"].imports[0].resolved is None


def test_aliases_through_the_index(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "src" / "lib").mkdir(parents=True)
    (repo / "tsconfig.json").write_text(ROOT_CONFIG)
    (repo / "src" / "lib" / "db.ts").write_text("export const db = {};\n")
    (repo / "src" / "index.ts").write_text("import { db } from '@/lib/db.js';\nexport { db };\n")
    (repo / "src" / "server.ts").write_text("import { db } from '#db';\nexport const serve = () => db;\n")
    index = tmp_path / "index.sqlite"
    engine = Engine.open(repo, index_path=index)
    try:
        engine.update()
        graph = engine.code_graph()
        assert graph.dependants("src/lib/db.ts") == ["src/index.ts", "src/server.ts"]
        assert graph.dependencies("src/index.ts") == ["src/lib/db.ts"]
    finally:
        engine.close()
    result = CliRunner().invoke(cli, ["code", "deps", "src/lib/db.ts", "--json", "--repo", str(repo),
                                      "--index", str(index)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["dependants"] == ["src/index.ts", "src/server.ts"]
