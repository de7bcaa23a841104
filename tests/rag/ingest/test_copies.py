"""Sources over copies (issue 15): copy detection at index time and its use by retrieval and packing.

The fixture tree is an npm package shipping TypeScript sources with their build: compiled
JavaScript under ``lib/`` and ``esm/``, CommonJS ``.cjs``, declarations, a bundle with a
source map beside it, a file compiled in place, a Babel-compiled ``src/`` JavaScript file,
and files that are *not* copies (a hand-written ``lib/`` helper with no source, two
near-identical hand-written siblings). Everything runs the real engine (walk → chunk →
index → copies → retrieval → packing).
"""
from __future__ import annotations

import base64
import contextlib
import json
import sqlite3

import pytest

from repo_helpers import indexed_engine, write_repo
from rag.engine import Engine
from rag.ingest.walk import module_format
from rag.ingest.copies import COPY_RULES_VERSION, _sibling_builds, derived_rank, detect_copies, fingerprint_lines, map_sources

WIDGET_TS = """\
export interface WidgetOptions { size: number; colour: string }

export function paintWidget(options: WidgetOptions): string {
  const shade = options.colour.toUpperCase();
  return `widget of size ${options.size} painted ${shade}`;
}

export function varnishWidget(surface: string): string {
  return surface + ' varnished with linseed';
}
"""
WIDGET_JS = """\
export function paintWidget(options) {
  const shade = options.colour.toUpperCase();
  return `widget of size ${options.size} painted ${shade}`;
}

export function varnishWidget(surface) {
  return surface + ' varnished with linseed';
}
"""
WIDGET_CJS = '"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n' + \
    WIDGET_JS.replace("export function", "function") + "exports.paintWidget = paintWidget;\n"
WIDGET_DTS = """\
export interface WidgetOptions { size: number; colour: string }
export declare function paintWidget(options: WidgetOptions): string;
export declare function varnishWidget(surface: string): string;
"""
GEAR_TS = """\
export function turnGear(teeth: number): number {
  // each sprocket tooth advances the ratchet once
  return teeth * 2;
}
"""
GEAR_JS = "export function turnGear(teeth) {\n  // each sprocket tooth advances the ratchet once\n  return teeth * 2;\n}\n"
BUNDLE = WIDGET_JS + GEAR_JS + "//# sourceMappingURL=bundle.js.map\n"
BUNDLE_MAP = json.dumps({"version": 3, "sources": ["../src/widget.ts", "../src/parts/gear.ts"], "mappings": ""})
BABEL_SRC = "export const polishRotor = (rotor) => rotor.shine();\n"
BABEL_OUT = '"use strict";\nexports.polishRotor = void 0;\nconst polishRotor = rotor => rotor.shine();\n'
ONLY_LIB = "// a hand-written helper with no TypeScript source\nmodule.exports = function lacquerPanel() {};\n"
SIBLING = "".join(f"function step{i}(input) {{ return input + {i}; }}\n" for i in range(30))

TREE = {
    "package.json": '{"name": "widgets", "version": "1.0.0"}',
    "README.md": "# widgets\n\nPaint widgets.\n",
    "src/widget.ts": WIDGET_TS,
    "src/parts/gear.ts": GEAR_TS,
    "lib/widget.js": WIDGET_JS,                     # tsc outDir
    "lib/widget.cjs": WIDGET_CJS,                   # CommonJS build
    "lib/widget.d.ts": WIDGET_DTS,                  # declarations
    "esm/parts/gear.mjs": GEAR_JS,                  # ESM build, nested folder mirrored
    "types/parts/gear.d.ts": "export declare function turnGear(teeth: number): number;\n",
    "inplace/knob.ts": "export const knob = (turns: number) => turns + 1;\n",
    "inplace/knob.js": "export const knob = (turns) => turns + 1;\n",  # compiled beside its source
    "browser/bundle.js": BUNDLE,                    # a bundle, source map beside it (not indexed: .map)
    "browser/bundle.js.map": BUNDLE_MAP,
    "src/rotor.js": BABEL_SRC,                      # JavaScript source under src/
    "lib/rotor.js": BABEL_OUT,                      # ... compiled by Babel into lib/
    "lib/lacquer.js": ONLY_LIB,                     # no source: not a copy
    "src/alpha.js": "// alpha marmoset\n" + SIBLING,  # near-identical hand-written siblings: both sources
    "src/beta.js": "// beta toggle\n" + SIBLING,
}
COPIES = {
    "lib/widget.js": ["src/widget.ts"], "lib/widget.cjs": ["src/widget.ts"], "lib/widget.d.ts": ["src/widget.ts"],
    "esm/parts/gear.mjs": ["src/parts/gear.ts"], "types/parts/gear.d.ts": ["src/parts/gear.ts"],
    "inplace/knob.js": ["inplace/knob.ts"], "browser/bundle.js": ["src/widget.ts", "src/parts/gear.ts"],
    "lib/rotor.js": ["src/rotor.js"],
}


def recorded(engine: Engine) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with engine.index.read() as conn:
        for path, source, _reason in conn.execute("SELECT path, source, reason FROM file_copies ORDER BY path, rank"):
            out.setdefault(path, []).append(source)
    return out


def test_build_output_is_recorded_as_copies_of_its_indexed_sources(tmp_path):
    with indexed_engine(tmp_path, TREE) as engine:
        assert recorded(engine) == COPIES
        with engine.index.read() as conn:
            reasons = dict(conn.execute("SELECT path, reason FROM file_copies WHERE rank = 0"))
        assert reasons["browser/bundle.js"] == "source_map" and reasons["lib/widget.d.ts"] == "compiled"
        stats = engine.update(full=True)
        assert stats.copies == len(COPIES) == 8
        assert engine.update().copies == 8   # an update with nothing to write still reports them


