"""The code graph over the parsed fixture repository tests/fixtures/code-repo/."""
from __future__ import annotations

from pathlib import Path

import pytest
from repo_helpers import code_repo_graph

from rag.context.codegraph import CodeGraph, RouteHit, question_tokens
from rag.parse.parser import JsParser, parse_source, resolve_imports

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "code-repo"


@pytest.fixture(scope="module")
def graph() -> CodeGraph:
    return code_repo_graph(REPO)


def _graph_of(files: dict[str, str]) -> CodeGraph:
    parser = JsParser()
    structures = {path: parser.parse(path, text) for path, text in files.items()}
    resolve_imports(structures)
    return CodeGraph(structures)


def test_question_tokens_split_identifiers_and_drop_stopwords():
    assert question_tokens("How does createUser handle the API_KEY for users?") == [
        "create", "user", "handle", "api", "key", "users",
    ]


def test_dependencies_and_dependants(graph):
    assert graph.dependencies("src/server.js") == ["src/routes/users.js", "src/lib/db.js", "src/routes/admin.js"]
    assert graph.dependencies("src/routes/users.js") == ["src/lib/store.js", "src/lib/audit.js"]
    assert graph.dependants("src/lib/store.js") == ["src/routes/users.js"]
    assert graph.dependants("src/web/App.jsx") == ["src/web/index.mjs"]
    assert graph.dependants("src/util/index.ts") == ["src/web/App.jsx", "src/web/index.mjs"]
    assert graph.dependencies("nope.js") == [] and graph.dependants("nope.js") == []


def test_routes_get_mount_prefixes_from_another_file(graph):
    routes = {(r.path, r.line, r.method, r.route) for r in graph.routes()}
    assert ("src/routes/users.js", 7, "GET", "/api/users") in routes  # app.use('/api', usersRouter) in server.js
    assert ("src/routes/users.js", 12, "DELETE", "/api/users/:id") in routes
    assert ("src/routes/admin.js", 7, "ALL", "/admin/reset") in routes  # app.use('/admin', require('./routes/admin'))
    assert ("src/server.js", 16, "GET", "/health") in routes
    assert ("src/legacy/http.js", 5, "POST", "/webhook") in routes


def test_mounts_are_reported_as_use_routes(graph):
    """The seed listed `use` among the route methods: a mount is a route of its own (issue 15)."""
    mounts = {(r.path, r.line, r.route, r.match) for r in graph.routes() if r.method == "USE"}
    assert mounts == {("src/server.js", 14, "/api", "prefix"), ("src/server.js", 15, "/admin", "prefix")}


def test_same_file_and_chained_mounts():
    graph = _graph_of({
        "app.js": "const v1 = require('./v1');\napp.use('/api', v1);\n",
        "v1.js": (
            "const router = express.Router();\n"
            "const items = express.Router();\n"
            "items.get('/list', h);\n"
            "router.use('/items', items);\n"
            "router.get('/ping', h);\n"
            "module.exports = router;\n"
        ),
    })
    assert sorted((r.line, r.method, r.route) for r in graph.routes()) == [
        (2, "USE", "/api"), (3, "GET", "/api/items/list"), (4, "USE", "/api/items"), (5, "GET", "/api/ping")]


def test_mount_cycles_terminate():
    graph = _graph_of({
        "a.js": "const b = require('./b');\nconst r = Router();\nr.use('/a', b);\nr.get('/x', h);\nmodule.exports = r;\n",
        "b.js": "const a = require('./a');\nconst r = Router();\nr.use('/b', a);\nr.get('/y', h);\nmodule.exports = r;\n",
    })
    assert {r.path for r in graph.routes()} == {"a.js", "b.js"}


def test_find_symbols_scoring(graph):
    hits = graph.find_symbols("Where is createUser defined?")
    top = hits[0]
    assert (top.path, top.name, top.line, top.end, top.score) == ("src/routes/users.js", "createUser", 14, 17, 140)
    # +100 full name, +20 per token: "create" and "user" are both in "createuser"
    private = graph.find_symbols("what does validate check")[0]
    assert (private.name, private.parent, private.score) == ("#validate", "UserStore", 120)
    assert graph.find_symbols("zzz qqq") == []


def test_find_routes_scoring_and_method_tiebreak(graph):
    hits = graph.find_routes("what handles POST /api/users?")
    assert [(h.method, h.route, h.score) for h in hits[:2]] == [("POST", "/api/users", 150), ("GET", "/api/users", 140)]
    assert isinstance(hits[0], RouteHit) and hits[0].path == "src/routes/users.js" and hits[0].line == 8
    webhook = graph.find_routes("who receives the /webhook call")[0]
    assert (webhook.path, webhook.line, webhook.method) == ("src/legacy/http.js", 5, "POST")


