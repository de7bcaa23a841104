"""The tree-sitter parser on the fixture repository tests/fixtures/code-repo/.

Every construct of issue 3 is asserted with its line numbers. The expected
values were read off the fixture files by hand, not copied from the parser.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.parse.parser import (
    PARSE_VERSION,
    PARSEABLE_EXTENSIONS,
    Call,
    Definition,
    EnvVar,
    Export,
    FileStructure,
    Import,
    JsParser,
    PathRef,
    Route,
    language_for_path,
    parse_source,
    resolve_imports,
    resolve_relative,
)

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "code-repo"


def _repo_paths() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def parsed() -> dict[str, FileStructure]:
    parser = JsParser()
    structures = {
        path: parser.parse(path, (REPO / path).read_text(encoding="utf-8"))
        for path in _repo_paths()
        if path.rsplit(".", 1)[-1] in PARSEABLE_EXTENSIONS
    }
    resolve_imports(structures, known_paths=_repo_paths())
    return structures


def _defs(structure: FileStructure) -> set[tuple]:
    return {(d.name, d.kind, d.start, d.end, d.parent) for d in structure.definitions}


def _routes(structure: FileStructure) -> list[tuple]:
    return [(r.method, r.path, r.line, r.router, r.match, r.source) for r in structure.routes]


# ---- imports ------------------------------------------------------------------------


def test_require_at_top_level_inline_and_lazily_inside_a_function(parsed):
    server = parsed["src/server.js"]
    assert [(i.spec, i.line, i.kind, i.names, i.resolved) for i in server.imports] == [
        ("path", 3, "require", ["path"], None),
        ("express", 4, "require", ["express"], None),
        ("./routes/users", 5, "require", ["usersRouter"], "src/routes/users.js"),
        ("./lib/db", 6, "require", ["connect"], "src/lib/db.js"),
        ("./routes/admin", 15, "require", [], "src/routes/admin.js"),  # inline in app.use(...)
    ]
    users = parsed["src/routes/users.js"]
    lazy = [i for i in users.imports if i.spec == "../lib/audit"]
    assert lazy == [Import(spec="../lib/audit", line=20, kind="require", names=["audit"], resolved="src/lib/audit.js")]
    admin = parsed["src/routes/admin.js"]
    assert admin.imports == [Import(spec="express", line=1, kind="require", names=["Router"], resolved=None)]


def test_esm_side_effect_reexport_and_dynamic_imports(parsed):
    app = parsed["src/web/App.jsx"]
    assert [(i.spec, i.line, i.kind, i.names, i.resolved) for i in app.imports] == [
        ("react", 1, "esm", ["React", "useState"], None),
        ("../util", 2, "esm", ["fmt"], "src/util/index.ts"),  # directory → index.ts
        ("./styles.css", 3, "side_effect", [], None),  # no such file: unresolved but recorded
    ]
    index = parsed["src/web/index.mjs"]
    assert [(i.spec, i.line, i.kind, i.names, i.resolved) for i in index.imports] == [
        ("./App.jsx", 1, "reexport", ["*"], "src/web/App.jsx"),
        ("./App.jsx", 2, "reexport", ["default"], "src/web/App.jsx"),
        ("../util/index.ts", 3, "reexport", ["*"], "src/util/index.ts"),
        ("./config.mjs", 5, "dynamic", ["config"], "src/web/config.mjs"),  # top-level await import()
    ]


# ---- exports ------------------------------------------------------------------------


def test_commonjs_export_forms(parsed):
    assert parsed["src/routes/users.js"].exports == [Export("router", 26, "cjs_default")]
    assert parsed["src/routes/admin.js"].exports == [Export("admin", 9, "cjs_default")]
    assert parsed["src/lib/store.js"].exports == [
        Export("UserStore", 49, "cjs_named"),
        Export("countUp", 49, "cjs_named"),
        Export("formatUser", 49, "cjs_named"),
        Export("DEFAULT_LIMIT", 50, "cjs_named"),  # module.exports.X =
    ]
    assert parsed["src/lib/db.js"].exports == [  # exports.X =
        Export("connect", 8, "cjs_named"),
        Export("disconnect", 9, "cjs_named"),
    ]
    assert parsed["src/server.js"].exports == [Export("createApp", 27, "cjs_named"), Export("start", 27, "cjs_named")]


def test_esm_export_forms(parsed):
    assert parsed["src/web/App.jsx"].exports == [Export("Header", 5, "named"), Export("App", 7, "default")]
    assert parsed["src/web/index.mjs"].exports == [
        Export("*", 1, "reexport"),
        Export("App", 2, "reexport"),
        Export("util", 3, "reexport"),
        Export("settings", 7, "named"),
        Export("settings", 8, "default"),
    ]
    assert parsed["src/web/config.mjs"].exports == [Export("settings", 6, "default"), Export("settings", 6, "named")]


# ---- definitions --------------------------------------------------------------------


def test_class_with_private_members_static_block_and_generator_method(parsed):
    store = parsed["src/lib/store.js"]
    assert store.has_error is False
    assert _defs(store) == {
        ("UserStore", "class", 1, 41, None),
        ("#users", "field", 2, 2, "UserStore"),
        ("instances", "field", 3, 3, "UserStore"),
        ("constructor", "method", 9, 11, "UserStore"),
        ("#validate", "method", 13, 17, "UserStore"),
        ("add", "method", 19, 24, "UserStore"),
        ("get", "method", 26, 28, "UserStore"),
        ("remove", "method", 30, 32, "UserStore"),
        ("ids", "method", 34, 36, "UserStore"),
        ("countUp", "generator", 43, 45, None),
        ("formatUser", "arrow", 47, 47, None),
        ("list", "method", 38, 40, "UserStore"),
    }


def test_functions_arrows_and_assigned_functions(parsed):
    assert _defs(parsed["src/server.js"]) == {("createApp", "function", 11, 19, None), ("start", "function", 21, 25, None)}
    assert _defs(parsed["src/lib/db.js"]) == {
        ("connect", "function", 3, 6, None),
        ("disconnect", "function", 9, 11, "exports"),  # exports.disconnect = async function disconnect()
    }
    assert _defs(parsed["src/web/App.jsx"]) == {
        ("Header", "arrow", 5, 5, None),
        ("App", "function", 7, 20, None),
        ("reset", "arrow", 9, 12, "App"),
    }


def test_typescript_definitions(parsed):
    util = parsed["src/util/index.ts"]
    assert util.language == "typescript" and util.has_error is False
    assert _defs(util) == {
        ("DateFormat", "interface", 1, 3, None),
        ("Formatter", "type", 5, 5, None),
        ("Level", "enum", 7, 10, None),
        ("formatDate", "function", 12, 14, None),
    }
    assert [e.name for e in util.exports] == ["DateFormat", "Formatter", "Level", "formatDate"]


def test_object_literal_methods_and_pairs():
    source = (
        "const handlers = {\n"
        "  onStart() {},\n"
        "  onStop: () => stop(),\n"
        "  'on-error': function () {},\n"
        "};\n"
        "Store.prototype.save = function () {};\n"
    )
    structure = parse_source("h.js", source)
    assert _defs(structure) == {
        ("onStart", "method", 2, 2, "handlers"),
        ("onStop", "arrow", 3, 3, "handlers"),
        ("on-error", "function", 4, 4, "handlers"),
        ("save", "function", 6, 6, "Store"),
    }
    assert structure.calls == [Call("stop", 3, "onStop")]


# ---- calls ----------------------------------------------------------------------------


def test_calls_have_callee_line_and_enclosing_definition(parsed):
    calls = parsed["src/lib/store.js"].calls
    assert Call("this.#validate", 20, "add") in calls  # private method call
    assert Call("this.#users.delete", 31, "remove") in calls  # a?.delete(): reserved word after ?.
    assert Call("TypeError", 15, "#validate") in calls  # `new` counts as a call
    server = parsed["src/server.js"].calls
    assert Call("Number", 9, None) in server  # top level
    assert Call("connect", 22, "start") in server
    assert Call("createApp", 23, "start") in server
    assert Call("console.log", 24, "start") in server  # inside an anonymous callback
    app = parsed["src/web/App.jsx"].calls
    assert Call("session.delete", 10, "reset") in app
    assert Call("fmt", 16, "App") in app  # inside JSX text after a bare &


def test_jsx_with_bare_ampersand_is_not_an_error(parsed):
    app = parsed["src/web/App.jsx"]
    assert app.has_error is False
    assert [d.name for d in app.definitions] == ["Header", "App", "reset"]


# ---- environment variables -----------------------------------------------------------


def test_env_dotted_bracket_and_destructured(parsed):
    assert parsed["src/server.js"].env_vars == [
        EnvVar("DATABASE_URL", 8),  # const { DATABASE_URL, API_KEY: apiKey } = process.env
        EnvVar("API_KEY", 8),
        EnvVar("PORT", 9, default="3000"),  # Number(process.env.PORT || 3000)
    ]
    assert parsed["src/lib/db.js"].env_vars == [  # ['X'] and .X
        EnvVar("DB_HOST", 1), EnvVar("DB_TIMEOUT_MS", 4, default="5000")]
    assert parsed["src/web/config.mjs"].env_vars == [EnvVar("API_BASE", 2, default="'/api'")]  # ?? '/api'
    assert parsed["src/legacy/http.js"].env_vars == [EnvVar("LEGACY_PORT", 26)]


def test_the_whole_environment_as_a_value_is_a_dynamic_read():
    source = ("const env = process.env\n"
              "const { PORT } = process.env\n"
              "spawn('node', [], { env: { ...process.env, A: '1' } })\n"
              "Object.keys(process.env).forEach(print)\n"
              "fork('w.js', { env: process.env })\n"
              "process.env.DEBUG = '1'\n")
    found = [(e.name, e.line, e.dynamic, e.expression) for e in JsParser().parse("run.js", source).env_vars]
    assert found == [("*", 1, True, "process.env"), ("PORT", 2, False, None), ("*", 3, True, "process.env"),
                     ("*", 4, True, "process.env"), ("*", 5, True, "process.env"), ("DEBUG", 6, False, None)]
    more = ("spawn('x', [], { env: opts.env || process.env })\n"
            "const picked = useOwn ? process.env : {}\n"
            "function start(env = process.env) {}\n"
            "const read = () => process.env\n"
            "for (const key in process.env) {}\n"
            "const { HOME, ...rest } = process.env\n"
            "if ('X' in process.env) {}\n")
    found = [(e.name, e.line) for e in JsParser().parse("more.js", more).env_vars]
    assert found == [("*", 1), ("*", 2), ("*", 3), ("*", 4), ("*", 5), ("HOME", 6), ("*", 6)]
    # seen through casts and parentheses: one variable read, not the whole environment
    cast = "const a = (process.env as any).FOO\nconst b = (process.env).BAR\nconst c = process.env!.BAZ\n" \
           "type E = typeof process.env\n"
    assert [(e.name, e.line) for e in JsParser().parse("cast.ts", cast).env_vars] == [("FOO", 1), ("BAR", 2), ("BAZ", 3)]


# ---- routes ------------------------------------------------------------------------------


def test_router_routes_and_route_chains(parsed):
    assert _routes(parsed["src/routes/users.js"]) == [
        ("GET", "/users", 7, "router", "exact", "call"),
        ("POST", "/users", 8, "router", "exact", "call"),
        ("GET", "/users/:id", 11, "router", "exact", "call"),  # .route('/users/:id').get(...)
        ("DELETE", "/users/:id", 12, "router", "exact", "call"),
    ]
    assert _routes(parsed["src/routes/admin.js"]) == [
        ("GET", "/${apiVersion}/stats", 6, "admin", "exact", "call"),  # template literal
        ("ALL", "/reset", 7, "admin", "exact", "call"),
    ]


def test_app_routes_and_mounts(parsed):
    routes = parsed["src/server.js"].routes
    assert routes == [
        Route("USE", "/api", 14, router="app", target="usersRouter", match="prefix"),
        Route("USE", "/admin", 15, router="app", target_spec="./routes/admin", match="prefix"),
        Route("GET", "/health", 16, router="app"),
    ]  # app.use(express.json()) and app.use(express.static(...)) have no path: not routes


def test_url_pathname_checks_with_method_inference(parsed):
    assert _routes(parsed["src/legacy/http.js"]) == [
        ("POST", "/webhook", 5, None, "exact", "pathname"),  # req.method === 'POST' && url.pathname === ...
        ("ANY", "/static/", 8, None, "prefix", "pathname"),  # startsWith
        ("ANY", "/status", 11, None, "exact", "pathname"),  # [...].includes(url.pathname)
        ("ANY", "/healthz", 11, None, "exact", "pathname"),
    ]


def test_pathname_method_from_enclosing_if_and_switch():
    source = (
        "function h(req, res) {\n"
        "  const { pathname } = new URL(req.url, 'http://x');\n"
        "  if (req.method === 'DELETE') {\n"
        "    if (pathname === '/item') return del();\n"
        "  }\n"
        "  switch (url.pathname) {\n"
        "    case '/a': return a();\n"
        "    case '/b': return b();\n"
        "  }\n"
        "}\n"
    )
    assert _routes(parse_source("s.js", source)) == [
        ("DELETE", "/item", 4, None, "exact", "pathname"),
        ("ANY", "/a", 7, None, "exact", "pathname"),
        ("ANY", "/b", 8, None, "exact", "pathname"),
    ]


def test_fastify_register_prefix_and_route_object():
    source = (
        "fastify.register(function (instance, opts, done) {\n"
        "  instance.get('/hello', handler);\n"
        "  done();\n"
        "}, { prefix: '/v1' });\n"
        "fastify.register(require('./plugins/users'), { prefix: '/users' });\n"
        "fastify.route({ method: ['GET', 'HEAD'], url: '/ping', handler });\n"
        "cache.get('/not-a-route');\n"
        "app.get('env');\n"
    )
    structure = parse_source("f.js", source)
    assert [(r.method, r.path, r.line, r.prefix, r.full_path) for r in structure.routes] == [
        ("GET", "/hello", 2, "/v1", "/v1/hello"),
        ("USE", "/users", 5, None, "/users"),
        ("GET", "/ping", 6, None, "/ping"),
        ("HEAD", "/ping", 6, None, "/ping"),
    ]
    assert structure.routes[1].target_spec == "./plugins/users"


# ---- path references -----------------------------------------------------------------------


def test_path_join_and_resolve_literal_parts(parsed):
    assert parsed["src/server.js"].path_refs == [PathRef(17, ["__dirname", "public"])]
    assert parsed["src/lib/audit.js"].path_refs == [PathRef(4, ["__dirname", "..", "..", "logs", "audit.log"])]


# ---- syntax errors --------------------------------------------------------------------------


def test_syntax_error_keeps_the_valid_declarations_after_it(parsed):
    broken = parsed["src/broken.js"]
    assert broken.has_error is True
    assert _defs(broken) == {
        ("recovered", "function", 4, 6, None),
        ("AfterError", "class", 8, 10, None),
        ("run", "method", 9, 9, "AfterError"),
        ("afterArrow", "arrow", 12, 12, None),
    }
    assert broken.calls == [Call("helper", 5, "recovered")]
    assert broken.exports == [Export("recovered", 13, "cjs_named"), Export("AfterError", 13, "cjs_named")]


def test_error_in_the_middle_keeps_records_before_and_after():
    source = (
        "function before() { return one(); }\n"
        "if (x {\n"
        "  two();\n"
        "}\n"
        "function after() { three(); }\n"
    )
    structure = parse_source("m.js", source)
    assert structure.has_error is True
    assert _defs(structure) == {("before", "function", 1, 1, None), ("after", "function", 5, 5, None)}
    assert Call("one", 1, "before") in structure.calls and Call("three", 5, "after") in structure.calls


@pytest.mark.parametrize("garbage", ["", "}}}}", "\x00\x01 binary", "function (", "<div>&</", "class { #"])
def test_garbage_never_raises(garbage):
    structure = parse_source("g.js", garbage)
    assert isinstance(structure, FileStructure)


# ---- pathological nesting (generated code) ----------------------------------------------------


def test_functions_nested_2000_deep_parse_with_their_ranges_and_parents():
    depth = 2000
    source = "".join(f"function f{i}() {{\n" for i in range(depth)) + "return inner();\n" + "}\n" * depth
    structure = parse_source("gen/nested.js", source)
    assert structure.has_error is False
    assert _defs(structure) == {(f"f{i}", "function", i + 1, 2 * depth + 1 - i, f"f{i - 1}" if i else None)
                                for i in range(depth)}
    assert structure.calls == [Call("inner", depth + 1, f"f{depth - 1}")]


def test_patterns_and_awaits_nested_5000_deep_parse():
    """Destructuring bound to ``require`` and mounts behind ``await`` are read with loops, not
    recursion (both raised RecursionError)."""
    depth = 5000
    source = ("const " + "[" * depth + "a" + "]" * depth + " = require('./lib');\n"
              + "const " + "{k: " * depth + "b" + "}" * depth + " = require('./other');\n"
              + "app.use('/p', " + "await " * depth + "router);\n"
              + "fastify.register(" + "await " * depth + "plugin, { prefix: '/v1' });\n")
    structure = parse_source("gen/deep.js", source)
    assert structure.has_error is False
    assert [(i.spec, i.names) for i in structure.imports] == [("./lib", ["a"]), ("./other", ["b"])]
    assert [(r.method, r.path, r.line, r.router, r.target) for r in structure.routes] == [
        ("USE", "/p", 3, "app", "router"), ("USE", "/v1", 4, "fastify", "plugin")]


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ("{k: ", "}"), ("(", ")"), ("a ? b : (", ")")])
@pytest.mark.parametrize("newline", ["", "\n"])
def test_expressions_nested_5000_deep_parse(opener, closer, newline):
    depth = 5000
    source = ("const x = " + (opener + newline) * depth + "process.env.PORT" + (closer + newline) * depth
              + ";\nfunction after() {}\n")
    structure = parse_source("gen/expr.js", source)
    assert structure.has_error is False
    assert [(e.name, e.line) for e in structure.env_vars] == [("PORT", 1 + len(newline) * depth)]
    assert [(d.name, d.start) for d in structure.definitions] == [("after", 2 + 2 * len(newline) * depth)]


# ---- API details ----------------------------------------------------------------------------


def test_json_round_trip_and_version_guard(parsed):
    for structure in parsed.values():
        data = json.loads(json.dumps(structure.to_json()))
        assert FileStructure.from_json(data) == structure
    stale = parsed["src/server.js"].to_json() | {"version": PARSE_VERSION - 1}
    with pytest.raises(ValueError, match="version"):
        FileStructure.from_json(stale)


def test_a_structure_document_with_odd_records_is_read_or_refused_clearly(parsed):
    data = parsed["src/server.js"].to_json()
    assert data["definitions"]
    extra = json.loads(json.dumps(data))
    extra["definitions"][0]["added_by_a_later_parser"] = 1  # unknown keys are dropped
    assert FileStructure.from_json(extra) == parsed["src/server.js"]
    for bad in ("def", None, 3, ["name"]):  # a record that is not an object: AttributeError escaped before
        broken = json.loads(json.dumps(data))
        broken["definitions"][0] = bad
        with pytest.raises(ValueError, match="malformed"):
            FileStructure.from_json(broken)


def test_languages_and_unparseable_path():
    assert [language_for_path(p) for p in ("a.js", "a.JSX", "a.mjs", "a.cjs", "a.ts", "a.tsx", "a.md")] == [
        "javascript", "javascript", "javascript", "javascript", "typescript", "tsx", None,
    ]
    with pytest.raises(ValueError, match="README.md"):
        parse_source("README.md", "# hi")
    tsx = parse_source("c.tsx", "export const C = (p: { n: number }) => <b>{p.n}</b>;\n")
    assert tsx.language == "tsx" and not tsx.has_error and tsx.definitions == [Definition("C", "arrow", 1, 1)]


def test_resolve_relative_rules():
    known = {"src/a.js", "src/b/index.ts", "src/c.ts", "src/d.json", "lib/e.mjs"}
    assert resolve_relative("src/x.js", "./a", known) == "src/a.js"
    assert resolve_relative("src/x.js", "./a.js", known) == "src/a.js"
    assert resolve_relative("src/x.js", "./b", known) == "src/b/index.ts"
    assert resolve_relative("src/x.js", "./c.js", known) == "src/c.ts"  # TS ESM convention
    assert resolve_relative("src/x.js", "./d.json", known) == "src/d.json"
    assert resolve_relative("src/deep/x.js", "../../lib/e", known) == "lib/e.mjs"
    assert resolve_relative("src/x.js", "express", known) is None
    assert resolve_relative("src/x.js", "../../outside", known) is None
    assert resolve_relative("src/x.js", "./missing", known) is None


def test_crlf_line_numbers_match_lf():
    lf = "const a = 1;\n\nfunction f() {\n  return process.env.X;\n}\n"
    crlf = parse_source("crlf.js", lf.replace("\n", "\r\n"))
    assert crlf.definitions == [Definition("f", "function", 3, 5)]
    assert crlf.env_vars == [EnvVar("X", 4)]


def test_bare_ampersand_outside_jsx_is_still_an_error():
    assert parse_source("amp.js", "const a = b & ;\nfunction ok() {}\n").has_error is True


# ---- TypeScript overloads after automatic semicolon insertion ------------------------------------

TS_OVERLOADS = """\
export interface TakePattern<State> {
  <Predicate extends Matcher<State>>(
    predicate: Predicate,
  ): Output<State, Predicate>
  // with a timeout
  <Predicate extends Matcher<State>>(
    predicate: Predicate,
    timeout: number,
  ): Output<State, Predicate>
}

