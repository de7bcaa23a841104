"""Python structure (issue 15) on the fixture repository tests/fixtures/py-repo/.

A Flask app (``src/shop/app.py``, blueprints in ``auth.py``/``admin.py``), a FastAPI
service (``src/shop/api/``), pydantic settings (``settings.py``), a Django site
(``site/``) and a script importing the package through the src layout. Every
expected value below was read off the fixture files.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.context.codegraph import CodeGraph
from rag.parse.parser import PARSE_VERSION, CodeParser, EnvVar, FileStructure, language_for_path, resolve_imports

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "py-repo"


@pytest.fixture(scope="module")
def parsed() -> dict[str, FileStructure]:
    paths = sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file())
    parser = CodeParser()
    structures = {path: parser.parse(path, (REPO / path).read_text(encoding="utf-8"))
                  for path in paths if path.endswith(".py")}
    resolve_imports(structures, known_paths=paths)
    return structures


@pytest.fixture(scope="module")
def graph(parsed) -> CodeGraph:
    return CodeGraph(parsed)


def _imports(structure: FileStructure) -> list[tuple[str, str, list[str], str | None, int]]:
    return [(i.spec, i.kind, i.names, i.resolved, i.line) for i in structure.imports]


def test_python_language_and_no_errors(parsed):
    assert language_for_path("src/shop/app.py") == "python"
    assert all(s.language == "python" and not s.has_error for s in parsed.values())


def test_imports_absolute_relative_aliased_and_resolved(parsed):
    assert _imports(parsed["src/shop/app.py"]) == [
        ("os", "import", ["os"], None, 2),
        ("os.environ", "from", ["environ"], None, 3),
        ("os.getenv", "from", ["read_env"], None, 3),
        ("flask.Flask", "from", ["Flask"], None, 5),
        ("flask.jsonify", "from", ["jsonify"], None, 5),
        (".admin", "from", ["admin"], "src/shop/admin.py", 7),           # from . import admin → submodule
        (".auth", "from", ["auth"], "src/shop/auth.py", 7),
        (".models.Order", "from", ["OrderModel"], "src/shop/models.py", 8),  # a name of .models
        (".settings.Settings", "from", ["Settings"], "src/shop/settings.py", 9),
    ]
    assert _imports(parsed["src/shop/core/db.py"]) == [
        ("importlib", "import", ["importlib"], None, 2),
        ("shop.models", "import", ["models_module"], "src/shop/models.py", 4),   # import a.b as c, src layout
        ("..settings.Settings", "from", ["Settings"], "src/shop/settings.py", 5),  # two dots: up one package
        ("shop.core.drivers", "dynamic", ["driver"], "src/shop/core/drivers.py", 8),  # importlib.import_module
    ]
    # a script outside the package imports it through the src layout; __init__ re-exports a name
    assert _imports(parsed["scripts/smoke.py"]) == [("shop.app.create_app", "from", ["create_app"], "src/shop/app.py", 2)]
    assert _imports(parsed["src/shop/__init__.py"]) == [(".app.create_app", "from", ["create_app"], "src/shop/app.py", 2)]
    # a Django app beside its project (no __init__.py in site/): `from . import views`
    assert (".views", "from", ["views"], "site/blog/views.py", 3) in _imports(parsed["site/blog/urls.py"])
    # `from __future__` is not a dependency; `import a.b` binds `a`
    other = CodeParser().parse("x.py", "from __future__ import annotations\nimport a.b\nfrom m import *\n")
    assert [(i.spec, i.kind, i.names) for i in other.imports] == [("a.b", "import", ["a"]), ("m", "from", ["*"])]


def test_exports_from_dunder_all(parsed):
    assert [(e.name, e.line, e.kind) for e in parsed["src/shop/__init__.py"].exports] == [
        ("create_app", 4, "named"), ("VERSION", 4, "named"), ("Settings", 5, "named")]


def test_definitions_with_exact_ranges_parents_and_flags(parsed):
    defs = {(d.parent, d.name, d.start): d for d in parsed["src/shop/models.py"].definitions}
    order = defs[(None, "Order", 7)]
    assert (order.kind, order.end, order.bases) == ("class", 29, ["db.Model"])  # range includes @dataclass
    assert [(d.name, d.kind, d.start, d.end) for d in parsed["src/shop/models.py"].definitions if d.parent == "Order"] == [
        ("id", "field", 9, 9), ("lines", "field", 10, 10), ("currency", "field", 11, 11),
        ("total", "method", 13, 14), ("label", "method", 16, 18), ("label", "method", 20, 22),
        ("all", "method", 24, 26), ("Meta", "class", 28, 29),
    ]
    assert (defs[("Order", "label", 16)].accessor, defs[("Order", "label", 20)].accessor) == ("get", "set")
    assert defs[("Order", "all", 24)].static and not defs[("Order", "total", 13)].static
    auth = {d.name: d for d in parsed["src/shop/auth.py"].definitions}
    # decorated: the range starts at the first decorator and ends with the body
    assert (auth["logout"].kind, auth["logout"].start, auth["logout"].end) == ("function", 25, 29)
    assert (auth["login"].start, auth["login"].end) == (19, 22)
    # a nested function has its enclosing function as parent
    assert (auth["wrapped"].parent, auth["wrapped"].start, auth["wrapped"].end) == ("login_required", 10, 14)
    lam = CodeParser().parse("x.py", "class A:\n    f = lambda self: 1\n\ng = lambda: 2\n").definitions
    assert [(d.name, d.kind, d.parent) for d in lam] == [("A", "class", None), ("f", "method", "A"), ("g", "function", None)]


def test_calls_with_enclosing_function(parsed):
    calls = [(c.callee, c.line, c.enclosing) for c in parsed["src/shop/auth.py"].calls]
    assert ("functools.wraps", 10, "login_required") in calls  # a decorator runs in the enclosing scope
    assert ("session.get", 12, "wrapped") in calls
    assert ("session.clear", 28, "logout") in calls
    assert ("bp.route", 19, None) in calls and ("Blueprint", 6, None) in calls
    app_calls = [(c.callee, c.line, c.enclosing) for c in parsed["src/shop/app.py"].calls]
    assert ("OrderModel.all", 22, "orders") in app_calls and ("app.register_blueprint", 17, "create_app") in app_calls


def test_environment_variables(parsed):
    assert [(e.name, e.line, e.default) for e in parsed["src/shop/app.py"].env_vars] == [
        ("SECRET_KEY", 14, None),       # os.environ["X"]
        ("FLASK_DEBUG", 15, '"0"'),     # os.environ.get("X", default)
        ("REGION", 26, '"eu"'),         # getenv imported as read_env
        ("MAINTENANCE", 32, None),      # "X" in os.environ
        ("PORT", 43, "5000"),           # environ.get after `from os import environ`, `or` default
    ]  # and not PATH_INFO: wsgi_middleware's `environ` parameter is the WSGI dict
    assert [(e.name, e.line) for e in parsed["site/manage.py"].env_vars] == [("DJANGO_SETTINGS_MODULE", 6)]
    dynamic = CodeParser().parse("x.py", "import os as _os\nname = _os.getenv(f'{p}_URL')\n").env_vars
    assert dynamic == [EnvVar("*", 2, dynamic=True, expression="f'{p}_URL'")]


def test_a_module_constant_names_the_variable():
    """``os.environ.get(ENVIRONMENT_VARIABLE)`` with ``ENVIRONMENT_VARIABLE = "X"`` at module level
    (Django's settings loader) reads X; a parameter of that name, or a constant that is not a
    string or is bound twice, stays a dynamic read."""
    source = (
        "import os\n"
        "ENVIRONMENT_VARIABLE = 'DJANGO_SETTINGS_MODULE'\n"
        "PREFIX = 'APP_'\n"
        "COUNT = 3\n"
        "TWICE = 'A'\n"
        "TWICE = 'B'\n"
        "def load():\n"
        "    return os.environ.get(ENVIRONMENT_VARIABLE, 'site.settings')\n"
        "def check(ENVIRONMENT_VARIABLE):\n"
        "    return os.environ[ENVIRONMENT_VARIABLE]\n"
        "flag = PREFIX in os.environ\n"
        "n = os.getenv(COUNT)\n"
        "t = os.getenv(TWICE)\n"
    )
    found = [(e.name, e.line, e.default, e.dynamic) for e in CodeParser().parse("conf.py", source).env_vars]
    assert found == [("DJANGO_SETTINGS_MODULE", 8, "'site.settings'", False), ("*", 10, None, True),
                     ("APP_", 11, None, False), ("*", 12, None, True), ("*", 13, None, True)]


def test_test_setup_names_variables():
    source = (
        "import os\n"
        "from unittest import mock\n"
        "def test_x(monkeypatch):\n"
        "    monkeypatch.setenv('A', '1')\n"
        "    monkeypatch.delenv('B', raising=False)\n"
        "    monkeypatch.setitem(os.environ, 'C', '1')\n"
        "    with mock.patch.dict(os.environ, {'D': '1'}, E='2'):\n"
        "        pass\n"
        "    cache.setitem(store, 'Z', 1)\n"
        "    os.environ.update({'F': '1'})\n"
        "    settings.update({'G': 1})\n"
        "    monkeypatch.delitem(click._termui_impl.os.environ, 'H')\n"
        "    if key in os.environ: pass\n"
    )
    found = [(e.name, e.line) for e in CodeParser().parse("tests/test_x.py", source).env_vars]
    assert found == [("A", 4), ("B", 5), ("C", 6), ("D", 7), ("E", 7), ("F", 10), ("H", 12), ("*", 13)]


def test_settings_classes_read_the_environment(parsed):
    assert [(e.name, e.line, e.default) for e in parsed["src/shop/settings.py"].env_vars] == [
        ("SHOP_DATABASE_URL", 11, '"sqlite:///shop.db"'),  # env_prefix from SettingsConfigDict
        ("SHOP_DEBUG", 12, "False"),
        ("PAYMENT_API_KEY", 13, '"dev-key"'),            # validation_alias: exact name, no prefix
        ("REDIS_URL", 14, '"redis://localhost"'),        # AliasChoices: each name
        ("CACHE_URL", 14, '"redis://localhost"'),
        ("LEGACY_PORT", 20, "8000"),                     # pydantic v1 Field(env=...)
        ("OLD_HOST", 21, '"localhost"'),                 # v1 class Config: env_prefix
    ]  # not the ClassVar, the private attribute or model_config


def test_env_readers_and_case_sensitive_settings():
    source = (
        "import environ\n"
        "from pydantic_settings import BaseSettings\n"
        "env = environ.Env()\n"
        "DEBUG = env.bool('DEBUG', default=False)\n"
        "DB = env('DATABASE_URL')\n"
        "class S(BaseSettings, env_prefix='app_', case_sensitive=True):\n"
        "    port: int = 1\n"
        "class T(S):\n"
        "    host: str\n"
    )
    found = [(e.name, e.line, e.default) for e in CodeParser().parse("settings.py", source).env_vars]
    assert found == [("DEBUG", 4, "False"), ("DATABASE_URL", 5, None), ("app_port", 7, "1"), ("app_host", 9, None)]
    cli = "import click\n@click.command()\n@click.option('--token', envvar='API_TOKEN')\n" \
          "@click.option('--host', envvar=['APP_HOST', 'HOST'])\ndef main(token, host): ...\n"
    assert [(e.name, e.line) for e in CodeParser().parse("cli.py", cli).env_vars] == [
        ("API_TOKEN", 3), ("APP_HOST", 4), ("HOST", 4)]


def test_the_whole_environment_as_a_value_is_a_dynamic_read():
    source = (
        "import os\n"
        "from os import environ\n"
        "class Environ:\n"
        "    def __init__(self, environ=os.environ):\n"       # the default: a read of every variable
        "        self._environ = environ\n"                    # the parameter, not os.environ
        "snapshot = dict(os.environ)\n"
        "copied = os.environ.copy()\n"
        "token = os.environ.get('TOKEN')\n"                   # named reads stay named
        "for key, value in environ.items():\n"
        "    pass\n"
        "Config(environ=os.environ)\n"
        "monkeypatch.setitem(os.environ, 'E', '1')\n"         # test setup names its variable
        "def app(environ, start_response):\n"                 # WSGI's environ is not the environment
        "    return environ['PATH_INFO']\n"
        "merged = os.environ | {'A': '1'}\n"                 # an operand on the left is read too
        "os.environ.clear()\n"                                # emptying it reads nothing
    )
    found = [(e.name, e.line, e.dynamic, e.expression) for e in CodeParser().parse("config.py", source).env_vars]
    assert sorted(found, key=lambda e: e[1]) == [
        ("*", 4, True, "os.environ"), ("*", 6, True, "os.environ"), ("*", 7, True, "os.environ"),
        ("TOKEN", 8, False, None), ("*", 9, True, "environ"), ("*", 11, True, "os.environ"), ("E", 12, False, None),
        ("*", 15, True, "os.environ")]


def test_the_whole_environment_through_an_alias_is_a_dynamic_read():
    source = (
        "from os import environ as env\n"
        "snapshot = dict(env)\n"                       # the alias itself, as a value
        "token = env.get('TOKEN')\n"                   # named reads through it stay named
        "def handler(env):\n"                          # a parameter of that name is not the environment
        "    return dict(env)\n"
        "for key in env:\n"
        "    pass\n"
    )
    found = [(e.name, e.line, e.dynamic, e.expression) for e in CodeParser().parse("config.py", source).env_vars]
    assert sorted(found, key=lambda e: e[1]) == [
        ("*", 2, True, "env"), ("TOKEN", 3, False, None), ("*", 6, True, "env")]


def test_routes_as_parsed(parsed):
    auth = [(r.method, r.path, r.line, r.router, r.prefix, r.handler) for r in parsed["src/shop/auth.py"].routes]
    assert auth == [  # @bp.route with a tuple of methods, @bp.post; Blueprint(url_prefix=) → prefix
        ("GET", "/login", 19, "bp", "/auth", "login"), ("POST", "/login", 19, "bp", "/auth", "login"),
        ("POST", "/logout", 25, "bp", "/auth", "logout")]
    blog = [(r.method, r.path, r.line, r.match, r.prefix, r.handler, r.target_spec)
            for r in parsed["site/blog/urls.py"].routes]
    assert blog == [
        ("ANY", "/", 7, "exact", None, "views.index", None),
        ("ANY", "/post/<slug:slug>/", 8, "exact", None, "views.PostDetail", None),  # as_view() → the class
        ("ANY", "/archive/(?P<year>[0-9]{4})/", 9, "regex", None, "views.archive", None),
        ("USE", "/api/", 10, "prefix", None, None, None),
        ("ANY", "/posts/", 11, "exact", "/api/", "views.index", None),  # inside include([...])
    ]
    aliased = CodeParser().parse("urls.py", "from django.urls import re_path as rp, path as p\n"
                                            "urlpatterns = [rp(r'^a/$', v), p('b/', w)]\n").routes
    assert [(r.path, r.match) for r in aliased] == [("/a/", "regex"), ("/b/", "exact")]
    site = [(r.method, r.path, r.target, r.target_spec) for r in parsed["site/urls.py"].routes]
    assert site == [("USE", "/admin/", "admin.site.urls", None), ("USE", "/blog/", None, "blog.urls")]


def test_routes_with_mount_prefixes_in_the_graph(graph):
    routes = {(r.method, r.route, r.path, r.line, r.handler) for r in graph.routes()}
    expected = {
        # Flask: decorators, add_url_rule, blueprints (own prefix; mounted with url_prefix)
        ("GET", "/orders", "src/shop/app.py", 20, "orders"), ("POST", "/orders", "src/shop/app.py", 20, "orders"),
        ("GET", "/health", "src/shop/app.py", 24, "health"),
        ("GET", "/ping", "src/shop/app.py", 18, "ping"), ("HEAD", "/ping", "src/shop/app.py", 18, "ping"),
        ("GET", "/auth/login", "src/shop/auth.py", 19, "login"), ("POST", "/auth/logout", "src/shop/auth.py", 25, "logout"),
        ("GET", "/admin/stats", "src/shop/admin.py", 7, "stats"),
        ("USE", "/admin", "src/shop/app.py", 17, None),
        # FastAPI: include_router(prefix=), APIRouter(prefix=), api_route, websocket, an empty path
        ("GET", "/", "src/shop/api/main.py", 11, "root"), ("WEBSOCKET", "/ws", "src/shop/api/main.py", 16, "events"),
        ("GET", "/items", "src/shop/api/routers/items.py", 6, "list_items"),
        ("PUT", "/items/{item_id}", "src/shop/api/routers/items.py", 11, "update_item"),
        ("GET", "/users/me", "src/shop/api/routers/users.py", 6, "me"),
        ("PATCH", "/users/me", "src/shop/api/routers/users.py", 6, "me"),
        ("USE", "/items", "src/shop/api/main.py", 7, None),
        # Django: include("blog.urls") resolved as a module, inline include([...])
        ("ANY", "/blog/post/<slug:slug>/", "site/blog/urls.py", 8, "views.PostDetail"),
        ("ANY", "/blog/api/posts/", "site/blog/urls.py", 11, "views.index"),
        ("USE", "/blog/", "site/urls.py", 6, None),
    }
    assert expected <= routes, expected - routes
    # Django 4 + FastAPI 6 + Flask app 5, auth 3, admin 1
    assert len([r for r in graph.routes() if r.method != "USE"]) == 19


def test_dependencies_and_dependants(graph):
    assert graph.dependencies("src/shop/app.py") == ["src/shop/admin.py", "src/shop/auth.py", "src/shop/models.py",
                                                      "src/shop/settings.py"]
    assert graph.dependants("src/shop/settings.py") == ["src/shop/app.py", "src/shop/core/db.py"]
    assert graph.dependants("src/shop/app.py") == ["scripts/smoke.py", "src/shop/__init__.py"]
    assert graph.dependencies("src/shop/api/main.py") == ["src/shop/api/routers/items.py",
                                                           "src/shop/api/routers/users.py"]
    assert "imports: os, os.environ" in graph.summary("src/shop/app.py")


def test_syntax_errors_keep_what_parsed():
    source = "import os\n\ndef broken(:\n    pass\n\ndef fine():\n    return os.getenv('OK')\n"
    structure = CodeParser().parse("x.py", source)
    assert structure.has_error
    assert ("fine", 6, 7) in [(d.name, d.start, d.end) for d in structure.definitions]
    assert [e.name for e in structure.env_vars] == ["OK"]


def test_json_round_trip(parsed):
    for structure in parsed.values():
        data = json.loads(json.dumps(structure.to_json()))
        assert data["version"] == PARSE_VERSION
        assert FileStructure.from_json(data) == structure


def test_routers_of_different_functions_are_not_mixed():
    """A test module defines `bp` and `app` in many functions (flask's own tests): each mount
    prefixes only the routes of its own function's router."""
    source = (
        "import flask\n"
        "def test_one(app):\n"
        "    bp = flask.Blueprint('one', __name__)\n"
        "    @bp.route('/a')\n"
        "    def a(): ...\n"
        "    app.register_blueprint(bp, url_prefix='/one')\n"
        "def test_two(app):\n"
        "    bp = flask.Blueprint('two', __name__)\n"
        "    @bp.route('/b')\n"
        "    def b(): ...\n"
        "    child = flask.Blueprint('child', __name__)\n"
        "    @child.get('/c')\n"
        "    def c(): ...\n"
        "    bp.register_blueprint(child, url_prefix='/child')\n"
        "    app.register_blueprint(bp, url_prefix='/two')\n"
    )
    structure = CodeParser().parse("tests/test_bp.py", source)
    assert structure.routes[0].router == "bp@test_one:2"
    graph = CodeGraph({"tests/test_bp.py": structure})
    assert sorted((r.method, r.route, r.line, r.router) for r in graph.routes()) == [
        ("GET", "/one/a", 4, "bp"), ("GET", "/two/b", 9, "bp"), ("GET", "/two/child/c", 12, "child"),
        ("USE", "/one", 6, "app"), ("USE", "/two", 15, "app"), ("USE", "/two/child", 14, "bp")]


def test_same_file_class_based_views_get_their_methods():
    source = (
        "from flask.views import MethodView\n"
        "class UserAPI(MethodView):\n"
        "    def get(self): ...\n"
        "    def post(self): ...\n"
        "    def helper(self): ...\n"
        "app.add_url_rule('/users/', view_func=UserAPI.as_view('users'))\n"
        "app.add_url_rule('/other/', view_func=Imported.as_view('other'))\n"
    )
    routes = [(r.method, r.path, r.handler) for r in CodeParser().parse("views.py", source).routes]
    assert routes == [("GET", "/users/", "UserAPI"), ("POST", "/users/", "UserAPI"), ("ANY", "/other/", "Imported")]


def test_definition_ends_at_its_last_statement_not_trailing_comments():
    source = "def f():\n    x = 1\n    return x\n    # about g, below\n\n    # more\n\ndef g():\n    pass\n"
    assert [(d.name, d.start, d.end) for d in CodeParser().parse("x.py", source).definitions] == [
        ("f", 1, 3), ("g", 8, 9)]
    chained = CodeParser().parse("x.py", "class S:\n    a = b = _fail\n").definitions
    assert [(d.name, d.kind, d.start) for d in chained] == [("S", "class", 1), ("a", "field", 2), ("b", "field", 2)]


def test_root_route_under_a_prefix_keeps_its_slash():
    """Flask, FastAPI and Starlette append a route's path to its prefix: ``"/"`` under ``/items``
    is served at ``/items/`` (``/items`` redirects there); an empty path is the prefix itself."""
    fastapi = (
        "from fastapi import APIRouter, FastAPI\n"
        "router = APIRouter(prefix='/items')\n"
        "@router.get('/')\n"
        "def list_items(): ...\n"
        "@router.get('')\n"
        "def bare(): ...\n"
        "admin = APIRouter()\n"
        "@admin.post('/')\n"
        "def update_admin(): ...\n"
        "app = FastAPI()\n"
        "app.include_router(router, prefix='/api')\n"
        "app.include_router(admin, prefix='/admin')\n"
        "@app.get('/')\n"
        "def root(): ...\n"
    )
    flask = (
        "import flask\n"
        "bp = flask.Blueprint('bp', __name__, url_prefix='/bp')\n"
        "@bp.route('/')\n"
        "def index(): ...\n"
    )
    starlette = (
        "from starlette.routing import Mount, Route, Router\n"
        "app = Router([Mount('/users', routes=[Route('/', endpoint=users), Route('/me', endpoint=me)])])\n"
    )
    parser = CodeParser()
    graph = CodeGraph({path: parser.parse(path, source) for path, source in
                       (("api.py", fastapi), ("views.py", flask), ("routing.py", starlette))})
    assert sorted((r.method, r.route, r.path, r.line) for r in graph.routes()) == [
        ("GET", "/", "api.py", 13),
        ("GET", "/api/items", "api.py", 5),
        ("GET", "/api/items/", "api.py", 3),
        ("GET", "/bp/", "views.py", 3),
        ("GET", "/users/", "routing.py", 2),
        ("GET", "/users/me", "routing.py", 2),
        ("POST", "/admin/", "api.py", 8),
        ("USE", "/admin", "api.py", 12),
        ("USE", "/api", "api.py", 11),
        ("USE", "/users", "routing.py", 2),
    ]


def test_add_route_calls_are_routes():
    """Starlette's ``app.add_route(path, endpoint, methods=…)`` (FastAPI's docs mount GraphQL so) and aiohttp's
    ``router.add_route(method, path, handler)``."""
    source = (
        "app.add_route('/graphql', GraphQLApp(schema=schema))\n"
        "inner.add_route('/inner', endpoint=homepage, methods=['GET', 'POST'])\n"
        "app.router.add_route('DELETE', '/items/{id}', delete_item)\n"
        "app.router.add_route('*', '/any', views.any_method)\n"
        "app.add_route(path, endpoint)\n"
    )
    routes = [(r.method, r.path, r.line, r.router, r.handler) for r in CodeParser().parse("app.py", source).routes]
    assert routes == [
        ("GET", "/graphql", 1, "app", None),
        ("GET", "/inner", 2, "inner", "homepage"), ("POST", "/inner", 2, "inner", "homepage"),
        ("DELETE", "/items/{id}", 3, "app.router", "delete_item"),
        ("ANY", "/any", 4, "app.router", "views.any_method"),
    ]


def test_starlette_config_and_decouple_readers():
    """Starlette's ``Config`` (``config = Config(".env")``, then ``config("X", cast=…)``; ``env_prefix=``
    names ``<prefix>X``; its ``environ`` guards ``os.environ``) and python-decouple's ``config("X")`` / ``AutoConfig()`` read the environment."""
    starlette = (
        "from starlette.config import Config\n"
        "config = Config('.env')\n"
        "DEBUG = config('DEBUG', cast=bool, default=False)\n"
        "DATABASE_URL = config('DATABASE_URL')\n"
        "TIMEOUT = config.get('TIMEOUT', cast=int)\n"
        "prefixed = Config(env_prefix='APP_')\n"
        "HOST = prefixed('HOST')\n"
        "from starlette.config import environ\n"
        "environ['TESTING'] = 'True'\n"   # os.environ behind Starlette's guard
    )
    decouple = (
        "import decouple\n"
        "from decouple import config, AutoConfig, Csv\n"
        "SECRET_KEY = config('SECRET_KEY')\n"
        "ALLOWED = config('ALLOWED_HOSTS', cast=Csv(), default='localhost')\n"
        "local = AutoConfig(search_path='/srv')\n"
        "PORT = local('PORT', default=8000, cast=int)\n"
        "MODE = decouple.config('MODE')\n"
    )
    tests = (  # each test binds its own `config`: a prefix is the one of the binding before the read
        "from starlette.config import Config\n"
        "def test_plain():\n"
        "    config = Config(environ={'A': '1'})\n"
        "    config('A')\n"
        "def test_prefix():\n"
        "    config = Config(environ={}, env_prefix='APP_')\n"
        "    config('B')\n"
    )
    unrelated = "from myapp import config\nclass Config: ...\nc = Config()\nconfig('X')\nc('Y')\n"
    parser = CodeParser()
    found = {path: [(e.name, e.line, e.default) for e in parser.parse(path, source).env_vars]
             for path, source in (("app/settings.py", starlette), ("site/settings.py", decouple),
                                  ("tests/test_config.py", tests), ("other.py", unrelated))}
    assert found == {
        "app/settings.py": [("DEBUG", 3, "False"), ("DATABASE_URL", 4, None), ("TIMEOUT", 5, None),
                            ("APP_HOST", 7, None), ("TESTING", 9, None)],
        "site/settings.py": [("SECRET_KEY", 3, None), ("ALLOWED_HOSTS", 4, "'localhost'"), ("PORT", 6, "8000"),
                             ("MODE", 7, None)],
        "tests/test_config.py": [("A", 4, None), ("APP_B", 7, None)],
        "other.py": [],
    }