def test_a_copy_ranks_in_its_source_s_place_and_never_beside_it(tmp_path):
    with indexed_engine(tmp_path, TREE) as engine:
        for question in ("How is a widget painted and varnished with linseed?", "paintWidget shade colour"):
            paths = [s.path for s in engine.retrieve(question, limit=10)]
            assert paths[0] == "src/widget.ts", paths
            assert not {"lib/widget.js", "lib/widget.cjs", "lib/widget.d.ts", "browser/bundle.js"} & set(paths)
        paths = [s.path for s in engine.retrieve("which sprocket tooth advances the ratchet?", limit=10)]
        assert paths[0] == "src/parts/gear.ts" and "esm/parts/gear.mjs" not in paths
        # Packed context: the copies' symbols and summaries do not come back through the code graph either.
        sources = engine.retrieve("Where is paintWidget defined?", limit=8)
        packed = engine.pack_context("Where is paintWidget defined?", sources=sources)
        assert "src/widget.ts" in packed.files
        assert not set(packed.files) & set(COPIES)


def test_when_the_source_is_not_indexed_the_copy_stays(tmp_path):
    tree = {k: v for k, v in TREE.items() if k != "src/parts/gear.ts"}
    with indexed_engine(tmp_path, tree) as engine:
        assert "esm/parts/gear.mjs" not in recorded(engine)
        assert recorded(engine)["browser/bundle.js"] == ["src/widget.ts"]   # only the indexed source
        paths = [s.path for s in engine.retrieve("which sprocket tooth advances the ratchet?", limit=10)]
        assert paths[0] in ("esm/parts/gear.mjs", "types/parts/gear.d.ts", "browser/bundle.js")


def test_copies_follow_incremental_updates(tmp_path):
    with indexed_engine(tmp_path, TREE) as engine:
        root = engine.repo_root
        (root / "src" / "widget.ts").unlink()
        engine.update()
        # without its source, the module's two builds are one module: the CommonJS one stands for it
        assert not {"lib/widget.js", "lib/widget.d.ts"} & set(recorded(engine))
        assert recorded(engine)["lib/widget.cjs"] == ["lib/widget.js"]
        assert recorded(engine)["browser/bundle.js"] == ["src/parts/gear.ts"]
        (root / "src" / "widget.ts").write_text(WIDGET_TS, encoding="utf-8")
        assert engine.update().copies == 8
        assert recorded(engine) == COPIES


def test_one_module_built_into_several_folders_without_its_source_is_one_module(tmp_path):
    option = "".join(f"function option{i}(a) {{\n  const shifted = a === null ? none : a + {i};\n"
                     f"  return shifted === none ? none : some(shifted);\n}}\n" for i in range(8))
    tree = {"package.json": '{"name": "fp", "main": "./lib/index.js"}',
            "index.js": "module.exports = require('./lib/index');\n",   # not under a build folder: its own module
            "lib/index.js": "exports.Option = require('./Option');\n",
            "es6/index.js": "export * as Option from './Option';\n",
            "lib/Option.js": option, "es6/Option.js": option.replace("function", "export function"),
            "lib/Option.d.ts": "export declare function option0(a: unknown): unknown;\n",
            "es6/Option.d.ts": "export declare function option0(a: unknown): unknown;\n",
            "dist/esm/extra.mjs": "export const extra = 1;\n", "dist/cjs/extra.cjs": "exports.extra = 1;\n"}
    with indexed_engine(tmp_path, tree) as engine:
        # the one-line index modules and declarations share no informative line: too small to tell
        assert recorded(engine) == {"es6/Option.js": ["lib/Option.js"]}
        paths = [s.path for s in engine.retrieve("How does option3 return none for null?", limit=10)]
        assert paths[0] == "lib/Option.js" and "es6/Option.js" not in paths
    body = [f"  const part{i} = assemble('component number {i}');" for i in range(12)]
    node = [f"  const socket{i} = net.connect({{ port: {i} }});" for i in range(12)]
    prints = {"dist/cjs/extra.cjs": fingerprint_lines(["exports.extra = extra;", *body]),
              "dist/esm/extra.mjs": fingerprint_lines(["export { extra };", *body]),
              "lib/node/index.js": fingerprint_lines(node),     # two platforms' hand-written modules
              "lib/browser/index.js": fingerprint_lines(body),
              "lib/a.js": fingerprint_lines(body), "src/a.js": fingerprint_lines(body)}
    # the ES module build stands for the module (rag.ingest.walk.build_format_rank, as the walk chooses)
    assert _sibling_builds(prints, set()) == {"dist/cjs/extra.cjs": "dist/esm/extra.mjs"}
    # a build for Node before one for browsers, whatever their formats (yaml 2.6.1, as the walk chooses)
    prints = {"lib/browser/esm/extra.js": fingerprint_lines(["export { extra };", *body]),
              "lib/cjs/extra.js": fingerprint_lines(["exports.extra = extra;", *body])}
    assert _sibling_builds(prints, set()) == {"lib/browser/esm/extra.js": "lib/cjs/extra.js"}