export type Unsubscribe = (options?: { cancelActive?: true }) => void

export interface ListenerApi {
  take: TakePattern<unknown>
}
"""


def test_typescript_generic_call_signatures_after_a_line_without_semicolon_parse():
    # Before: tree-sitter-typescript read "<Predicate" as type arguments of the line above; the file had
    # errors, TakePattern ended at line 4 and the definitions after it were lost to the repair's blanking.
    structure = parse_source("src/listener/types.ts", TS_OVERLOADS)
    assert structure.has_error is False
    assert [(d.name, d.kind, d.start, d.end) for d in structure.definitions] == [
        ("TakePattern", "interface", 1, 10), ("Unsubscribe", "type", 12, 12), ("ListenerApi", "interface", 14, 16)]
    # the type parameters on lines of their own, after a JSDoc comment
    split = ("export interface Api {\n  /** one */\n  <A>(a: A): Out<A>\n  /**\n   * two\n   */\n  <\n    A,\n    B,\n"
             "  >(a: A, b: B): Out<B>\n}\nexport type After = string\n")
    structure = parse_source("src/api.ts", split)
    assert structure.has_error is False
    assert [(d.name, d.start, d.end) for d in structure.definitions] == [("Api", 1, 11), ("After", 12, 12)]
    # JSX keeps its lines: the repair is for .ts only
    tsx = parse_source("src/view.tsx", "export const V = () => (\n  <div>\n    <span>a</span>\n  </div>\n)\n")
    assert tsx.has_error is False
