"""rag.search.retriever and rag.search.structure: the typed per-generation cache and the structure stream."""
from __future__ import annotations

from repo_helpers import CODE_REPO, indexed_engine, result_paths

from rag.engine import Engine
from rag.evaluation import distinct_paths
from rag.parse.records import Call, Definition, EnvVar, Export, FileStructure, Import
from rag.search.lexical import explicit_paths
from rag.search.query import analyze
from rag.search.retriever import GenerationCache, Retriever
from rag.search.structure import caller_table, file_is_subject, package_importers, structure_bonus, symbol_table

FILES = {
    "src/db.js": ("const host = process.env.DB_HOST;\nfunction connectPool() { return host; }\n"
                  "module.exports = { connectPool };\n"),
    "src/app.js": "const { connectPool } = require('./db');\nfunction startApp() { return connectPool(); }\n",
    "README.md": "# Demo\n\nThe app starts a database pool.\n",
}


def test_the_engine_delegates_to_one_retriever_that_fills_typed_cache_fields(tmp_path):
    with indexed_engine(tmp_path, FILES) as engine:
        assert isinstance(engine.retriever, Retriever) and engine.vectors is None and engine.reranker is None
        assert "src/db.js" in result_paths(engine.retrieve("Where is connectPool defined?"))
        cache = engine.retriever._cache
        assert isinstance(cache, GenerationCache) and cache.generation == engine.generation
        assert cache.paths == ["README.md", "src/app.js", "src/db.js"] and cache.total_chunks == 3
        assert set(cache.structures) == {"src/app.js", "src/db.js"} and cache.symbols["connectPool"]["src/db.js"] == 1.0
        assert cache.repository_names is not None and cache.idf
        assert engine.code_graph() is cache.graph is engine.code_graph()


def test_path_traits_are_kept_per_generation_and_give_the_same_prior(tmp_path):
    from rag.search.lexical import Candidate, intent_prior, path_traits

    files = {**FILES, "LICENSE": "MIT License\nPermission is hereby granted to deal in the pool\n",
             "test/db.test.js": "const { connectPool } = require('../src/db');\ntest('pool', connectPool);\n",
             "CHANGELOG.md": "# Changes\n\n## 1.1\n\nThe pool starts lazily.\n"}
    with indexed_engine(tmp_path, files) as engine:
        engine.retrieve("How does the database pool start?")
        idf = engine.retriever._cache.idf
        kept = {key[1]: value for key, value in idf.items() if isinstance(key, tuple) and key[0] == "__traits__"}
        assert {"test/db.test.js", "CHANGELOG.md", "src/db.js"} <= set(kept)
        assert kept["test/db.test.js"].low_value and kept["CHANGELOG.md"].changelog and not kept["src/db.js"].low_value
    assert path_traits("LICENSE").project_doc == 0 and path_traits("docs/examples/pool.js").doc_folder
    for question in ("How does the pool start?", "Which licence covers the pool?", "What changed in the pool release?",
                     "Where are the tests of the pool?", "Which source file defines the pool?"):
        query = analyze(question)
        for path, kind, file_type in (("LICENSE", "documentation", "txt"), ("test/db.test.js", "test", "js"),
                                      ("CHANGELOG.md", "documentation", "md"), ("dist/db.js", "source", "js"),
                                      ("docs/examples/pool.js", "example", "js"), ("package.json", "config", "json"),
                                      ("types/pool.d.ts", "types", "ts")):
            c = Candidate(1, path, 1, 2, file_type, kind, None, "pool", 0.0)
            assert intent_prior(c, query, traits=path_traits(path)) == intent_prior(c, query)


def test_every_path_s_traits_and_stems_are_built_once_per_generation_by_a_question_or_warm(tmp_path):
    files = {**FILES, "docs/unrelated.md": "# Nothing\n\nNothing here matches.\n"}
    with indexed_engine(tmp_path, files) as engine:
        engine.warm()
        idf = engine.retriever._cache.idf
        paths = engine.retriever._cache.paths
        assert all(("__traits__", p) in idf and ("__pathstems__", p) in idf for p in paths)
    with indexed_engine(tmp_path / "second", files) as engine:
        engine.retrieve("Where is connectPool defined?")   # a question builds them for every path, not only its own
        idf = engine.retriever._cache.idf
        assert ("__traits__", "docs/unrelated.md") in idf and ("__pathstems__", "docs/unrelated.md") in idf


def test_a_community_file_is_found_by_the_one_combined_pattern_exactly_when_by_its_own():
    from rag.search.lexical import _ANY_PROJECT_DOC, _PROJECT_DOCS, path_traits

    paths = ["LICENSE", "licenses/MIT.txt", "docs/CODE_OF_CONDUCT.md", "CONTRIBUTING.rst", "SECURITY.md",
             "support.md", "AUTHORS", "FUNDING.yml", "NOTICE-3rd-party.txt", "src/license.js", "lib/notices/a.js",
             "docs/sponsors.md", "src/contributors/list.js", "README.md", "copying.txt", "src/index.js"]
    for path in paths:
        own = next((i for i, (files, _asks) in enumerate(_PROJECT_DOCS) if files.search(path)), -1)
        assert bool(_ANY_PROJECT_DOC.search(path)) == (own >= 0)
        assert path_traits(path).project_doc == own


def test_an_update_through_another_engine_replaces_the_cache(tmp_path):
    with indexed_engine(tmp_path, FILES) as engine:
        engine.retrieve("connectPool")
        old = engine.retriever._cache
        other = Engine.open(tmp_path / "repo", index_path=tmp_path / "index.sqlite")
        try:
            (tmp_path / "repo" / "src" / "extra.js").write_text("function extraThing() {}\n", encoding="utf-8")
            other.update()
        finally:
            other.close()
        assert "src/extra.js" in engine.structures()
        assert engine.retriever._cache is not old and engine.retriever._cache.generation == old.generation + 1


def test_symbol_table_weights_definitions_over_exports_over_env_vars():
    a = FileStructure(path="a.js", language="javascript",
                      definitions=[Definition(name="x", kind="function", start=1, end=2)],
                      exports=[Export(name="x", line=3, kind="named"), Export(name="y", line=3, kind="named")],
                      env_vars=[EnvVar(name="y", line=1), EnvVar(name="Z", line=1)])
    b = FileStructure(path="b.js", language="javascript", env_vars=[EnvVar(name="x", line=1)])
    assert symbol_table({"a.js": a, "b.js": b}) == {
        "x": {"a.js": 1.0, "b.js": 0.6}, "y": {"a.js": 0.8}, "Z": {"a.js": 0.6}}


def test_structure_bonus_asks_only_for_what_a_signal_needs():
    asked: list[str] = []

    def give(name, value):
        def get():
            asked.append(name)
            return value
        return get

    args = {"known_paths": ["src/db.js"], "structures": give("structures", {}), "graph": give("graph", None),
            "symbols": give("symbols", {"connectPool": {"src/db.js": 1.0}})}
    assert structure_bonus(analyze("how does the pool work"), **args) is None and asked == []
    assert structure_bonus(analyze("where is connectPool?"), **args) == {"src/db.js": 0.5} and asked == ["symbols"]