def test_builds_told_apart_by_format_folders_need_a_fifth_of_their_lines_beyond_boilerplate():
    """A break-it review of the format-folder share (any one shared line, first): an ES module wrapper re-exporting
    a CommonJS implementation shared its licence header with it and hid it as its copy; two platforms' modules under
    ``esm/`` became one; and a per-module UMD build stood for its ES module build."""
    licence = ["/*! widgets v1.0.0 | MIT License | (c) the widget authors, all rights reserved */"]
    impl = [f"  const delay{i} = Math.min(MAXIMUM_DELAY_MILLISECONDS, base * 2 ** {i} + jitter());" for i in range(12)]
    prints = {f"src/other{i}.js": fingerprint_lines(licence + [f"export const other{i} = {i} * 1000;"])
              for i in range(10)}   # the licence is boilerplate: more than MAX_POSTINGS files hold it
    prints |= {
        "esm/index.mjs": fingerprint_lines(licence + ["import impl from '../cjs/index.js';",
                                                      "export const backoff = impl.backoff;",
                                                      "export const MAXIMUM = impl.MAXIMUM_DELAY_MILLISECONDS;",
                                                      "export const jitterFactor = impl.jitterFactor;",
                                                      "export default impl;"]),
        "cjs/index.js": fingerprint_lines(licence + impl),
        "esm/node/storage.js": fingerprint_lines([f"  fs.writeFileSync(file{i}, JSON.stringify(value{i}));"
                                                  for i in range(10)]),
        "esm/browser/storage.js": fingerprint_lines([f"  fs.writeFileSync(file{i}, JSON.stringify(value{i}));"
                                                     for i in range(3)] +
                                                    [f"  localStorage.setItem(key{i}, JSON.stringify(value{i}));"
                                                     for i in range(7)]),
        "lib/umd/main.js": fingerprint_lines(["(function (factory) { factory(require, exports); })(function () {",
                                              *impl]),
        "lib/esm/main.js": fingerprint_lines(impl),
        "esm2015/rule.js": fingerprint_lines(impl),
        "cjs/rule.js": fingerprint_lines(impl[:3] + [line.replace("jitter()", "(0, util_1.jitter)()")
                                                     for line in impl[3:]]),   # a quarter shared
    }
    assert _sibling_builds(prints, set()) == {"cjs/rule.js": "esm2015/rule.js", "lib/umd/main.js": "lib/esm/main.js"}


def test_one_module_built_twice_beside_itself_by_extension_is_one_module_the_es_module_standing_for_it(tmp_path):
    """A blind held-out set: graphql 16.9.0 ships every module twice in place, ``execution/execute.js`` (CommonJS, by
    Babel) beside ``execution/execute.mjs`` (ES modules), with no build folder; both were indexed and answered as
    two files, and the CommonJS one led (a median 82% of their lines match beyond boilerplate)."""
    calls = [f"  const result{i} = (0, _values.getArgumentValues)(def{i}, node, variableValues);" for i in range(8)]
    cjs = ('"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n'
           'exports.execute = execute;\nvar _values = require("./values.js");\n'
           'function execute(args) {\n' + "\n".join(calls) + "\n  return buildResponse(result0);\n}\n")
    esm = ("import { getArgumentValues } from './values.mjs';\nexport function execute(args) {\n"
           + "\n".join(c.replace("(0, _values.getArgumentValues)", "getArgumentValues") if i % 4 else c
                        for i, c in enumerate(calls)) + "\n  return buildResponse(result0);\n}\n")
    wrapper = "import cjs from './index.js';\nexport const { execute, validate, parse } = cjs;\nexport default cjs;\n"
    impl = "".join(f"function part{i}(x) {{\n  return x.map((value) => value * {i} + offset{i});\n}}\n" for i in range(8))
    tree = {"package.json": '{"name": "gq", "main": "index", "module": "index.mjs"}',
            "execution/execute.js": cjs, "execution/execute.mjs": esm,
            "index.mjs": wrapper, "index.js": impl + "module.exports = { part0 };\n",
            "utils/format.js": impl, "utils/format.cjs": impl.replace("function", "async function")}
    with indexed_engine(tmp_path, tree) as engine:
        copies = recorded(engine)
        assert copies["execution/execute.js"] == ["execution/execute.mjs"]
        # an ES module wrapper re-exporting a CommonJS implementation shares none of its lines: two modules
        assert "index.js" not in copies and "index.mjs" not in copies
        # an ES module .js (a "type": "module" package) stands for its CommonJS .cjs build
        assert copies["utils/format.cjs"] == ["utils/format.js"]
        paths = [s.path for s in engine.retrieve("How does execute get the argument values?", limit=10)]
        assert paths[0] == "execution/execute.mjs" and "execution/execute.js" not in paths
    # a small .mjs holding a few lines of a far larger .js is not its build (a break-it review)
    helpers = "".join(f"function helper{i}(value) {{\n  return transform(value, {i}, 'helper number {i}');\n}}\n"
                      for i in range(40))
    small = "".join(f"function helper{i}(value) {{\n  return transform(value, {i}, 'helper number {i}');\n}}\n"
                    for i in range(4))
    with indexed_engine(tmp_path.parent / f"{tmp_path.name}-subset", {"lib/util.js": helpers,
                                                                      "lib/util.mjs": small}) as engine:
        assert recorded(engine) == {}


def test_of_two_whole_library_bundles_the_es_module_one_stands_for_the_library(tmp_path):
    """A blind held-out set: immutable 5.0.3 ships ``dist/immutable.es.js`` (an ES module bundle) and
    ``dist/immutable.js`` (UMD), near-identical. Their module format was read from the first 8 KB, which hold only a
    licence and code: a bundle's ``export { … }`` or ``exports.x = x`` lines come last. So neither looked like a module,
    the walk kept the first by name, and the UMD bundle answered every question."""
    licence = "/**\n" + "".join(f" * licence line {i} of the MIT licence text, kept as written\n" for i in range(200)) + " */\n"
    body = "".join(f"function collection{i}(value) {{\n  return hashCollection(value, {i}) + seed{i};\n}}\n"
                   for i in range(300))
    names = ", ".join(f"collection{i}" for i in range(30))
    es = licence + body + f"export {{ {names} }};\n"
    umd = (licence + "(function (global, factory) {\n  typeof exports === 'object' && typeof module !== 'undefined' ? "
           "factory(exports) : (global.Immutable = {});\n}(this, (function (exports) {\n" + body
           + "".join(f"  exports.collection{i} = collection{i};\n" for i in range(30)) + "})));\n")
    (tmp_path / "es.js").write_text(es, encoding="utf-8")
    (tmp_path / "umd.js").write_text(umd, encoding="utf-8")
    assert module_format(str(tmp_path / "es.js")) == 0 and module_format(str(tmp_path / "umd.js")) == 2
    tree = {"dist/immutable.es.js": es, "dist/immutable.js": umd,
            "package.json": '{"name": "im", "main": "dist/immutable.js", "module": "dist/immutable.es.js"}'}
    with indexed_engine(tmp_path / "repo", tree) as engine:   # the walk keeps one build of a module: the ES module
        assert [p for p in engine.indexed_paths() if p.startswith("dist/")] == ["dist/immutable.es.js"]


