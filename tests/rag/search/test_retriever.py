"""rag.search.retriever and rag.search.structure: the typed per-generation cache and the structure stream."""
from __future__ import annotations

from repo_helpers import CODE_REPO, indexed_engine, result_paths

from rag.engine import Engine
from rag.parse.records import Definition, EnvVar, Export, FileStructure
from rag.search.lexical import explicit_paths
from rag.search.query import analyze
from rag.search.retriever import GenerationCache, Retriever
from rag.search.structure import structure_bonus, symbol_table

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
    with indexed_engine(tmp_path, FILES) as engine:
        assert engine.warm() == engine.generation
        assert engine.warm() == engine.generation
        assert engine.retriever.builds == {"structures": 1, "graph": 1, "symbols": 1}


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