def test_the_caller_table_files_calls_by_the_callees_last_name():
    a = FileStructure(path="a.js", language="javascript",
                      calls=[Call(callee="this.notify", line=1), Call(callee="plain", line=2)])
    b = FileStructure(path="b.py", language="python", calls=[Call(callee="events.notify", line=4)])
    assert caller_table({"a.js": a, "b.py": b}) == {"notify": {"a.js", "b.py"}, "plain": {"a.js"}}


def test_files_calling_a_named_function_outrank_its_definition_only_when_the_question_asks_for_callers():
    args = {"known_paths": ["src/db.js", "src/app.js"], "structures": dict, "graph": lambda: None,
            "symbols": lambda: {"connectPool": {"src/db.js": 1.0}},
            "callers": lambda: {"connectPool": {"src/app.js"}}}
    # a list of callers asked for: they are the answer, hard-ranked (CALLS_OF); asked without a list, a soft bonus
    assert structure_bonus(analyze("Which files call connectPool?"), **args) == {"src/db.js": 0.5, "src/app.js": 10.5}
    assert structure_bonus(analyze("Does anything call connectPool?"), **args) == {"src/db.js": 0.5, "src/app.js": 0.6}
    # the list's noun must be the verb's subject, and "called X" names X (a break-it review)
    assert structure_bonus(analyze("Which module do I use to call connectPool?"), **args) == {
        "src/db.js": 0.5, "src/app.js": 0.6}
    assert structure_bonus(analyze("Which file has the function called connectPool?"), **args) == {"src/db.js": 0.5}
    assert structure_bonus(analyze("Where is connectPool defined?"), **args) == {"src/db.js": 0.5}
    # raising a class calls it; a name the question sets aside ("rather than raising X") is not asked about
    raisers = dict(args, symbols=lambda: {}, callers=lambda: {"RemoteError": {"src/db.js"}, "LocalError": {"src/app.js"}})
    for question in ("Which modules raise RemoteError rather than raising LocalError?",
                     "Which modules raise RemoteError without raising LocalError?",   # a break-it review
                     "Which modules raise RemoteError, as opposed to raising LocalError?"):
        assert structure_bonus(analyze(question), **raisers) == {"src/db.js": 10.5}, question
    # "using X" asks how X behaves, not who calls it; asked where it is defined, the definition stays first
    assert structure_bonus(analyze("How does connectPool behave when using timeouts?"), **args) == {"src/db.js": 0.5}
    assert structure_bonus(analyze("Where is connectPool defined, and who calls it?"), **args) == {
        "src/db.js": 0.5, "src/app.js": 0.45}
    # a call verb of another clause asks nothing of the name (a blind held-out set: HTTPException, once an identifier,
    # had the callers of a class raised in 70 files lead "… and where is that default handler registered?")
    question = ("How does a connectPool failure raised in a request handler become the JSON error reply the client "
                "gets, and where is that default handler registered?")
    assert structure_bonus(analyze(question), **args) == {"src/db.js": 0.5}
    # ... but a pronoun after the verb stands for a name written before it, however far (a break-it review)
    for question in ("I was reading connectPool in the database module this morning. Who calls it?",
                     "connectPool keeps timing out under load in production; which functions call it?"):
        assert structure_bonus(analyze(question), **args) == {"src/db.js": 0.5, "src/app.js": 0.6}, question
    # a test's call ranks below the definition unless the question is about tests, or asks for a list (then last)
    args["callers"] = lambda: {"connectPool": {"src/app.js", "src/db.test.js"}}
    assert structure_bonus(analyze("Who calls connectPool?"), **args)["src/db.test.js"] == 0.3
    assert structure_bonus(analyze("Who in the tests calls connectPool?"), **args)["src/db.test.js"] == 0.6
    bonus = structure_bonus(analyze("Which files call connectPool?"), **args)
    assert bonus["src/app.js"] > bonus["src/db.test.js"] > 10 > bonus["src/db.js"]


def test_package_importers_match_the_package_a_specifier_names_and_never_a_repository_file():
    def imports(*items):
        return FileStructure(path="x", language="javascript", imports=list(items))

    structures = {
        "a.js": imports(Import(spec="lodash/merge", line=1, kind="esm")),
        "b.js": imports(Import(spec="node:fs", line=1, kind="require")),
        "c.ts": imports(Import(spec="@scope/pkg/sub", line=1, kind="esm")),
        "d.py": imports(Import(spec="tornado.gen", line=1, kind="from")),
        "e.js": imports(Import(spec="./lodash", line=1, kind="require", resolved="lodash.js")),
        "f.js": imports(Import(spec="lodash", line=1, kind="dynamic", expression="name")),
    }
    assert package_importers(structures, "Lodash") == ["a.js"]
    assert package_importers(structures, "fs") == ["b.js"]
    assert package_importers(structures, "@scope/pkg") == ["c.ts"]
    assert package_importers(structures, "tornado") == ["d.py"]
    assert package_importers(structures, "gen") == []


def test_a_name_the_question_looks_in_is_no_module_whose_importers_it_asks_for():
    """A break-it review: "Which modules in h11 import normalize_and_validate?" counted ``h11`` (an identifier, and
    the repository's own package) among the names imported, and hard-ranked every file importing ``h11``."""
    def imports(path, *items):
        return FileStructure(path=path, language="python", imports=list(items))

    structures = {
        "h11/_headers.py": imports("h11/_headers.py", Import(spec="._util.normalize_and_validate", line=1, kind="from",
                                                            names=["normalize_and_validate"], resolved="h11/_util.py")),
        "docs/conf.py": imports("docs/conf.py", Import(spec="h11", line=1, kind="import", names=["h11"],
                                                      resolved="h11/__init__.py")),
        "h11/__init__.py": imports("h11/__init__.py"), "h11/_util.py": imports("h11/_util.py"),
    }
    args = {"known_paths": sorted(structures), "structures": lambda: structures, "graph": lambda: None,
            "symbols": lambda: {}}
    for question in ("Which modules in h11 import normalize_and_validate?",
                     "Which modules in the h11 package import normalize_and_validate?"):
        bonus = structure_bonus(analyze(question), **args)
        assert bonus == {"h11/_headers.py": 10.5}, question
    # a name that is no folder of the repository is still one to look for
    assert "docs/conf.py" in structure_bonus(analyze("Which modules in docs import h11?"), **args)