def test_javascript_compiled_from_coffeescript_is_a_copy_of_its_source(tmp_path):
    """A blind held-out set: bottleneck 2.19.5 ships ``src/Bottleneck.coffee`` and its compiled ``lib/Bottleneck.js``;
    once CoffeeScript was read, both would answer as two files."""
    coffee = ("class Bottleneck\n  constructor: (options={}) ->\n    @_queues = new Queues NUM_PRIORITIES\n"
              "  schedule: (args...) ->\n    @_submitOne args\nmodule.exports = Bottleneck\n")
    compiled = ("var Bottleneck;\nBottleneck = class Bottleneck {\n  constructor(options = {}) {\n"
                "    this._queues = new Queues(NUM_PRIORITIES);\n  }\n  schedule(...args) {\n"
                "    return this._submitOne(args);\n  }\n};\nmodule.exports = Bottleneck;\n")
    with indexed_engine(tmp_path, {"src/Bottleneck.coffee": coffee, "lib/Bottleneck.js": compiled,
                                   "package.json": '{"name": "b", "main": "lib/index.js"}'}) as engine:
        assert recorded(engine) == {"lib/Bottleneck.js": ["src/Bottleneck.coffee"]}
        paths = [s.path for s in engine.retrieve("How does Bottleneck schedule a job into its queues?", limit=10)]
        assert paths[0] == "src/Bottleneck.coffee" and "lib/Bottleneck.js" not in paths
    # its root es5.js, the whole library bundled, matches the module path of the three-line src/es5.coffee: far
    # larger than that module, it is no compiled copy of it (every chunk of the bundle was answered by that file)
    entry = 'require("regenerator-runtime/runtime")\nmodule.exports = require "./Bottleneck"\n'
    bundle = "".join(f"  function helper{i}(value) {{ return regenerator.wrap(value, {i}, 'step number {i}'); }}\n"
                     for i in range(300))
    tree = {"src/es5.coffee": entry, "src/Bottleneck.coffee": coffee, "es5.js": bundle + compiled}
    with indexed_engine(tmp_path / "bundled", tree) as engine:
        assert "es5.js" not in recorded(engine)


def test_builds_in_target_named_format_folders_are_one_module_the_modern_es_module_standing_for_it(tmp_path):
    """class-validator 0.14.1 ships its build three times at the package root, in ``cjs/``, ``esm5/`` and
    ``esm2015/``: every module was indexed three times and a question's first five files were one module's three
    builds. TypeScript's CommonJS output rewrites every imported call (``(0, storage_1.getStorage)()``), so it
    shares well under half of its lines with the ES module build; the folder names say they are one module."""
    calls = [f"    storage.addRule{i}(new Rule(target, name, 'constraint number {i}'));" for i in range(6)]
    esm2015 = ("import { getStorage } from '../storage';\nexport function registerRule(target, name) {\n"
               "    const storage = getStorage();\n" + "\n".join(calls) + "\n}\n")
    esm5 = esm2015.replace("const storage", "var storage")
    cjs = ('"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n'
           'exports.registerRule = void 0;\nconst storage_1 = require("../storage");\n'
           'function registerRule(target, name) {\n    const storage = (0, storage_1.getStorage)();\n'
           + "\n".join(c.replace("new Rule", "new rule_1.Rule") if i % 2 else c for i, c in enumerate(calls))
           + "\n}\nexports.registerRule = registerRule;\n")
    # its UMD bundle is mapped to the ES5 build: a copy of a copy, whose chunks stood for the ES5 module
    umd = "(function (global) {\n" + esm5.replace("import { getStorage } from '../storage';\n", "") + \
        "})(this);\n//# sourceMappingURL=cv.umd.js.map\n"
    umd_map = json.dumps({"version": 3, "sources": ["../esm5/decorator/register.js"], "mappings": ""})
    tree = {"package.json": '{"name": "cv", "main": "./cjs/index.js", "es2015": "./esm2015/index.js"}',
            "esm2015/decorator/register.js": esm2015, "esm5/decorator/register.js": esm5,
            "cjs/decorator/register.js": cjs, "bundles/cv.umd.js": umd, "bundles/cv.umd.js.map": umd_map}
    with indexed_engine(tmp_path, tree) as engine:
        assert recorded(engine) == {"bundles/cv.umd.js": ["esm5/decorator/register.js"],
                                    "cjs/decorator/register.js": ["esm2015/decorator/register.js"],
                                    "esm5/decorator/register.js": ["esm2015/decorator/register.js"]}
        for question in ("Where does registerRule add constraint rules?", "What does the global function wrapper do?"):
            paths = [s.path for s in engine.retrieve(question, limit=10)]
            assert paths and set(paths) == {"esm2015/decorator/register.js"}, question


