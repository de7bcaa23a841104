"""Issue 14, "Structure extraction (JS)": class bases, static/get/set flags, function-valued class
fields as methods, computed import specifiers, the module system per file, env defaults and
dynamic ``process.env[k]`` reads.

Each item through ``JsParser().parse`` on small sources (JS, TS, JSX, TSX), and the env and
``extends`` items also through a real index (``Engine.code_graph()`` and ``slackzilla code
env|symbols --json``). Expected values were read off the sources by hand.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli
from rag.engine import Engine
from rag.parse.parser import PARSE_VERSION, EnvVar, FileStructure, Import, JsParser

CLASSES_JS = """\
const EventEmitter = require('events');
class Store extends EventEmitter {
  static instances = 0;
  static create = function () { return new Store(); };
  handle = (req) => {
    return req;
  };
  #hidden = async () => 1;
  label = 'store';
  static get count() { return Store.instances; }
  get size() { return 0; }
  set size(value) {}
  static reset() {}
  get() {}
}
const Cache = class extends events.EventEmitter {};
class Mixed extends mixin(Base, Other) {}
class Plain {}
"""

CLASSES_TS = """\
import { Base } from './base';
export abstract class Repo<T> extends Base<T> implements Store, Closeable {
  public static readonly make = (n: number): Repo<number> => null!;
  private get total(): number { return 1; }
  static set limit(v: number) {}
  declare name: string;
  abstract find(id: string): T;
}
interface Named extends HasName, HasId<string> {}
"""


@pytest.fixture(scope="module")
def parser() -> JsParser:
    return JsParser()


def _members(structure: FileStructure) -> dict[tuple[str, str | None], tuple]:
    return {(d.name, d.accessor): (d.kind, d.static, d.parent, d.start, d.end)
            for d in structure.definitions if d.kind in ("method", "field")}


# ---- extends -------------------------------------------------------------------------------


def test_class_extends_bases_js(parser):
    structure = parser.parse("lib/store.js", CLASSES_JS)
    classes = {d.name: (d.bases, d.start, d.end) for d in structure.definitions if d.kind == "class"}
    assert classes == {
        "Store": (["EventEmitter"], 2, 15),
        "Cache": (["events.EventEmitter"], 16, 16),  # class expression bound to a name
        "Mixed": (["mixin(Base, Other)"], 17, 17),  # a call as the base: its text
        "Plain": ([], 18, 18),
    }
    assert all(d.bases == [] for d in structure.definitions if d.kind != "class")


def test_class_extends_bases_ts_drop_type_arguments_and_implements(parser):
    structure = parser.parse("src/repo.ts", CLASSES_TS)
    bases = {d.name: (d.kind, d.bases) for d in structure.definitions if d.kind in ("class", "interface")}
    assert bases == {"Repo": ("class", ["Base"]), "Named": ("interface", ["HasName", "HasId<string>"])}


# ---- static / get / set --------------------------------------------------------------------


def test_static_getter_setter_flags_js(parser):
    members = _members(parser.parse("lib/store.js", CLASSES_JS))
    assert members[("instances", None)] == ("field", True, "Store", 3, 3)
    assert members[("count", "get")] == ("method", True, "Store", 10, 10)
    assert members[("size", "get")] == ("method", False, "Store", 11, 11)
    assert members[("size", "set")] == ("method", False, "Store", 12, 12)
    assert members[("reset", None)] == ("method", True, "Store", 13, 13)
    assert members[("get", None)] == ("method", False, "Store", 14, 14)  # a method *named* get
    assert members[("label", None)] == ("field", False, "Store", 9, 9)


def test_static_getter_setter_flags_ts_with_modifiers(parser):
    members = _members(parser.parse("src/repo.ts", CLASSES_TS))
    assert members[("total", "get")] == ("method", False, "Repo", 4, 4)  # private get
    assert members[("limit", "set")] == ("method", True, "Repo", 5, 5)  # static set
    assert members[("name", None)] == ("field", False, "Repo", 6, 6)
    assert members[("find", None)] == ("method", False, "Repo", 7, 7)


def test_object_literal_accessors(parser):
    structure = parser.parse("o.js", "const config = {\n  get port() { return 1; },\n  set port(v) {},\n};\n")
    assert [(d.name, d.kind, d.accessor, d.static, d.parent) for d in structure.definitions] == [
        ("port", "method", "get", False, "config"), ("port", "method", "set", False, "config")]


# ---- function-valued class fields ----------------------------------------------------------


def test_arrow_and_function_class_fields_are_methods(parser):
    members = _members(parser.parse("lib/store.js", CLASSES_JS))
    assert members[("handle", None)] == ("method", False, "Store", 5, 7)
    assert members[("create", None)] == ("method", True, "Store", 4, 4)  # static create = function () {}
    assert members[("#hidden", None)] == ("method", False, "Store", 8, 8)
    ts = _members(parser.parse("src/repo.ts", CLASSES_TS))
    assert ts[("make", None)] == ("method", True, "Repo", 3, 3)  # public static readonly make = (…) => …


def test_class_fields_in_jsx_and_tsx(parser):
    jsx = parser.parse("src/Box.jsx", "class Box extends React.Component {\n  onClick = () => this.setState({});\n"
                                      "  render() { return <b onClick={this.onClick}>x</b>; }\n}\n")
    assert [(d.name, d.kind, d.parent, d.bases) for d in jsx.definitions] == [
        ("Box", "class", None, ["React.Component"]), ("onClick", "method", "Box", []),
        ("render", "method", "Box", [])]
    tsx = parser.parse("src/Box.tsx", "export class Box extends Component<P> {\n  static defaultProps = {};\n"
                                      "  onClick = (e: Event): void => {};\n}\n")
    assert [(d.name, d.kind, d.static, d.bases) for d in tsx.definitions] == [
        ("Box", "class", False, ["Component"]), ("defaultProps", "field", True, []),
        ("onClick", "method", False, [])]


# ---- computed import specifiers -------------------------------------------------------------


def test_computed_require_and_import_are_dynamic_imports(parser):
    source = ("const plugin = require(process.env.PLUGIN);\n"
              "async function load(name) {\n"
              "  const mod = await import(process.env.MODULE_PATH);\n"
              "  const local = require(name);\n"
              "  return require(`./drivers/${name}`) || require('./drivers/' +\n    name);\n"
              "}\n"
              "const fixed = require('./fixed');\n")
    structure = parser.parse("src/loader.js", source)
    assert [(i.spec, i.line, i.kind, i.names, i.expression) for i in structure.imports] == [
        ("process.env.PLUGIN", 1, "dynamic", ["plugin"], "process.env.PLUGIN"),
        ("process.env.MODULE_PATH", 3, "dynamic", ["mod"], "process.env.MODULE_PATH"),
        ("name", 4, "dynamic", ["local"], "name"),
        ("`./drivers/${name}`", 5, "dynamic", [], "`./drivers/${name}`"),
        ("'./drivers/' + name", 5, "dynamic", [], "'./drivers/' + name"),  # whitespace collapsed
        ("./fixed", 8, "require", ["fixed"], None),  # line 5 spans two lines
    ]
    # the env var read inside the specifier is an env var access too
    assert [(v.name, v.line) for v in structure.env_vars] == [("PLUGIN", 1), ("MODULE_PATH", 3)]
    from rag.parse.parser import resolve_imports
    resolve_imports({"src/loader.js": structure}, known_paths=["src/fixed.js", "src/drivers/pg.js"])
    assert [i.resolved for i in structure.imports] == [None, None, None, None, None, "src/fixed.js"]


def test_literal_import_keeps_no_expression(parser):
    structure = parser.parse("a.mjs", "const m = await import('./m.js');\n")
    assert structure.imports == [Import(spec="./m.js", line=1, kind="dynamic", names=["m"])]
    assert structure.imports[0].expression is None


# ---- module system ------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "source", "expected"), [
    ("a.js", "import x from 'x';\nx();\n", "esm"),
    ("a.js", "export const a = 1;\n", "esm"),
    ("a.ts", "export {};\n", "esm"),  # no export record, still a module
    ("a.js", "const x = require('x');\n", "commonjs"),
    ("a.js", "module.exports = function () {};\n", "commonjs"),
    ("a.js", "exports.handler = () => {};\n", "commonjs"),
    ("a.js", "module.exports.x = 1;\n", "commonjs"),
    ("a.js", "const p = require(process.env.P);\n", "commonjs"),  # computed require is still CommonJS
    ("a.ts", "import fs = require('fs');\n", "commonjs"),
    ("a.jsx", "import React from 'react';\nconst x = require('x');\n", "mixed"),
    ("a.tsx", "export const C = () => <b/>;\nmodule.exports.C = C;\n", "mixed"),
    ("a.js", "const m = import('./m.js');\nconsole.log(1);\n", "unknown"),  # import() is valid in both
    ("a.js", "", "unknown"),
    ("a.mjs", "console.log(1);\n", "esm"),  # Node decides by extension
    ("a.cjs", "console.log(1);\n", "commonjs"),
    ("a.cjs", "import x from 'x';\n", "esm"),  # syntax wins over the extension
])
def test_module_system_per_file(parser, path, source, expected):
    assert parser.parse(path, source).module_system == expected


def test_module_system_survives_error_recovery(parser):
    structure = parser.parse("b.js", "const a = require('a');\nfunction ( {\n")
    assert (structure.has_error, structure.module_system) == (True, "commonjs")


# ---- env defaults -------------------------------------------------------------------------------


ENV_JS = """\
const port = process.env.PORT || 8080;
const host = process.env.HOST ?? '0.0.0.0';
const { LOG_LEVEL = 'info', TIMEOUT_MS: timeout = 5000, TOKEN } = process.env;
const debug = process.env['DEBUG'] || false;
const url = process.env.PRIMARY_URL || process.env.FALLBACK_URL || 'http://localhost';
const cast = Number((process.env.RETRIES) || -1);
const computed = process.env.SECRET || readSecret();
const key = pick('X');
const value = process.env[key];
const prefixed = process.env[`${prefix}_URL`] || '';
for (const k of names) { out[k] = process.env[k.toUpperCase()]; }
"""


def test_env_defaults(parser):
    structure = parser.parse("src/config.js", ENV_JS)
    named = [(v.name, v.line, v.default) for v in structure.env_vars if not v.dynamic]
    assert named == [
        ("PORT", 1, "8080"),
        ("HOST", 2, "'0.0.0.0'"),  # the literal as written, quotes kept
        ("LOG_LEVEL", 3, "'info'"),  # const { X = 'info' } = process.env
        ("TIMEOUT_MS", 3, "5000"),  # const { X: local = 5000 } = process.env
        ("TOKEN", 3, None),
        ("DEBUG", 4, "false"),
        ("PRIMARY_URL", 5, "'http://localhost'"),  # end of the || chain
        ("FALLBACK_URL", 5, "'http://localhost'"),
        ("RETRIES", 6, "-1"),  # through parentheses
        ("SECRET", 7, None),  # a call is not a literal default
    ]


def test_env_defaults_after_a_number_conversion(parser):
    structure = parser.parse("a.js", "const a = Number(process.env.A) || 3000;\n"
                                     "const b = parseInt(process.env.B, 10) ?? 10;\n"
                                     "const c = Math.max(process.env.C) || 1;\n"  # not a conversion
                                     "const d = parseInt(10, process.env.D) || 2;\n")  # not the converted value
    assert [(v.name, v.default) for v in structure.env_vars] == [("A", "3000"), ("B", "10"), ("C", None), ("D", None)]


def test_env_defaults_ts_casts(parser):
    structure = parser.parse("src/config.ts", "const p = (process.env.PORT as string) ?? '3000';\n"
                                              "const h = process.env.HOST! || 'x';\n")
    assert [(v.name, v.default) for v in structure.env_vars] == [("PORT", "'3000'"), ("HOST", "'x'")]


# ---- dynamic process.env[k] ------------------------------------------------------------------


def test_dynamic_env_access(parser):
    structure = parser.parse("src/config.js", ENV_JS)
    dynamic = [(v.name, v.line, v.expression, v.default) for v in structure.env_vars if v.dynamic]
    assert dynamic == [
        ("*", 9, "key", None),
        ("*", 10, "`${prefix}_URL`", "''"),
        ("*", 11, "k.toUpperCase()", None),
    ]
    # a literal key (also a plain template) stays a named read
    plain = parser.parse("a.js", "process.env[`PLAIN`]; process.env['Q'];\n").env_vars
    assert plain == [EnvVar("PLAIN", 1), EnvVar("Q", 1)]


def test_a_top_level_constant_names_the_variable(parser):
    """``process.env[KEY]`` with ``const KEY = 'X'`` at the top reads X (JS and TS, declared before or
    after); a parameter named KEY, a non-string or a twice-bound name stays dynamic."""
    source = (
        "const KEY = 'API_TOKEN';\n"
        "function read() { return process.env[KEY] || ''; }\n"
        "function pick(KEY) { return process.env[KEY]; }\n"
        "const LATER = process.env[AFTER];\n"
        "const N = 3; process.env[N];\n"
        "var TWICE = 'A'; var TWICE2 = 'B';\n"
        "let AFTER = \"HOME_DIR\";\n"
    )
    for path in ("src/a.js", "src/a.ts"):
        found = [(v.name, v.line, v.default, v.dynamic) for v in parser.parse(path, source).env_vars]
        assert found == [("API_TOKEN", 2, "''", False), ("*", 3, None, True), ("HOME_DIR", 4, None, False),
                         ("*", 5, None, True)], path
    twice = parser.parse("b.js", "let K = 'A';\nK = 'B';\nlet K2 = 'C', K2b = 1;\nprocess.env[K2];\n").env_vars
    assert twice == [EnvVar("C", 4)]


def test_json_round_trip_keeps_new_fields_and_refuses_version_1(parser):
    for path, source in (("lib/store.js", CLASSES_JS), ("src/repo.ts", CLASSES_TS), ("src/config.js", ENV_JS)):
        structure = parser.parse(path, source)
        data = json.loads(json.dumps(structure.to_json()))
        assert data["version"] == PARSE_VERSION == 13
        again = FileStructure.from_json(data)
        assert again == structure and again.to_json() == structure.to_json()
        for name in ("imports", "exports", "definitions", "calls", "env_vars", "routes", "path_refs"):
            assert data[name] == [asdict(item) for item in getattr(structure, name)]  # fast to_json == asdict
    bases = parser.parse("lib/store.js", CLASSES_JS)
    bases.to_json()["definitions"][0]["bases"].append("mutated")  # to_json copies lists
    assert bases.definitions[0].bases == ["EventEmitter"]
    env = parser.parse("src/config.js", ENV_JS).to_json()
    assert env["module_system"] == "unknown"
    assert env["env_vars"][0] == {"name": "PORT", "line": 1, "default": "8080", "dynamic": False, "expression": None}
    old = env | {"version": 1}
    for item in old["env_vars"]:
        for key in ("default", "dynamic", "expression"):
            item.pop(key)
    with pytest.raises(ValueError, match="version"):
        FileStructure.from_json(old)  # the engine re-parses the file


# ---- through a real index ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("gaps")
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "config.js").write_text(ENV_JS, encoding="utf-8")
    (repo / "src" / "store.js").write_text(CLASSES_JS + "module.exports = { Store };\n", encoding="utf-8")
    (repo / "src" / "repo.ts").write_text(CLASSES_TS, encoding="utf-8")
    (repo / "src" / "base.ts").write_text("export class Base<T> {}\n", encoding="utf-8")
    return repo, root / "index.sqlite"


def _cli(indexed, *args: str):
    repo, index = indexed
    result = CliRunner().invoke(cli, [*args, "--repo", str(repo), "--index", str(index)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_engine_code_graph_has_bases_defaults_dynamic_reads_and_module_system(indexed):
    repo, index = indexed
    engine = Engine.open(repo, index_path=index)
    try:
        engine.update()
        graph = engine.code_graph()
        store = graph.structure("src/store.js")
        repo_ts = graph.structure("src/repo.ts")
        config = graph.structure("src/config.js")
        assert store is not None and repo_ts is not None and config is not None
        classes = {d.name: d.bases for d in store.definitions if d.kind == "class"}
        assert classes == {"Store": ["EventEmitter"], "Cache": ["events.EventEmitter"],
                           "Mixed": ["mixin(Base, Other)"], "Plain": []}
        assert next(d for d in repo_ts.definitions if d.name == "Repo").bases == ["Base"]
        handle = next(d for d in store.definitions if d.name == "handle")
        assert (handle.kind, handle.parent) == ("method", "Store")
        assert (store.module_system, repo_ts.module_system, config.module_system) == ("commonjs", "esm", "unknown")
        assert {v.name: v.default for v in config.env_vars if not v.dynamic}["PORT"] == "8080"
        assert [v.expression for v in config.env_vars if v.dynamic] == ["key", "`${prefix}_URL`", "k.toUpperCase()"]
        env = graph.environment_variables()
        assert env["PORT"] == [("src/config.js", 1)]
        assert env["*"] == [("src/config.js", 9), ("src/config.js", 10), ("src/config.js", 11)]
        assert "env: PORT (line 1)" in graph.summary("src/config.js")
    finally:
        engine.close()


def test_cli_code_env_lists_dynamic_reads(indexed):
    records = _cli(indexed, "code", "env", "--json")
    found = {(r["name"], r["path"], r["line"]) for r in records}
    assert {("PORT", "src/config.js", 1), ("LOG_LEVEL", "src/config.js", 3), ("*", "src/config.js", 9),
            ("*", "src/config.js", 11)} <= found
    # "which files read the environment": the dynamic reads are among them
    assert {r["path"] for r in records if r["name"] == "*"} == {"src/config.js"}


def test_cli_code_symbols_lists_arrow_fields_as_methods(indexed):
    records = _cli(indexed, "code", "symbols", "--json")
    store = {(r["name"], r["kind"], r["parent"], r["line"]) for r in records if r["path"] == "src/store.js"}
    assert {("Store", "class", None, 2), ("handle", "method", "Store", 5), ("create", "method", "Store", 4),
            ("instances", "field", "Store", 3)} <= store


RUNTIME_ENV_TS = """\
const port = import.meta.env.VITE_PORT || '5173';
const mode = import.meta.env['MODE'];
const { VITE_API, VITE_DEBUG = 'false' } = import.meta.env;
export const env = envSchema.parse(import.meta.env);
const token = Deno.env.get('DENO_TOKEN') ?? 'none';
const region = Deno.env.get(name);
const all = Deno.env.toObject();
if (Deno.env.has('DENO_FLAG')) {}
Deno.env.set('WRITTEN', '1');
const key = Bun.env.BUN_KEY;
const { BUN_A } = Bun.env;
const meta = import.meta.url;
"""


def test_env_reads_of_vite_deno_and_bun(parser):
    """``import.meta.env`` (Vite), ``Deno.env`` and ``Bun.env`` are read like ``process.env``."""
    found = parser.parse("src/env.ts", RUNTIME_ENV_TS).env_vars
    named = [(v.name, v.line, v.default) for v in found if not v.dynamic]
    assert named == [("VITE_PORT", 1, "'5173'"), ("MODE", 2, None), ("VITE_API", 3, None),
                     ("VITE_DEBUG", 3, "'false'"), ("DENO_TOKEN", 5, "'none'"), ("DENO_FLAG", 8, None),
                     ("BUN_KEY", 10, None), ("BUN_A", 11, None)]
    dynamic = [(v.line, v.expression) for v in found if v.dynamic]
    assert dynamic == [(4, "import.meta.env"), (6, "name"), (7, "Deno.env")]