def test_a_single_module_distribution_is_the_repository_s_own_package():
    """A blind held-out set (bottle, one ``bottle.py``): "Which non-test files import the bottle module?" took
    ``bottle`` for an external package, so only a test importing the unindexed ``bottle.ext`` answered, and
    ``setup.py``'s ``import bottle`` (resolved to ``bottle.py``) was left out."""
    def imports(path, *items):
        return FileStructure(path=path, language="python", imports=list(items))

    structures = {
        "bottle.py": imports("bottle.py"),
        "setup.py": imports("setup.py", Import(spec="bottle", line=9, kind="import", names=["bottle"],
                                               resolved="bottle.py")),
        "test/test_importhook.py": imports("test/test_importhook.py",
                                           Import(spec="bottle.ext.demo", line=3, kind="import", names=["bottle"])),
    }
    args = {"known_paths": sorted(structures), "structures": lambda: structures, "graph": lambda: None,
            "symbols": lambda: {}}
    bonus = structure_bonus(analyze("Which non-test files import the bottle module?"), **args)
    assert list(bonus) == ["setup.py"] and bonus["setup.py"] >= 10


PACKAGE_FILES = {
    "pkg/__init__.py": "try:\n    import tornado\nexcept ImportError:\n    tornado = None\n\n\ndef retry():\n    return 1\n",
    "pkg/web.py": "from tornado import gen\n\n\ndef sleep_later(seconds):\n    return gen.sleep(seconds)\n",
    "pkg/wait.py": "def wait_fixed(seconds):\n    return seconds\n",
    "tests/test_web.py": "import tornado.testing\n\n\ndef test_it():\n    assert True\n",
    "README.md": "# pkg\n\nRetries calls with backoff.\n",
}


def test_a_question_about_the_importers_of_a_package_lists_them_source_files_first(tmp_path):
    with indexed_engine(tmp_path, PACKAGE_FILES) as engine:
        asked = "Which source files import tornado, and what fallback is chosen when the dependency cannot load at runtime?"
        paths = [s.path for s in engine.retrieve(asked)]
        assert paths[:3] == ["pkg/__init__.py", "pkg/web.py", "tests/test_web.py"]
        # the importers are the answer: without them the question shares too few words with the code to be answered
        assert engine.retrieve(asked.replace("import", "mention")) == []
        # the root package of a module or a node: specifier
        # (pkg/web.py, which imports gen itself, may come first: "gen" is a member written as code)
        assert set([s.path for s in engine.retrieve("Which modules import tornado.gen?")][:2]) == {"pkg/__init__.py",
                                                                                                 "pkg/web.py"}
        # no list of files asked for: an import verb before a package name is no structural question
        plain = "Does the retry loop depend on tornado being installed at runtime?"
        bonus = engine.retriever._structure_bonus(*_conn_and_cache(engine), analyze(plain))
        assert not bonus or max(bonus.values()) < 10.0


def test_a_file_the_question_names_leads_and_the_rest_of_the_answer_follows(tmp_path):
    """A blind held-out set: "I edited README.rst but the published version did not change: where does it come
    from?" got ``README.rst`` alone, every other file cut below the named file's hard boost (``setup.py`` and the
    module defining the version were the answer). A list of importers is still not padded."""
    files = {
        "README.rst": "Tiny\n====\n\nA tiny web framework. Install it with pip.\n",
        "setup.py": "import tiny\n\nsetup(name='tiny', version=tiny.__version__, long_description=tiny.__doc__)\n",
        "tiny.py": '"""Tiny: a web framework."""\n__version__ = "1.2"\n\n\ndef route(path):\n    return path\n',
        "other.py": "def unrelated_helper():\n    return 3\n",
    }
    with indexed_engine(tmp_path, files) as engine:
        asked = ("I edited README.rst but the published version and long description did not change. "
                 "Where do the version and long description come from?")
        paths = [s.path for s in engine.retrieve(asked)]
        assert paths[0] == "README.rst" and "setup.py" in paths
        assert [s.path for s in engine.retrieve("Which files import tiny.py?")] == ["setup.py", "tiny.py"]