def test_copies_recorded_by_older_rules_are_recomputed_by_an_update_with_nothing_to_write(tmp_path):
    with indexed_engine(tmp_path, TREE) as engine:
        with contextlib.closing(sqlite3.connect(engine.index.path)) as conn, conn:
            conn.execute("DELETE FROM file_copies")       # what an index of the older rules may hold
            conn.execute("UPDATE meta SET value='1' WHERE key='copy_rules'")
        stats = engine.update()
        assert (stats.added, stats.changed, stats.copies) == (0, 0, 8) and recorded(engine) == COPIES
        assert engine.index.meta("copy_rules") == str(COPY_RULES_VERSION)


def test_hand_written_near_identical_files_are_both_sources(tmp_path):
    with indexed_engine(tmp_path, TREE) as engine:
        assert not {"src/alpha.js", "src/beta.js", "lib/lacquer.js"} & set(recorded(engine))
        paths = [s.path for s in engine.retrieve("marmoset", limit=5)]
        assert paths[0] == "src/alpha.js"


def test_near_duplicate_build_output_and_pkg_info():
    readme = [f"Line {i} of the introduction to the widget painting toolkit." for i in range(20)]
    module = [f"const part{i} = assemble('component number {i}');" for i in range(12)]
    fingerprints = {
        "README.md": fingerprint_lines(readme),
        "PKG-INFO": fingerprint_lines([*(f"Classifier: Topic :: Widgets :: {i}" for i in range(8)), *readme]),
        "src/parts.js": fingerprint_lines(module),
        "dist/vendored-parts.js": fingerprint_lines(module[:-1] + ["const part11 = assemble('changed');"]),
        "docs/parts.js": fingerprint_lines(module[:6]),   # a hand-written file holding half: not a copy
    }
    found = [(r.path, r.source, r.reason, r.rank) for r in detect_copies(fingerprints, {})]
    # The build output holds all of docs/parts.js too: a second source, ranked after the near-identical one;
    # docs/parts.js itself (hand-written, half of src/parts.js) is nobody's copy.
    assert found == [("PKG-INFO", "README.md", "contained", 0),
                     ("dist/vendored-parts.js", "src/parts.js", "near_duplicate", 0),
                     ("dist/vendored-parts.js", "docs/parts.js", "contained", 1)]


def test_the_near_identical_twin_of_a_bundle_holds_what_the_bundle_holds():
    """zod 3.23.8: ``lib/index.umd.js`` holds ``lib/types.js`` (CommonJS lines) and is a near-duplicate of the ES
    module bundle ``lib/index.mjs``, whose ``export`` syntax keeps it under the containment share; the ES bundle,
    a source by the rules before, led the answers over the module it holds."""
    types = [f"function parseType{i}(input) {{ return check(input, 'kind {i}'); }}" for i in range(30)]
    errors = [f"const issue{i} = makeIssue('code {i}', path);" for i in range(12)]
    utils = [f"const helper{i} = (value) => normalise(value, {i});" for i in range(6)]
    esm_only = [f"export {{ parseType{i} as exported{i} }};" for i in range(4)]
    umd = fingerprint_lines([*types, *errors, *utils, "(function (global, factory) { factory(exports); })"])
    mjs = fingerprint_lines([*types[:28], *errors, *utils[:4], *esm_only])   # line Jaccard 44 / 54 with the UMD
    fingerprints = {"lib/types.js": fingerprint_lines(types), "lib/errors.js": fingerprint_lines(errors),
                    "lib/utils.js": fingerprint_lines(utils), "lib/index.umd.js": umd, "lib/index.mjs": mjs}
    found = [(r.path, r.source, r.reason) for r in detect_copies(fingerprints, {})]
    assert ("lib/index.umd.js", "lib/index.mjs", "near_duplicate") in found
    assert ("lib/index.umd.js", "lib/types.js", "contained") in found
    # holding most of two modules, it is their bundle by content alone (rule 3c); what it holds under the share
    # (4 of utils' 6 lines, as zod's parseUtil) it holds as the UMD bundle's twin (rule 3b)
    assert {(s, reason) for p, s, reason in found if p == "lib/index.mjs"} == {
        ("lib/types.js", "contained"), ("lib/errors.js", "contained"), ("lib/utils.js", "bundle_twin")}
    assert not any(p in ("lib/types.js", "lib/errors.js", "lib/utils.js") for p, _, _ in found)


def test_source_maps_inline_and_beside(tmp_path):
    inline = base64.b64encode(json.dumps({"sources": ["webpack://widgets/./src/widget.ts"]}).encode()).decode()
    tail = f"x();\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,{inline}"
    assert "src/widget.ts" in map_sources("dist/app.js", tail, None)
    root = write_repo(tmp_path, {"out/a.js.map": json.dumps({"sourceRoot": "../", "sources": ["src/a.ts"]})})
    assert map_sources("out/a.js", "//# sourceMappingURL=a.js.map", root) == ["src/a.ts"]
    assert map_sources("out/a.js", "//# sourceMappingURL=missing.js.map", root) == []
    assert map_sources("out/a.js", "//# sourceMappingURL=../../../etc/passwd", root) == []   # outside: not read
    (root / "out" / "bad.js.map").write_text("{not json", encoding="utf-8")
    assert map_sources("out/bad.js", "//# sourceMappingURL=bad.js.map", root) == []