def test_environment_variables(graph):
    assert graph.env_names_in("Is DATABASE_URL or PORT set? what about db?") == ["DATABASE_URL", "PORT"]
    assert graph.find_environment_variable("PORT") == [("src/server.js", 9)]
    assert graph.find_environment_variable("DB_HOST") == [("src/lib/db.js", 1)]
    assert graph.find_environment_variable("MISSING") == []
    assert set(graph.environment_variables()) == {
        "API_BASE", "API_KEY", "DATABASE_URL", "DB_HOST", "DB_TIMEOUT_MS", "LEGACY_PORT", "PORT",
    }


def test_summary_lists_imports_definitions_routes_env_and_users(graph):
    assert graph.summary("src/routes/users.js") == (
        "src/routes/users.js (javascript)\n"
        "imports: express, ../lib/store → src/lib/store.js, ../lib/audit → src/lib/audit.js\n"
        "exports: router\n"
        "defines: createUser function 14-17; removeUser function 19-24\n"
        "routes: GET /api/users (line 7); POST /api/users (line 8); GET /api/users/:id (line 11); "
        "DELETE /api/users/:id (line 12)\n"
        "used by: src/server.js"
    )
    assert "has syntax errors" in graph.summary("src/broken.js")
    assert graph.summary("missing.js") == ""


def test_symbols_listing_for_the_cli(graph):
    symbols = graph.symbols()
    assert ("src/lib/store.js", "#users", "field", 2, 2) in {(s.path, s.name, s.kind, s.line, s.end) for s in symbols}
    assert symbols[0].to_json().keys() >= {"path", "line", "name", "kind", "end"}
    assert graph.routes()[0].to_json().keys() >= {"path", "line", "method", "route"}


def test_graph_from_a_single_unresolved_file():
    graph = CodeGraph({"x.js": parse_source("x.js", "import a from 'a';\nexport const b = () => a();\n")})
    assert graph.dependencies("x.js") == [] and graph.paths == ["x.js"]


def test_hono_chains_route_mounts_and_base_paths():
    """Hono: routes chained on `new Hono()` (its RPC style), `app.route('/prefix', sub)` mounts (also
    chained) and `basePath('/api')`, on a variable or in the chain; Express `app.get(…).post(…)` too."""
    graph = _graph_of({
        "src/index.ts": (
            "import { Hono } from 'hono';\n"
            "import books from './books';\n"
            "import { authors } from './authors';\n"
            "const app = new Hono().basePath('/api');\n"
            "app.get('/health', (c) => c.text('ok'));\n"
            "const routes = app.route('/books', books).route('/authors', authors);\n"
            "export default app;\n"
        ),
        "src/books.ts": (
            "import { Hono } from 'hono';\n"
            "const books = new Hono()\n"
            "  .get('/', (c) => c.json([]))\n"
            "  .post('/', (c) => c.json({}, 201))\n"
            "  .get('/:id', (c) => c.json({}));\n"
            "export default books;\n"
        ),
        "src/authors.ts": (
            "import { Hono } from 'hono';\n"
            "export const authors = new Hono().basePath('/v2').get('/', h).delete('/:id', h);\n"
        ),
        "src/legacy.js": "app.get('/a', h).post('/b', h);\n",
    })
    assert sorted((r.path, r.line, r.method, r.route, r.router) for r in graph.routes()) == [
        ("src/authors.ts", 2, "DELETE", "/api/authors/v2/:id", "authors"),
        ("src/authors.ts", 2, "GET", "/api/authors/v2", "authors"),
        ("src/books.ts", 3, "GET", "/api/books", "books"),
        ("src/books.ts", 4, "POST", "/api/books", "books"),
        ("src/books.ts", 5, "GET", "/api/books/:id", "books"),
        ("src/index.ts", 5, "GET", "/api/health", "app"),
        ("src/index.ts", 6, "USE", "/api/authors", "app"),
        ("src/index.ts", 6, "USE", "/api/books", "app"),
        ("src/legacy.js", 1, "GET", "/a", "app"),
        ("src/legacy.js", 1, "POST", "/b", "app"),
    ]


def test_express_route_chain_keeps_its_path():
    graph = _graph_of({"app.js": "router.route('/users/:id').get(show).put(update);\n"})
    assert sorted((r.method, r.route, r.router) for r in graph.routes()) == [
        ("GET", "/users/:id", "router"), ("PUT", "/users/:id", "router")]