def test_a_named_file_is_not_padded_with_files_that_only_share_its_path_s_words(tmp_path):
    """A break-it review: with the rest of the ranking following a named file, "what does src/cache.js do?" listed
    every ``src/*.js`` after it (the path's "src" and "js" match them all, and the threshold is a share of the best of
    them); so did "which files import src/cache.js?" when nothing imports it. Other files follow a named one only when
    they match the question's words beyond the named file's own."""
    files = {f"src/{name}.js": f"function {name}Thing(a) {{\n  return a + 1;\n}}\nmodule.exports = {{ {name}Thing }};\n"
             for name in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")}
    files["src/cache.js"] = ("// A least-recently-used cache with a size limit\nclass LruCache {\n  constructor(limit) {\n"
                             "    this.limit = limit;\n    this.items = new Map();\n  }\n}\nmodule.exports = { LruCache };\n")
    with indexed_engine(tmp_path, files) as engine:
        for question in ("What does src/cache.js do?", "Which files import src/cache.js?", "what does cache.js do?"):
            assert [s.path for s in engine.retrieve(question)] == ["src/cache.js"], question
        # words beyond the named file that other files match: they follow it
        paths = [s.path for s in engine.retrieve("What does src/cache.js do, and where is alphaThing defined?")]
        assert paths[0] == "src/cache.js" and "src/alpha.js" in paths


def _conn_and_cache(engine):
    retriever = engine.retriever
    conn = engine.index.conn
    cache = retriever._cache_for(conn)
    cache.paths = engine.indexed_paths()
    return conn, cache


def test_environment_readers_outside_tests_come_first_and_tests_only_when_nothing_else_reads_it():
    def reading(path):
        return FileStructure(path=path, language="python", env_vars=[EnvVar(name="HOME", line=1)])

    def bonus(paths, question="Which file reads environment variables?"):
        structures = {p: reading(p) for p in paths}
        return structure_bonus(analyze(question), known_paths=paths,
                               structures=lambda: structures, graph=lambda: None, symbols=dict)

    assert bonus(["app/config.py", "tests/test_config.py"]) == {"app/config.py": 0.3}
    assert bonus(["app/config.py", "app/test_config.py"]) == {"app/config.py": 0.3}  # a test by its name
    assert bonus(["tests/test_config.py"]) == {"tests/test_config.py": 0.3}
    assert bonus(["app/config.py", "tests/test_config.py"], "Which tests read environment variables?") == {
        "app/config.py": 0.3, "tests/test_config.py": 0.3}
    assert bonus(["app/config.py", "tests/test_config.py"],  # tests named only to exclude them
                 "Which files (not tests) read environment variables?") == {"app/config.py": 0.3}


def test_dependants_that_import_a_name_the_question_writes_come_first():
    def importer(path, *names):
        return FileStructure(path=path, language="python", imports=[
            Import(spec=f"pkg.concurrency.{n}", line=1, kind="from", names=[n], resolved="pkg/concurrency.py")
            for n in names])

    structures = {"pkg/a.py": importer("pkg/a.py", "other"), "pkg/b.py": importer("pkg/b.py", "run_sync"),
                  "tests/t.py": importer("tests/t.py", "run_sync"), "pkg/concurrency.py": FileStructure(
                      path="pkg/concurrency.py", language="python")}

    class Graph:
        @staticmethod
        def dependants(path):
            return ["pkg/a.py", "pkg/b.py", "tests/t.py"] if path == "pkg/concurrency.py" else []

    bonus = structure_bonus(analyze("Which modules import run_sync from pkg/concurrency.py?"), known_paths=list(structures),
                            structures=lambda: structures, graph=Graph, symbols=dict)
    assert sorted(bonus, key=bonus.get, reverse=True)[:3] == ["pkg/b.py", "pkg/a.py", "tests/t.py"]
    assert min(bonus[p] for p in ("pkg/a.py", "pkg/b.py", "tests/t.py")) >= 10.0


DIRECTION_FILES = {
    "lib/errors.js": "class HandledError extends Error {}\nmodule.exports = { HandledError };\n",
    "lib/retry.js": ("const { HandledError } = require('./errors');\nconst { wait } = require('./timer');\n"
                     "function retry(fn) { try { return fn(); } catch (e) { throw new HandledError(e); } }\n"
                     "module.exports = { retry };\n"),
    "lib/thunks.js": ("const { HandledError } = require('./errors');\n"
                      "function runThunk(t) { if (t instanceof HandledError) return null; return t(); }\n"
                      "module.exports = { runThunk };\n"),
    "lib/timer.js": "function wait(ms) { return new Promise((r) => setTimeout(r, ms)); }\nmodule.exports = { wait };\n",
    "lib/index.js": "const { retry } = require('./retry');\nmodule.exports = { retry };\n",
}


def test_the_file_a_question_names_is_the_importer_or_the_imported_one_by_its_wording():
    subject = ["Which modules does lib/retry.js import?", "What is required by `lib/retry.js`?",
               "What are lib/retry.js's dependencies?", "Which functions are called from lib/retry.js?",
               "List the dependencies of lib/retry.js", "Which files does 'lib/retry.js' itself require?"]
    imported = ["Which files import lib/retry.js?", "Which modules call retry from lib/retry.js?",
                "Which files use the retry helper defined in lib/retry.js?",
                "If lib/retry.js were deleted, which other source files would fail to load?"]
    assert all(file_is_subject(q, "lib/retry.js") for q in subject)
    assert not any(file_is_subject(q, "lib/retry.js") for q in imported)


def test_a_form_is_compiled_with_the_mention_only_when_its_words_are_in_the_question(monkeypatch):
    import re

    from rag.search import structure

    questions = ["What does lib/retry.js do?", "How does lib/retry.js work?", "Where is lib/retry.js used?",
                 "Which modules does lib/retry.js import?", "What is required by `lib/retry.js`?",
                 "What are lib/retry.js's dependencies?", "Which functions are called from lib/retry.js?",
                 "List the dependencies of lib/retry.js", "Which files does 'lib/retry.js' itself require?",
                 "Which files import lib/retry.js?", "Which modules call retry from lib/retry.js?",
                 "Does the module LIB/RETRY.JS directly pull in the timer?", "lib/retry.js uses what?",
                 "Which files use lib/retry.js?", "Imports in the file lib/retry.js"]
    every_form = [any(re.search(form.replace("{file}", r"[`'\"]?" + re.escape("lib/retry.js") + r"[`'\"]?"), q, re.I)
                      for form in structure._SUBJECT_FORMS) for q in questions]
    assert [file_is_subject(q, "lib/retry.js") for q in questions] == every_form   # the same answers
    searched: list[str] = []
    search = re.search
    monkeypatch.setattr(structure.re, "search", lambda pattern, *a, **k: (searched.append(pattern), search(pattern, *a, **k))[1])
    for question in ("What does lib/retry.js do?", "How does lib/retry.js work?", "Where is lib/retry.js used?"):
        assert not file_is_subject(question, "lib/retry.js")
    assert searched == []    # no form's words in them: nothing compiled for the mention
    assert file_is_subject("Which modules does lib/retry.js import?", "lib/retry.js") and len(searched) == 1


def test_a_question_about_what_a_file_imports_gets_its_dependencies_not_its_dependants(tmp_path):
    # Before: "does lib/retry.js import" matched the dependants' wording, and lib/index.js (which imports
    # lib/retry.js) came first.
    with indexed_engine(tmp_path, DIRECTION_FILES) as engine:
        paths = distinct_paths(engine.retrieve("Which modules does lib/retry.js import?"))
        assert set(paths[:2]) == {"lib/errors.js", "lib/timer.js"}
        assert "lib/index.js" not in paths[:3]
        # no list asked for: the named file itself answers (its import lines), never its dependants
        assert distinct_paths(engine.retrieve("What does lib/retry.js import?"))[0] == "lib/retry.js"
        assert distinct_paths(engine.retrieve("How is HandledError used in lib/retry.js?"))[0] == "lib/retry.js"


def test_the_users_of_a_class_a_named_file_defines_come_before_that_file(tmp_path):
    # Before: "use" was no dependants' wording, and the named file, boosted as every named file is, was the
    # whole answer.
    with indexed_engine(tmp_path, DIRECTION_FILES) as engine:
        paths = distinct_paths(engine.retrieve("Which files use the HandledError class defined in lib/errors.js?"))
        assert set(paths[:2]) == {"lib/retry.js", "lib/thunks.js"}
        assert "lib/errors.js" in paths[2:]
        # "load" and "pull in" are importing too (a blind held-out question asked "which modules load …")
        for question in ("Which modules load the helpers in lib/errors.js?",
                         "Which files pull in lib/errors.js for its error class?",
                         # a blind held-out question: "which schema types are built on top of … keys.js?"
                         "Which classes are built on top of the error logic in lib/errors.js?",
                         "Which types are based on lib/errors.js?"):
            paths = distinct_paths(engine.retrieve(question))
            assert set(paths[:2]) == {"lib/retry.js", "lib/thunks.js"}, question
        paths = distinct_paths(engine.retrieve("If lib/errors.js were removed, which files would fail to load?"))
        assert set(paths[:2]) == {"lib/retry.js", "lib/thunks.js"} and paths.index("lib/errors.js") == 2


def test_a_question_about_a_named_file_that_says_import_is_no_list_of_its_importers(tmp_path):
    """A blind held-out question: "In uvicorn/importer.py, what error do I get … when the module exists but
    something it imports is missing?" was taken for "which modules import uvicorn/importer.py": "what … module"
    read as a request for a list of files, and its importers were ranked above it."""
    with indexed_engine(tmp_path, DIRECTION_FILES) as engine:
        for question in ("In lib/errors.js, what happens when the module exists but something it imports is missing?",
                         "What does lib/errors.js do when a module it requires throws on load?"):
            assert distinct_paths(engine.retrieve(question))[0] == "lib/errors.js", question
        # a list asked for close to its noun is still one, and so is an importer asked for without a list
        for question in ("Which other modules import lib/errors.js?", "What files require lib/errors.js?",
                         "What are the modules that import lib/errors.js?", "Where is lib/errors.js imported?",
                         "Does anything import lib/errors.js?", "Which code imports lib/errors.js?"):
            paths = distinct_paths(engine.retrieve(question))
            assert set(paths[:2]) == {"lib/retry.js", "lib/thunks.js"}, question


SUBCLASS_FILES = {
    "pkg/environment.py": ("class Environment:\n    \"\"\"The central template environment.\"\"\"\n"
                           "    def render(self, source):\n        return source\n"),
    "pkg/sandbox.py": ("from .environment import Environment\n\n\nclass SandboxedEnvironment(Environment):\n"
                       "    def render(self, source):\n        return source.strip()\n"),
    "pkg/native.py": ("from . import environment\n\n\nclass NativeEnvironment(environment.Environment):\n"
                      "    pass\n"),
    "pkg/loaders.py": ("from .environment import Environment\n\n\ndef load(env: Environment, name):\n"
                       "    return env.render(name)\n"),
    "src/reload.js": "class BaseReload {\n  restart() { return 1; }\n}\nmodule.exports = { BaseReload };\n",
    "src/stat.js": ("const { BaseReload } = require('./reload');\nclass StatReload extends BaseReload {\n"
                    "  restart() { return 2; }\n}\nmodule.exports = { StatReload };\n"),
    "src/uses.js": "const { BaseReload } = require('./reload');\nmodule.exports = new BaseReload();\n",
    "src/polling.js": ("const { StatReload } = require('./stat');\nclass PollingReload extends StatReload {\n"
                       "  restart() { return 3; }\n}\nmodule.exports = { PollingReload };\n"),
}


def test_the_subclasses_of_a_class_the_question_names_are_its_answer(tmp_path):
    """Blind held-out questions: "Which modules define their own subclass of Environment?" and "Which classes build
    on BaseReload?" got the files defining and importing the class, not the ones extending it (class bases were
    parsed but unused by retrieval)."""
    with indexed_engine(tmp_path, SUBCLASS_FILES) as engine:
        paths = distinct_paths(engine.retrieve("Which modules define their own subclass of Environment?"))
        assert set(paths[:2]) == {"pkg/sandbox.py", "pkg/native.py"}
        # directly or through a subclass
        assert set(distinct_paths(engine.retrieve("Which classes build on BaseReload?"))[:2]) == \
            {"src/stat.js", "src/polling.js"}
        # only the classes extending it themselves, when the question says so (a blind held-out question)
        paths = distinct_paths(engine.retrieve("Which classes are built directly on top of BaseReload?"))
        assert paths[0] == "src/stat.js" and "src/polling.js" not in paths[:2]
        # the other direction, and a capitalised word that is no class extended: no subclass answer
        assert distinct_paths(engine.retrieve("Which classes does StatReload extend?"))[0] != "src/polling.js"
        paths = distinct_paths(engine.retrieve("Which classes in the Environment module extend BaseReload?"))
        assert set(paths[:2]) == {"src/stat.js", "src/polling.js"}
        # an import asked for: the importers, the subclass among them
        paths = distinct_paths(engine.retrieve("Which modules import Environment?"))
        assert set(paths[:3]) == {"pkg/sandbox.py", "pkg/native.py", "pkg/loaders.py"}


def test_a_class_named_with_adjectives_before_it_still_asks_for_its_subclasses(tmp_path):
    """A blind held-out question: "Which files define subclasses of the abstract Metric base class?" abstained: the
    subclass wording wanted the class right after "the", not after "abstract"."""
    with indexed_engine(tmp_path, SUBCLASS_FILES) as engine:
        for question in ("Which files define subclasses of the abstract BaseReload base class?",
                         "Which classes extend the shared internal BaseReload?"):
            assert set(distinct_paths(engine.retrieve(question))[:2]) == {"src/stat.js", "src/polling.js"}, question


PROTOTYPE_FILES = {
    "lib/compiler/visitor.js": ("function Visitor() {\n  this.parents = [];\n}\n"
                                "Visitor.prototype = {\n  accept: function(node) {\n    return this[node.type](node);\n  }\n};\n"
                                "export default Visitor;\n"),
    "lib/compiler/printer.js": ("import Visitor from './visitor';\nexport function PrintVisitor() {\n"
                                "  this.padding = 0;\n}\n"
                                "PrintVisitor.prototype = new Visitor();\nPrintVisitor.prototype.pad = function(s) {\n"
                                "  return s;\n};\n"),
    "lib/compiler/whitespace.js": ("import Visitor from './visitor';\nfunction WhitespaceControl(options) {\n"
                                   "  this.options = options;\n}\n"
                                   "WhitespaceControl.prototype = Object.create(Visitor.prototype);\n"
                                   "export default WhitespaceControl;\n"),
    "lib/compiler/strip.js": ("const util = require('util');\nconst WhitespaceControl = require('./whitespace');\n"
                              "function StripControl() {}\nutil.inherits(StripControl, WhitespaceControl);\n"
                              "module.exports = StripControl;\n"),
    "lib/cancel.js": ("var utils = require('./utils');\nfunction CanceledError(message) {\n  this.message = message;\n}\n"
                      "utils.inherits(CanceledError, Visitor, { __CANCEL__: true });\nmodule.exports = CanceledError;\n"),
    "lib/nested.js": ("function Child() {}\nfunction make() {\n  var Child = function () {};\n"
                      "  Child.prototype = new Visitor();\n  return Child;\n}\nmodule.exports = { Child, make };\n"),
    "lib/compiler/uses.js": ("import Visitor from './visitor';\nexport function walk(ast) {\n"
                             "  return new Visitor().accept(ast);\n}\n"),
    "lib/anyio/streams.py": ("class TypedAttributeSet:\n    pass\n\n\nclass SocketAttribute(TypedAttributeSet):\n"
                             "    family = 1\n"),
    "lib/anyio/file.py": ("from .streams import TypedAttributeSet\n\n\nclass FileStreamAttribute(TypedAttributeSet):\n"
                          "    path = None\n"),
    "lib/anyio/typed.py": ("from .streams import TypedAttributeSet\n\n\ndef typed_attribute():\n"
                           "    return TypedAttributeSet()\n"),
}


def test_constructor_functions_extend_what_their_prototype_extends(tmp_path):
    """A blind held-out question on handlebars: "Which modules subclass the AST Visitor (set their prototype to
    ``new Visitor()``)?": pre-class JavaScript extends a constructor through its prototype, which was not parsed, and
    the acronym before the class hid the subclass wording (so did backticks around the class, on anyio)."""
    with indexed_engine(tmp_path, PROTOTYPE_FILES) as engine:
        bases = {path: {d.name: d.bases for d in structure.definitions if d.bases}
                 for path, structure in engine.structures().items()}
        assert bases["lib/compiler/printer.js"] == {"PrintVisitor": ["Visitor"]}
        assert bases["lib/compiler/whitespace.js"] == {"WhitespaceControl": ["Visitor"]}
        assert bases["lib/compiler/strip.js"] == {"StripControl": ["WhitespaceControl"]}
        assert bases["lib/compiler/visitor.js"] == bases["lib/compiler/uses.js"] == {}
        # any `x.inherits` (axios's utils.inherits), and the constructor of the assignment's own scope (a break-it review)
        assert bases["lib/cancel.js"] == {"CanceledError": ["Visitor"]}
        nested = [(d.name, d.parent, d.bases) for d in engine.structures()["lib/nested.js"].definitions if d.bases]
        assert nested == [("Child", "make", ["Visitor"])]
        paths = distinct_paths(engine.retrieve("Which modules subclass the AST Visitor?"))
        assert set(paths[:5]) == {"lib/compiler/printer.js", "lib/compiler/whitespace.js", "lib/compiler/strip.js",
                                  "lib/cancel.js", "lib/nested.js"}
        assert "lib/compiler/uses.js" not in paths[:3]
        paths = distinct_paths(engine.retrieve("which modules define a subclass of `TypedAttributeSet`?"))
        assert set(paths[:2]) == {"lib/anyio/streams.py", "lib/anyio/file.py"}
        # a dotted path in backticks, and a possessive before the backticks (a break-it review)
        for question in ("Which modules subclass `lib.compiler.visitor.Visitor`?",
                         "Which modules extend the compiler module's `Visitor`?"):
            paths = distinct_paths(engine.retrieve(question))
            assert set(paths[:5]) == {"lib/compiler/printer.js", "lib/compiler/whitespace.js",
                                      "lib/compiler/strip.js", "lib/cancel.js", "lib/nested.js"}, question
        # an acronym describes a class after a subclass verb only: "build on the JSON Schema spec" names a standard
        def bonus(question: str) -> dict[str, float]:
            return structure_bonus(analyze(question), known_paths=list(engine.structures()),
                                   structures=engine.structures, graph=engine.code_graph, symbols=dict) or {}

        assert max(bonus("Which files build on the AST Visitor spec?").values(), default=0.0) < 10
        assert max(bonus("Which files extend the AST Visitor?").values(), default=0.0) > 10


def test_the_files_constructing_a_class_are_its_callers(tmp_path):
    """A blind held-out question on formidable: "Which source files construct a ``new FormidableError(...)``?" got the
    file defining the class first: "construct" was no call verb."""
    with indexed_engine(tmp_path, CALLER_FILES) as engine:
        for question in ("Which source files construct a `new SchemaError(...)`?",
                         "Which modules construct SchemaError?"):
            paths = distinct_paths(engine.retrieve(question))
            assert set(paths[:2]) == {"type/validate.js", "validation/validate.js"}, question
        # a one-word class is no identifier, but written as code it is the name asked about (a break-it review)
        for question in ("Which source files construct a `new Error(...)`?", "Which files throw Error(...) directly?"):
            assert distinct_paths(engine.retrieve(question))[0] == "execution/execute.js", question


ACRONYM_FILES = {
    "pkg/exceptions.py": "class SQLParseError(Exception):\n    \"\"\"Raised when a statement cannot be parsed.\"\"\"\n",
    "pkg/sql.py": ("from pkg.exceptions import SQLParseError\n\n\ndef statement(text):\n"
                   "    if not text:\n        raise SQLParseError('empty statement')\n    return text\n"),
    "pkg/formatter.py": ("from pkg.exceptions import SQLParseError\n\n\ndef validate(options):\n"
                         "    if options.get('indent') is None:\n        raise SQLParseError('indent must be a number')\n"),
    "pkg/cli.py": "import sys\n\n\ndef main():\n    sys.stderr.write('cannot parse the statement: error')\n",
    "lib/read.js": ("var createError = require('http-errors');\nfunction read(req, res, next) {\n"
                    "  next(createError(400, 'request aborted', { type: 'request.aborted' }));\n}\nmodule.exports = read;\n"),
    "lib/types/json.js": ("var createError = require('http-errors');\nvar read = require('../read');\n"
                          "function json(options) {\n  return function (req, res, next) {\n"
                          "    next(createError(415, 'unsupported charset'));\n  };\n}\nmodule.exports = json;\n"),
    "lib/types/text.js": ("var read = require('../read');\nfunction text(options) {\n  return function (req, res, next) {\n"
                          "    read(req, res, next);\n  };\n}\nmodule.exports = text;\n"),
    "README.md": "# pkg\n\nErrors are built with http-errors (createError) and SQLParseError is raised on bad input.\n",
}


def test_a_class_named_after_an_acronym_is_an_identifier_and_pulling_in_a_package_imports_it(tmp_path):
    """Blind held-out questions: "which modules import SQLParseError?" got the file defining it first, since a name
    starting with an acronym was no identifier (so its importers were not looked up), and "which modules pull in
    http-errors to build their errors (createError)?" abstained: "pull in" was no import verb."""
    assert "SQLParseError" in analyze("Which modules import SQLParseError?").identifiers
    assert analyze("Which URLs and APIs does it call?").identifiers == []
    with indexed_engine(tmp_path, ACRONYM_FILES) as engine:
        paths = distinct_paths(engine.retrieve("Inside the package itself, which modules import SQLParseError?"))
        assert set(paths[:2]) == {"pkg/sql.py", "pkg/formatter.py"}
        paths = distinct_paths(engine.retrieve("which modules pull in http-errors to build their errors (createError)?"))
        assert set(paths[:2]) == {"lib/read.js", "lib/types/json.js"}


def test_the_importers_of_a_name_the_question_writes_are_its_answer(tmp_path):
    # Before: lib/errors.js (which defines HandledError and exports it) came first.
    with indexed_engine(tmp_path, DIRECTION_FILES) as engine:
        paths = distinct_paths(engine.retrieve("Which modules import HandledError?"))
        assert set(paths[:2]) == {"lib/retry.js", "lib/thunks.js"}


CALLER_FILES = {
    "type/validate.js": ("function validateSchema(schema) {\n  return schema.errors || [];\n}\n"
                         "function assertValidSchema(schema) {\n  const errors = validateSchema(schema);\n"
                         "  if (errors.length !== 0) {\n    throw new SchemaError(errors.map((error) => error.message).join('\\n'));\n"
                         "  }\n}\nclass SchemaError extends Error {}\n"
                         "module.exports = { validateSchema, assertValidSchema, SchemaError };\n"),
    "validation/validate.js": ("const { assertValidSchema } = require('../type/validate');\n"
                               "function validate(schema, ast) {\n  assertValidSchema(schema);\n"
                               "  if (!ast) {\n    throw new SchemaError('a document is needed');\n  }\n"
                               "  return visit(ast);\n}\n"
                               "module.exports = { validate };\n"),
    "execution/execute.js": ("const { assertValidSchema } = require('../type/validate');\n"
                             "function execute(args) {\n  assertValidSchema(args.schema);\n"
                             "  if (!args.document) {\n    throw new Error('Must provide document.');\n  }\n"
                             "  return run(args);\n}\n"
                             "module.exports = { execute };\n"),
    "index.js": ("const { assertValidSchema, validateSchema } = require('./type/validate');\n"
                 "module.exports = { assertValidSchema, validateSchema };\n"),
    "README.md": "# gq\n\nCall `assertValidSchema(schema)` to check a schema: it throws on an invalid schema.\n",
    "error/format.js": ("const { SchemaError } = require('../type/validate');\n"
                        "// A SchemaError is thrown directly by the schema checks; a plain Error is not a SchemaError.\n"
                        "function formatError(error) {\n  if (error instanceof SchemaError) {\n"
                        "    return `SchemaError: ${error.message}`;\n  }\n  return `Error: ${error.message}`;\n}\n"
                        "module.exports = { formatError };\n"),
}


def test_the_callers_of_a_name_asked_for_as_a_list_are_its_answer(tmp_path):
    """A blind held-out question: "Which modules call assertValidSchema directly before doing their own work?" got
    the module defining it first and the one re-exporting it second: its callers were only a soft bonus."""
    with indexed_engine(tmp_path, CALLER_FILES) as engine:
        paths = distinct_paths(engine.retrieve("Which modules call assertValidSchema directly before doing their own work?"))
        assert set(paths[:2]) == {"validation/validate.js", "execution/execute.js"}
        # a raise (throw new X) calls the class; a name the question sets aside is not asked about
        paths = distinct_paths(engine.retrieve(
            "Which modules throw SchemaError directly, rather than throwing a plain Error?"))
        assert set(paths[:2]) == {"type/validate.js", "validation/validate.js"}
        # a break-it review: "called X" names X, and a list whose noun is not the verb's subject asks for no callers
        for question in ("Which file defines the function called assertValidSchema?",
                         "Which module contains the helper called assertValidSchema?"):
            rank = {path: i for i, path in enumerate(distinct_paths(engine.retrieve(question)))}
            assert rank.get("type/validate.js", 98) < min(rank.get("validation/validate.js", 99),
                                                          rank.get("execution/execute.js", 99)), question


MODULE_IMPORT_FILES = {
    "pkg/__init__.py": "from ._events import Request\nfrom ._readers import read\n",
    "pkg/_abnf.py": "OWS = r'[ \\t]*'\ntoken = r'[-!#$%&*+.^_`|~0-9a-zA-Z]+'\nfield_name = token\n",
    "pkg/_events.py": "from ._abnf import token\n\n\nclass Request:\n    method = token\n",
    "pkg/_readers.py": "from ._abnf import field_name, OWS\n\n\ndef read(data):\n    return field_name, OWS, data\n",
    "pkg/_writers.py": "def write(event):\n    return bytes(event)\n",
    "docs/conf.py": "import pkg\nproject = 'pkg'\n",
    "tests/test_pkg.py": "import pkg\n\n\ndef test_read():\n    assert pkg.read(b'')\n",
}


def test_the_importers_of_a_module_named_without_its_path_are_its_answer(tmp_path):
    """A blind held-out question: "Which modules in the h11 package import the grammar regex pieces from _abnf?" got
    the files importing ``h11`` (the package it is asked about) and none importing ``_abnf``: a from-import binds the
    names it imports, so the module named was matched by no import."""
    with indexed_engine(tmp_path, MODULE_IMPORT_FILES) as engine:
        for question in ("Which modules in the pkg package import the grammar regex pieces from _abnf?",
                         "Which files import _abnf?"):
            assert set(distinct_paths(engine.retrieve(question))[:2]) == {"pkg/_events.py", "pkg/_readers.py"}, \
                question
        # the package asked for is still an import when nothing says it is where to look
        assert set(distinct_paths(engine.retrieve("Which files import pkg?"))[:2]) == {"docs/conf.py",
                                                                                      "tests/test_pkg.py"}
        # a possessive names where the module is, not what is imported (h12-typer-12, lost by a first version), also
        # after a closing backtick or with a typographic apostrophe (a break-it review), and so does "which pkg files"
        for question in ("Which modules import pkg's _abnf?", "Which modules import `pkg`'s `_abnf`?",
                         "Which modules import pkg\u2019s _abnf?", "Which pkg files import from _abnf?"):
            assert set(distinct_paths(engine.retrieve(question))[:2]) == {"pkg/_events.py", "pkg/_readers.py"}, question
            assert "docs/conf.py" not in distinct_paths(engine.retrieve(question))[:3], question


def test_dependants_of_a_named_file_are_hard_boosted_on_the_code_fixture(tmp_path):
    engine = Engine.open(CODE_REPO, index_path=tmp_path / "i.sqlite")
    try:
        engine.update()
        query = analyze("Which files import src/lib/db.js?")
        retriever = engine.retriever
        paths = engine.indexed_paths()
        with engine.index.read() as conn:
            cache = retriever._cache_for(conn)
            cache.paths = paths
            bonus = retriever._structure_bonus(conn, cache, query)
        assert bonus and max(bonus.values()) >= 10.0
        dependants = set(engine.code_graph().dependants("src/lib/db.js"))
        assert {p for p, b in bonus.items() if b >= 10} <= dependants
    finally:
        engine.close()


def test_the_code_graph_is_built_once_per_generation_for_concurrent_questions_and_again_after_a_reindex(tmp_path):
    import threading

    with indexed_engine(tmp_path, FILES) as engine:
        builds = engine.retriever.builds
        start = threading.Barrier(4)
        graphs = []

        def ask(question: str) -> None:
            start.wait()
            engine.retrieve(question)
            engine.pack_context(question, sources=engine.retrieve(question))
            graphs.append(engine.code_graph())

        threads = [threading.Thread(target=ask, args=(q,)) for q in
                   ("Where is connectPool defined?", "what reads DB_HOST?", "how does startApp work?",
                    "which file imports src/db.js?")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert builds["structures"] == 1 and builds["graph"] == 1 and builds["symbols"] <= 1
        assert len(graphs) == 4 and all(g is graphs[0] for g in graphs)

        (tmp_path / "repo" / "src" / "extra.js").write_text("function extraThing() {}\n", encoding="utf-8")
        engine.update()  # a new generation
        engine.pack_context("where is extraThing?", sources=engine.retrieve("where is extraThing?"))
        assert builds["structures"] == 2 and builds["graph"] == 2
        assert engine.code_graph() is not graphs[0] and "src/extra.js" in engine.code_graph().paths
        engine.retrieve("connectPool")
        assert builds["graph"] == 2  # the same generation again: nothing rebuilt


def test_warm_builds_the_current_generation_once(tmp_path):
    from rag.search.english import common_words

    common_words.cache_clear()
    with indexed_engine(tmp_path, FILES) as engine:
        assert engine.warm() == engine.generation
        assert common_words.cache_info().currsize == 1   # the abstention's word list is loaded too
        assert engine.warm() == engine.generation
        assert engine.retriever.builds == {"structures": 1, "graph": 1, "symbols": 1}


def test_a_named_file_is_found_by_its_name_or_a_path_suffix_with_or_without_the_generation_cache():
    known = ["lib/view.js", "lib/router/view.js", "test/view.js", "docs/api.md", "src/a/b/view.js",
             "review.js", "lib/views.js", "x/y/z/view.js"]
    cache: dict = {}
    for question, want in [
        ("What does lib/view.js do?", ["lib/view.js"]),                       # exact
        ("Where is router/view.js used?", ["lib/router/view.js"]),            # a suffix at a "/"
        ("What does view.js do?", []),                                        # 5 files of that name: too many
        ("What is a/b/view.js?", ["src/a/b/view.js"]),
        ("Read docs/api and review.js", ["review.js"]),                      # "docs/api" is no file's path
        ("What is in views.js and y/z/view.js?", ["lib/views.js", "x/y/z/view.js"]),
    ]:
        assert explicit_paths(analyze(question), known) == want, question
        assert explicit_paths(analyze(question), known, cache=cache) == want, question
    assert ("__paths_by_name__",) in cache  # kept for the index generation


PY_FILES = {
    "src/shop/__init__.py": "",
    "src/shop/sessions.py": "class SessionStore:\n    def load(self, key):\n        return self.backend.get(key)\n",
    "src/shop/app.py": "from .sessions import SessionStore\n\ndef make_app():\n    return SessionStore()\n",
    "src/shop/cart/__init__.py": "from shop.sessions import SessionStore\n\nCART = SessionStore()\n",
    "src/shop/pricing.py": "def total(items):\n    return sum(i.price for i in items)\n",
    "README.md": "# Shop\n\nSessions are kept in a session store.\n",
}


def test_a_python_module_named_by_its_dotted_name_is_a_named_file(tmp_path):
    with indexed_engine(tmp_path, PY_FILES) as engine:
        known = engine.indexed_paths()
        named = explicit_paths(analyze("Which files import shop.sessions?"), known)
        assert named == ["src/shop/sessions.py"]
        assert explicit_paths(analyze("What is in shop.cart?"), known) == ["src/shop/cart/__init__.py"]
        assert explicit_paths(analyze("Does app.route(...) or os.environ matter, e.g. here?"), known) == []
        # a module, then a class and a method in it; the package's own module; one name is not a module
        assert explicit_paths(analyze("What does shop.sessions.SessionStore.load return?"), known) == [
            "src/shop/sessions.py"]
        assert explicit_paths(analyze("What is in shop.__init__?"), known) == ["src/shop/__init__.py"]
        assert explicit_paths(analyze("Is app.route or app.make_app used?"), known) == []
        sources = engine.retrieve("Which files import shop.sessions?")
        # the dependants first (the structure's hard boost), then the module itself
        assert sorted(s.path for s in sources[:2]) == ["src/shop/app.py", "src/shop/cart/__init__.py"]


def test_absent_terms_are_the_questions_words_no_chunk_holds_as_the_question_spells_them(tmp_path):
    with indexed_engine(tmp_path, FILES) as engine:
        words = engine.absent_terms("Does connectPool keep a localStorage cache, or use WebSocket and Redis?")
        # in the question's order and spelling; connectPool is indexed, "use" is a meta word
        assert words == ["localStorage", "cache", "WebSocket", "Redis"]
        assert engine.absent_terms("Where does connectPool return the DB_HOST?") == []
        many = engine.absent_terms("alpha bravo charlie delta echo foxtrot golf")
        assert many == ["alpha", "bravo", "charlie", "delta", "echo"]   # MAX_ABSENT_TERMS
        assert engine.absent_terms("") == [] and engine.absent_terms("?!") == []


def test_absent_terms_never_name_digits_long_runs_or_a_pasted_credential(tmp_path):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with indexed_engine(tmp_path, FILES) as engine:
        assert engine.absent_terms(f"Why is {token} refused by sessionstore 8441 " + "z" * 30 + "?") == [
            "refused", "sessionstore"]


def test_absent_terms_never_name_the_word_after_a_secrets_name(tmp_path):
    """A break-it review: "why does login fail with password swordfishzz" answered ``absent_terms`` ending in
    "swordfishzz", a letters-only password the credential patterns do not catch, echoed into the channel."""
    with indexed_engine(tmp_path, FILES) as engine:
        words = [w.lower() for w in engine.absent_terms("why does login fail with password swordfishzz")]
        assert "swordfishzz" not in words and "password" in words
        for question in ("my token is hunterkeyzz, why refused", "the secret: zebrafishqq fails",
                         "api key = quokkabird rejected", "passphrase 'walrustusk' never works"):
            assert not {"hunterkeyzz", "zebrafishqq", "quokkabird", "walrustusk"} & {
                w.lower() for w in engine.absent_terms(question)}, question


def test_a_federated_set_names_only_the_words_no_repository_mentions(tmp_path):
    from rag.federation import FederatedEngine

    web = {"src/cart.js": "// keeps the cart in localStorage\nfunction saveCart(cart) { return cart; }\n"}
    with indexed_engine(tmp_path / "api", FILES) as api, indexed_engine(tmp_path / "web", web) as other:
        federated = FederatedEngine({"api": api, "web": other})
        assert api.absent_terms("localStorage or Redis?") == ["localStorage", "Redis"]
        assert federated.absent_terms("localStorage or Redis?") == ["Redis"]


def test_the_language_of_an_indexed_file_type_is_no_absent_jargon(tmp_path):
    """A break-it review: "where is the kotlin config object" got "No indexed file mentions kotlin." with a
    Kotlin file indexed: the language of an indexed file type names what the repository holds, as its
    package name does, so it is no evidence either way (``meta_terms``)."""
    files = {"app/Config.kt": "object Config {\n    val retries = 3\n    val endpoint = \"https://example.com\"\n}\n",
             "infra/main.tf": 'resource "aws_s3_bucket" "assets" {\n  bucket = "assets"\n}\n',
             "api/users.proto": "syntax = \"proto3\";\nmessage User {\n  string name = 1;\n}\n"}
    with indexed_engine(tmp_path, files) as engine:
        assert distinct_paths(engine.retrieve("where is the kotlin config object"))[:1] == ["app/Config.kt"]
        assert distinct_paths(engine.retrieve("which terraform resource holds the assets bucket"))[:1] == ["infra/main.tf"]
        assert distinct_paths(engine.retrieve("what does the protobuf User message hold"))[:1] == ["api/users.proto"]
        assert engine.absent_terms("where is the kotlin config object") == []
        # a language the repository does not hold is still absent
        assert "haskell" in [t.lower() for t in engine.absent_terms("where is the haskell config object")]