def test_a_compiled_file_mostly_made_of_its_inline_source_map_is_indexed_with_the_map_elided(tmp_path):
    """superagent 10.1.1's ``lib/node/index.js`` ends in a Babel source map that is 70% of the file: the whole
    module was skipped as minified. The payload is now elided from the indexed text (line numbers kept) and
    the sources it lists still make the file a copy."""
    from rag.ingest.prepare import ELIDED_MAP

    code = "".join(f"function handler{i}(request) {{ return request.send({i}); }}\n" for i in range(120))
    listed = {"version": 3, "sources": ["../src/handlers.ts"], "mappings": "AAAA;" * 9000}
    payload = base64.b64encode(json.dumps(listed).encode()).decode()
    compiled = code + f"//# sourceMappingURL=data:application/json;charset=utf-8;base64,{payload}\n"
    assert len(payload) > 0.5 * len(compiled)   # mostly map: skipped as minified before
    files = {"out/app.js": compiled, "src/handlers.ts": code.replace("(request)", "(request: Req)"),
             "dist/small.js": "a();\n/*# sourceMappingURL=data:application/json;base64," + payload[:40] + " */\n",
             "lib/node/index.js": compiled.replace("handler", "agent")}   # outside build output: the indexer's check
    with indexed_engine(tmp_path, files) as engine:
        assert set(engine.indexed_paths()) == set(files)
        lines = engine.read_lines("out/app.js", 1, 200).split("\n")
        assert len(lines) == 121 and lines[60] == code.split("\n")[60]
        assert lines[120] == f"//# sourceMappingURL=data:application/json;charset=utf-8;base64,{ELIDED_MAP}"
        assert engine.read_lines("dist/small.js", 2, 2) == f"/*# sourceMappingURL=data:application/json;base64,{ELIDED_MAP} */"
        with engine.index.read() as conn:
            copies = dict(((p, s), r) for p, s, r in conn.execute("SELECT path, source, reason FROM file_copies"))
        assert copies.get(("out/app.js", "src/handlers.ts")) == "source_map"   # named by the map only
        assert [s.path for s in engine.retrieve("handler request send", limit=3)][0] == "src/handlers.ts"


def test_a_source_map_nested_too_deeply_does_not_fail_the_index(tmp_path):
    """A ``.map`` of ``[[[[…`` past Python's recursion limit: the whole index build failed with
    ``indexing failed: RecursionError``; it is a map that cannot be read, like ``{not json``."""
    root = write_repo(tmp_path / "repo", {"dist/app.js": "function b() {}\n//# sourceMappingURL=app.js.map\n",
                                          "dist/app.js.map": "[" * 100_000, "src/a.js": "function a() {}\n"})
    assert map_sources("dist/app.js", "//# sourceMappingURL=app.js.map", root) == []
    deep = base64.b64encode(b"[" * 100_000).decode()
    assert map_sources("dist/inline.js", f"//# sourceMappingURL=data:application/json;base64,{deep}", None) == []
    engine = Engine.open(root, index_path=tmp_path / "i.sqlite")
    try:
        assert engine.update().files == 2
    finally:
        engine.close()


def test_derived_rank_orders_build_output_after_sources():
    assert derived_rank("dist/x.js") > derived_rank("src/x.js")
    assert derived_rank("PKG-INFO") > derived_rank("README.md")
    assert derived_rank("lib/x.min.js")[0] > derived_rank("lib/x.js")[0]
    assert len(fingerprint_lines(["}", "", "  });", "ok"])) == 0              # uninformative lines say nothing
    assert fingerprint_lines(["const a = 1;  ", "const   a = 1;"]).itemsize == 8   # 64-bit hashes
    assert len(fingerprint_lines(["const a = 1;  ", "const   a = 1;"])) == 1   # whitespace normalised
    several = fingerprint_lines([f"const value{i} = compute({i});" for i in range(50)])
    assert list(several) == sorted(set(several))                                 # sorted, unique


def test_the_migration_rereads_an_index_written_before_it(tmp_path):
    root = write_repo(tmp_path / "repo", TREE)
    index_path = tmp_path / "index.sqlite"
    engine = Engine.open(root, index_path=index_path)
    engine.update()
    engine.close()
    conn = sqlite3.connect(index_path)   # as an index written before m008: no copies, its migration not applied
    conn.execute("DROP TABLE file_copies")
    conn.execute("DROP TABLE file_fingerprints")
    conn.execute("DELETE FROM migrations WHERE name = 'm008_file_copies'")
    conn.commit()
    conn.close()
    engine = Engine.open(root, index_path=index_path)
    try:
        stats = engine.update()
        assert stats.added == len(TREE) - 1 and stats.copies == 8   # every file re-read (the .map is not indexed)
    finally:
        engine.close()


@pytest.mark.parametrize("name", ["zod-like"])
def test_a_package_beside_its_sources_mirrors_without_a_build_folder(tmp_path, name):
    # zod 4 ships v4/core/api.js, .cjs, .d.ts and .d.cts next to src/v4/core/api.ts.
    files = {"src/v4/core/api.ts": WIDGET_TS, "v4/core/api.js": WIDGET_JS, "v4/core/api.cjs": WIDGET_CJS,
             "v4/core/api.d.ts": WIDGET_DTS, "v4/core/api.d.cts": WIDGET_DTS}
    with indexed_engine(tmp_path, files) as engine:
        assert recorded(engine) == {p: ["src/v4/core/api.ts"] for p in files if p.startswith("v4/")}


def test_both_pairings_count_the_same_shared_lines():
    # _shared_lines pairs in plain Python unless numpy is loaded already; both forms must agree.
    import random

    from rag.ingest import copies

    rng = random.Random(7)
    fingerprints = {f"f{i:03}.js": fingerprint_lines([f"const value{rng.randrange(300)} = 1;" for _ in range(rng.randrange(60))])
                    for i in range(150)}
    fingerprints["empty.js"] = fingerprint_lines([])
    for involving in (None, {}, {"f003.js": [], "f010.js": []}):
        python = copies._shared_lines_python(fingerprints, involving=involving)
        vectorised = copies._shared_lines_numpy(fingerprints, involving=involving)
        assert dict(python) == dict(vectorised)
        assert python or involving is not None  # random lines: many pairs share some, few are near-identical
    assert copies._shared_lines_python({}) == copies._shared_lines_numpy({}) == {}


def test_kept_shared_lines_follow_every_change_exactly():
    # SharedLines moves its pair counts by difference between updates; after any sequence of edits,
    # additions, removals and source-map changes it must give what counting afresh gives, including
    # lines crossing MAX_POSTINGS holders and pairs entering or leaving the near-duplicate band.
    import random

    from rag.ingest import copies

    rng = random.Random(11)
    pool = [f"const value{n} = compute({n});" for n in range(120)]

    def fingerprint():
        return fingerprint_lines(rng.sample(pool, rng.randrange(0, 40)))

    fingerprints = {f"f{i:02}.js": fingerprint() for i in range(30)}
    kept = copies.SharedLines()
    maps: dict[str, list[str]] = {}
    checked_pairs = 0
    for step in range(300):
        roll = rng.random()
        if roll < 0.5 and fingerprints:  # edit one file: a few lines in, a few out
            path = rng.choice(sorted(fingerprints))
            lines = set(fingerprints[path]) - set(rng.sample(list(fingerprints[path]), min(3, len(fingerprints[path]))))
            lines |= set(fingerprint_lines(rng.sample(pool, 3)))
            fingerprints[path] = copies.Fingerprint("Q", sorted(lines))
        elif roll < 0.6:  # a copy of another file appears (a near-duplicate pair)
            source = rng.choice(sorted(fingerprints))
            fingerprints[f"dist/c{step}.js"] = copies.Fingerprint("Q", fingerprints[source])
        elif roll < 0.7 and len(fingerprints) > 2:
            del fingerprints[rng.choice(sorted(fingerprints))]
        elif roll < 0.8:
            fingerprints[f"n{step}.js"] = fingerprint()
        else:
            path = rng.choice(sorted(fingerprints))
            if maps.pop(path, None) is None:
                maps[path] = []
        maps = {p: v for p, v in maps.items() if p in fingerprints}
        blobs = {p: f.tobytes() for p, f in fingerprints.items()}
        got = kept.counts(blobs, involving=maps)
        assert dict(got) == dict(copies._shared_lines_python(fingerprints, involving=maps)), step
        checked_pairs += len(got)
    assert checked_pairs > 300  # the runs did compare pairs, not only empty counts


def test_kept_shared_lines_let_go_of_a_repository_too_large_to_keep(monkeypatch):
    from rag.ingest import copies

    monkeypatch.setattr(copies, "MAX_KEPT_HASHES", 10)
    fingerprints = {f"f{i}.js": fingerprint_lines([f"const shared{n} = compute({n});" for n in range(i, i + 8)])
                    for i in range(4)}
    blobs = {p: f.tobytes() for p, f in fingerprints.items()}
    kept = copies.SharedLines()
    first = kept.counts(blobs, involving={})
    assert first and dict(first) == dict(copies._shared_lines_python(fingerprints, involving={}))
    assert not kept._holders and not kept._prints  # nothing held past the cap; the next call counts afresh
    assert dict(kept.counts(blobs, involving={"f0.js": []})) == dict(
        copies._shared_lines_python(fingerprints, involving={"f0.js": []}))


def test_a_bundle_s_chunk_is_replaced_by_the_source_it_was_compiled_from():
    """A bundle lists many sources; its matched chunk is the compiled text of one of them. Before, the
    first source of its map with any candidate took its place (here src/widget.ts, for a chunk of gear)."""
    from dataclasses import dataclass

    from rag.search.copies import FOREIGN, corresponding, prefer_sources

    @dataclass
    class Cand:
        id: int
        path: str
        score: float
        text: str

    bundle = Cand(1, "dist/bundle.js", 0.9, "function advanceRatchet(tooth) { return sprocketTeeth[tooth + 1]; }")
    widget = Cand(2, "src/widget.ts", 0.5, "export function paintWidget(options: WidgetOptions): string {")
    gear = Cand(3, "src/gear.ts", 0.4, "export function advanceRatchet(tooth: number) { return sprocketTeeth[tooth + 1]; }")
    copies = {"dist/bundle.js": ("src/widget.ts", "src/gear.ts")}
    ranked = prefer_sources([bundle, widget, gear], copies)
    assert [c.path for c in ranked] == ["src/gear.ts", "src/widget.ts"] and ranked[0].score == 0.9
    # no shared name: the first source's best candidate, as for a one-source copy; no candidate: None
    assert corresponding(Cand(4, "dist/bundle.js", 0.9, "x()"), copies["dist/bundle.js"],
                         {"src/widget.ts": [widget], "src/gear.ts": [gear]}) is widget
    assert corresponding(bundle, copies["dist/bundle.js"], {}) is None
    # a chunk of a dependency the bundle inlines (class-validator's UMD bundle holds libphonenumber-js): it shares
    # a few common names with the sources' candidates, none of which it was compiled from; it used to lift the one
    # sharing most into the answer
    inlined = Cand(5, "dist/bundle.js", 0.95, "function parsePhoneNumberWithError(text, defaultCountry, metadata) {"
                   " var countryCallingCode = extractCountryCallingCode(text, metadata); if (!countryCallingCode)"
                   " throw new ParseError('INVALID_COUNTRY'); return normalizeDigits(nationalNumber, options); }")
    assert corresponding(inlined, copies["dist/bundle.js"], {"src/widget.ts": [widget], "src/gear.ts": [gear]}) \
        is FOREIGN
    ranked = prefer_sources([inlined, bundle, widget, gear], copies)
    assert [c.path for c in ranked] == ["src/gear.ts", "src/widget.ts"]
    # fusion gives every chunk of a file its file's score: only the bundle's first chunk lifts its source to it
    # (async 3.2.6's bundle lifted retry.js over ensureAsync.js with a chunk of retry's documentation)
    first = Cand(6, "dist/bundle.js", 1.0, "function advanceRatchet(tooth) { return sprocketTeeth[tooth + 1]; }")
    later = Cand(7, "dist/bundle.js", 1.0, "export function paintWidget(options: WidgetOptions): string {")
    other = Cand(8, "src/other.ts", 0.99, "export function varnish() {}")
    widget, gear = Cand(2, "src/widget.ts", 0.5, widget.text), Cand(3, "src/gear.ts", 0.4, gear.text)
    ranked = prefer_sources([first, later, other, widget, gear], copies)
    assert [(c.path, c.score) for c in ranked] == [("src/gear.ts", 1.0), ("src/other.ts", 0.99),
                                                   ("src/widget.ts", 0.5)]


def test_a_script_holding_two_others_is_their_bundle_whatever_its_name(tmp_path):
    """ejs 3.1.10 ships ``ejs.js`` (lib/ browserified) at the package root: no build folder, no bundle name, so
    it was no copy and led questions about lib/ejs.js."""
    def module(name: str, n: int) -> str:
        return "".join(f"function {name}Step{i}(input) {{\n  return transformInput(input, '{name} step {i}');\n}}\n"
                       for i in range(n))
    engine_js, utils_js = module("render", 8), module("escape", 6)
    wrapper = "(function(f){ if (typeof exports === 'object') { module.exports = f(); } })(function(){\n"
    readme = "# Usage\n\n```js\n" + engine_js + "```\n\n```js\n" + utils_js + "```\n"
    tree = {"lib/ejs.js": engine_js, "lib/utils.js": utils_js, "ejs.js": wrapper + engine_js + utils_js + "});\n",
            "docs/usage.md": readme,                                      # quotes both in full: not their copy
            "lib/partial.js": module("render", 8)[:-1] + "\n// a hand-written twin of one file\n"}
    with indexed_engine(tmp_path, tree) as engine:
        copies = recorded(engine)
        assert set(copies["ejs.js"]) >= {"lib/ejs.js", "lib/utils.js"}   # (and lib/partial.js, the twin of one)
        assert "docs/usage.md" not in copies
        paths = [s.path for s in engine.retrieve("How does renderStep3 transform its input?", limit=10)]
        assert paths[0] in ("lib/ejs.js", "lib/partial.js") and "ejs.js" not in paths[:2]


def test_a_module_two_snippets_were_cut_from_is_no_bundle_of_them(tmp_path):
    """A break-it review: ``snippets/refill.js`` and ``snippets/drain.js`` each copy ten lines of the 42-line
    ``lib/limiter.js``; rule 3c took the limiter for their bundle and hid it, even for its own comment's words."""
    lines = ["'use strict';", "// the okapi rate limiter: token bucket per client"] + [
        f"function okapiStep{i}(b,n){{ b.tokens=Math.min(b.cap,b.tokens+(n-b.t{i})*b.rate{i}); return b; }}"
        for i in range(40)]
    tree = {"package.json": '{"name": "okapi"}', "lib/limiter.js": "\n".join(lines) + "\n",
            "snippets/refill.js": "\n".join(lines[2:12]) + "\n", "snippets/drain.js": "\n".join(lines[20:30]) + "\n"}
    with indexed_engine(tmp_path, tree) as engine:
        assert "lib/limiter.js" not in recorded(engine)
        assert [s.path for s in engine.retrieve("okapi rate limiter token bucket", limit=5)][0] == "lib/limiter.js"


def test_of_two_builds_the_es_module_stands_for_the_module_and_a_named_copy_stays(tmp_path):
    """chokidar 4.0.3 ships CommonJS at the package root (``index.js``, ``handler.js``) and ES modules in ``esm/``:
    rule 1b kept the shorter path, the CommonJS copy, and "In ``esm/handler.js``, how …" got ``handler.js``'s
    lines, the named file replaced by its stand-in."""
    body = [f"  if (entry{i}.watched) {{ schedulePoll(entry{i}, 'handler step {i}'); }}" for i in range(40)]
    esm = "import { schedulePoll } from './poll.js';\nexport function watchHandler(entry0) {\n" + "\n".join(body) + "\n}\n"
    cjs = ('"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n'
           "exports.watchHandler = watchHandler;\nconst poll_js_1 = require(\"./poll.js\");\n"
           "function watchHandler(entry0) {\n" + "\n".join(body) + "\n}\n")
    tree = {"package.json": '{"name": "watcher", "main": "handler.js", "module": "esm/handler.js"}',
            "handler.js": cjs, "esm/handler.js": esm}
    with indexed_engine(tmp_path, tree) as engine:
        assert recorded(engine) == {"handler.js": ["esm/handler.js"]}
        assert [s.path for s in engine.retrieve("How does watchHandler schedule a poll?", limit=5)][0] == "esm/handler.js"
        named = [s.path for s in engine.retrieve("In handler.js, how does watchHandler schedule a poll?", limit=5)]
        assert named[0] == "handler.js"   # the copy the question names stays


def test_a_copy_of_a_copy_stands_for_the_original_and_a_cycle_changes_nothing():
    from rag.search.copies import original_sources

    copies = {"bundles/x.umd.js": ("esm5/a.js", "esm5/b.js", "src/c.ts"), "esm5/a.js": ("esm2015/a.js",),
              "esm5/b.js": ("esm2015/b.js", "esm2015/a.js"), "dist/c.js": ("src/c.ts",),
              "p.js": ("q.js",), "q.js": ("p.js",)}   # a cycle: never recorded, guarded
    assert original_sources(copies) == {
        "bundles/x.umd.js": ("esm2015/a.js", "esm2015/b.js", "src/c.ts"), "esm5/a.js": ("esm2015/a.js",),
        "esm5/b.js": ("esm2015/b.js", "esm2015/a.js"), "dist/c.js": ("src/c.ts",),
        "p.js": ("q.js",), "q.js": ("p.js",)}
