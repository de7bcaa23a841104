"""HTTP routes and router mounts declared in Python files (Flask, FastAPI, Starlette, Django).

Recognised forms (every path a literal string; each gives :class:`~rag.parse.records.Route`
records with ``source="call"``, so the code graph folds mount prefixes into them as
it does for Express):

* **decorators** ``@app.route("/x", methods=["GET", "POST"])`` (Flask; no
  ``methods`` → ``GET``), ``@bp.get("/x")`` ``.post .put .patch .delete .options
  .head .trace`` (Flask ≥ 2, FastAPI, Quart, Sanic), ``@router.api_route("/x",
  methods=[…])`` and ``@app.websocket("/ws")`` (method ``WEBSOCKET``), and bare
  ``@get("/x")`` / ``@route("/x")`` (Litestar, Bottle). The path may be the
  ``path=``/``rule=`` keyword; it must start with ``/`` (an empty path is accepted
  on a receiver: FastAPI's ``@router.get("")``). ``line`` is the decorator's
  method name, ``handler`` the decorated function.
* **calls** ``app.add_url_rule("/x", view_func=v, methods=[…])`` (Flask; a
  ``View.as_view()`` without ``methods`` → ``ANY``), ``app.add_api_route("/x", v,
  methods=[…])``, ``app.add_websocket_route("/ws", v)``, ``app.add_route("/x", v,
  methods=[…])`` (Starlette; aiohttp's ``router.add_route("GET", "/x", v)`` names the
  method first) and Starlette's ``Route("/x", v, methods=[…])`` / ``WebSocketRoute("/ws", v)``.
* **mounts** (method ``USE``, ``match="prefix"``, ``target`` the mounted router):
  ``app.register_blueprint(bp, url_prefix="/api")``, ``app.include_router(r,
  prefix="/api")`` (no prefix → ``/``), ``app.mount("/static", sub)`` and
  Starlette's ``Mount("/api", app=sub)``; a ``Mount("/api", routes=[…])`` list
  prefixes the routes inside it.
* **router prefixes**: ``bp = Blueprint("auth", __name__, url_prefix="/auth")`` and
  ``router = APIRouter(prefix="/items")`` set ``Route.prefix`` of that router's
  routes in the same file. (Flask's ``register_blueprint(url_prefix=…)`` *replaces*
  a blueprint's own prefix; the code graph joins them, as FastAPI does.)
* **scopes**: a router or mounted name bound inside a function (a parameter or an
  assignment there: ``def create_app(): app = Flask(…)``, a test's ``bp``) is
  written ``name@function:line`` in ``Route.router``/``Route.target``, so the
  code graph, which matches routers of one file by name, does not mix the ``bp``
  of one function with another's (a test module defines dozens). ``self``/``cls``
  attributes and module-level names stay plain.
* **class-based views** defined in the same file (``View.as_view()`` with no
  ``methods``): one route per HTTP-verb method the class defines (``def get``,
  ``def post`` …), else ``ANY``.
* **Django** URL lists: ``path("articles/<int:year>/", views.year_archive)``,
  ``re_path(r"^x/$", v)`` and ``url(…)``, when ``path``/``re_path``/``url`` are
  imported from ``django.*`` (or called as ``urls.path``): method ``ANY``, the
  path with a leading ``/`` (``^``/``$`` anchors of a regex dropped,
  ``match="regex"``), ``handler`` the view (``Index.as_view()`` → ``Index``).
  ``path("blog/", include("blog.urls"))`` is a mount with ``target_spec``
  ``blog.urls`` (resolved as a Python module by the code graph);
  ``include(module)`` and a URL list attribute (``admin.site.urls``) a mount with
  ``target``; ``include([path(…), …])`` prefixes the routes of the inline list.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from rag.parse.nodes import line_of, text_of
from rag.parse.pynodes import call_arguments, dotted_name, string_value, strings_of
from rag.parse.records import Import, Route

__all__ = ["ROUTE_DECORATOR_METHODS", "RouteContext", "route_context", "routes_from_decorated",
           "routes_from_call", "apply_route_prefixes"]

ROUTE_DECORATOR_METHODS = frozenset({"get", "post", "put", "patch", "delete", "options", "head", "trace"})
_ROUTE_DECORATORS = ROUTE_DECORATOR_METHODS | {"route", "api_route", "websocket", "websocket_route"}
_BARE_DECORATORS = ROUTE_DECORATOR_METHODS | {"route"}
_DJANGO_ROUTE_FUNCTIONS = frozenset({"path", "re_path", "url"})
_ROUTER_CLASSES = {"Blueprint": "url_prefix", "APIRouter": "prefix"}
_MOUNT_METHODS = {"register_blueprint": "url_prefix", "include_router": "prefix"}


@dataclass(slots=True)
class RouteContext:
    """What route extraction learns from one file beyond single calls.

    Attributes:
        django: local name → Django function (``path``/``re_path``/``url``) it is bound to.
        django_include: local names of ``django.urls.include``.
        inline_prefixes: ``(start_byte, end_byte, prefix)`` of inline route lists
            (``include([…])``, ``Mount(routes=[…])``).
        placed: ``(node, route)`` of every route of the file, ``node`` the call or the
            decorated definition declaring it (for scopes and the inline lists).
        router_nodes: ``(assignment node, variable, prefix)`` of the router constructors.
    """

    django: dict[str, str] = field(default_factory=dict)
    django_include: set[str] = field(default_factory=set)
    inline_prefixes: list[tuple[int, int, str]] = field(default_factory=list)
    placed: list[tuple[Node, Route]] = field(default_factory=list)
    router_nodes: list[tuple[Node, str, str]] = field(default_factory=list)


def route_context(imports: list[Import]) -> RouteContext:
    """A :class:`RouteContext` knowing the Django functions the file imports."""
    context = RouteContext()
    for item in imports:
        if item.kind != "from" or not item.spec.startswith("django."):
            continue
        member = item.spec.rsplit(".", 1)[-1]
        if member in _DJANGO_ROUTE_FUNCTIONS:
            context.django.update((name, member) for name in item.names)
        elif member == "include":
            context.django_include.update(item.names)
    return context


def _path_argument(positional: list[Node], keywords: dict[str, Node], *names: str) -> Node | None:
    if positional:
        return positional[0]
    return next((keywords[n] for n in names if n in keywords), None)


def _methods(keywords: dict[str, Node], default: list[str]) -> list[str]:
    values = strings_of(keywords.get("methods"))
    if not values:
        return default
    return [m.upper() for v in values for m in v.replace(",", " ").split()]


def _handler(node: Node | None) -> str | None:
    """A view's name: ``views.index``; ``Index.as_view()`` → ``Index``."""
    if node is None:
        return None
    if node.type == "call":
        callee = dotted_name(node.child_by_field_name("function"))
        if callee is not None and callee.endswith(".as_view"):
            return callee[: -len(".as_view")]
        return None
    return dotted_name(node)


def routes_from_decorated(decorated: Node, handler: str | None) -> list[Route]:
    """Routes declared by the decorators of one ``decorated_definition``."""
    routes: list[Route] = []
    for decorator in decorated.named_children:
        if decorator.type != "decorator" or not decorator.named_children:
            continue
        call = decorator.named_children[0]
        if call.type != "call":
            continue
        fn = call.child_by_field_name("function")
        if fn is None:
            continue
        if fn.type == "attribute":
            method_node = fn.child_by_field_name("attribute")
            receiver = dotted_name(fn.child_by_field_name("object"))
            if method_node is None or receiver is None or text_of(method_node) not in _ROUTE_DECORATORS:
                continue
        elif fn.type == "identifier" and text_of(fn) in _BARE_DECORATORS:
            method_node, receiver = fn, None
        else:
            continue
        method = text_of(method_node)
        positional, keywords = call_arguments(call)
        path = string_value(_path_argument(positional, keywords, "path", "rule"))
        if path is None or not (path.startswith("/") or (path == "" and receiver is not None)):
            continue
        if method in ("route", "api_route"):
            methods = _methods(keywords, ["GET"])
        elif method.startswith("websocket"):
            methods = ["WEBSOCKET"]
        else:
            methods = [method.upper()]
        line = line_of(method_node)
        routes.extend(Route(method=m, path=path, line=line, router=receiver, handler=handler) for m in methods)
    return routes


def _django_path(raw: str, regex: bool) -> str:
    if regex:
        raw = raw.removeprefix("^").removesuffix("$")
    return "/" + raw.lstrip("/")


def _mount(line: int, router: str | None, path: str, target_node: Node | None) -> Route:
    return Route(method="USE", path=path, line=line, router=router, target=dotted_name(target_node), match="prefix")


def routes_from_call(call: Node, callee: str, context: RouteContext) -> list[Route]:
    """Routes, mounts and router prefixes declared by one (non-decorator) call (module docstring)."""
    receiver, _, method = callee.rpartition(".")
    router = receiver or None
    positional, keywords = call_arguments(call)
    line = line_of(call)
    if method in _ROUTER_CLASSES:
        prefix = string_value(keywords.get(_ROUTER_CLASSES[method]))
        parent = call.parent
        if prefix and parent is not None and parent.type == "assignment":
            left = parent.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                context.router_nodes.append((parent, text_of(left), prefix))
        return []
    if router is not None and method in _MOUNT_METHODS:
        if not positional:
            return []
        prefix = string_value(keywords.get(_MOUNT_METHODS[method]))
        return [_mount(line, router, prefix or "/", positional[0])]
    if router is not None and method == "mount":
        path = string_value(positional[0]) if positional else None
        target = positional[1] if len(positional) > 1 else keywords.get("app")
        if path is None or not path.startswith("/") or target is None:
            return []
        return [_mount(line, router, path, target)]
    if router is not None and method in ("add_url_rule", "add_api_route", "add_websocket_route"):
        path = string_value(_path_argument(positional, keywords, "rule", "path"))
        if path is None or not path.startswith("/"):
            return []
        if method == "add_url_rule":
            view = keywords.get("view_func", positional[2] if len(positional) > 2 else None)
            as_view = view is not None and view.type == "call"
            methods = _methods(keywords, ["ANY" if as_view else "GET"])
        else:
            view = keywords.get("endpoint", positional[1] if len(positional) > 1 else None)
            methods = ["WEBSOCKET"] if method == "add_websocket_route" else _methods(keywords, ["GET"])
        return [Route(method=m, path=path, line=line, router=router, handler=_handler(view)) for m in methods]
    if router is not None and method == "add_route":
        return _add_route(line, router, positional, keywords)
    if method in ("Route", "WebSocketRoute", "Mount") and (not receiver or receiver.endswith("routing")):
        return _starlette(call, method, positional, keywords, context)
    if callee in context.django:
        return _django(call, context.django[callee], positional, keywords, context)
    if method in _DJANGO_ROUTE_FUNCTIONS and receiver.endswith("urls"):
        return _django(call, method, positional, keywords, context)
    return []


def _add_route(line: int, router: str, positional: list[Node], keywords: dict[str, Node]) -> list[Route]:
    """Starlette's ``app.add_route("/x", endpoint, methods=[…])`` (no ``methods`` → ``GET``) or aiohttp's
    ``router.add_route("GET", "/x", handler)`` (``"*"`` → ``ANY``), told apart by the first argument."""
    first = string_value(positional[0]) if positional else None
    if first is not None and not first.startswith("/") and len(positional) > 1:  # aiohttp: the method first
        path = string_value(positional[1])
        if path is None or not path.startswith("/"):
            return []
        view = positional[2] if len(positional) > 2 else keywords.get("handler")
        methods = ["ANY" if first == "*" else first.upper()]
        return [Route(method=m, path=path, line=line, router=router, handler=_handler(view)) for m in methods]
    path = string_value(_path_argument(positional, keywords, "path"))
    if path is None or not path.startswith("/"):
        return []
    view = keywords.get("endpoint", keywords.get("route", positional[1] if len(positional) > 1 else None))
    methods = _methods(keywords, ["GET"])
    return [Route(method=m, path=path, line=line, router=router, handler=_handler(view)) for m in methods]


def _starlette(call: Node, kind: str, positional: list[Node], keywords: dict[str, Node],
               context: RouteContext) -> list[Route]:
    path = string_value(_path_argument(positional, keywords, "path"))
    if path is None or not path.startswith("/"):
        return []
    line = line_of(call)
    if kind == "Mount":
        routes_list = keywords.get("routes")
        if routes_list is not None and routes_list.type == "list":
            context.inline_prefixes.append((routes_list.start_byte, routes_list.end_byte, path))
        return [_mount(line, None, path, keywords.get("app", positional[1] if len(positional) > 1 else None))]
    view = keywords.get("endpoint", positional[1] if len(positional) > 1 else None)
    if view is None:
        return []
    methods = ["WEBSOCKET"] if kind == "WebSocketRoute" else _methods(keywords, ["GET"])
    return [Route(method=m, path=path, line=line, handler=_handler(view)) for m in methods]


def _django(call: Node, function: str, positional: list[Node], keywords: dict[str, Node],
            context: RouteContext) -> list[Route]:
    raw = string_value(_path_argument(positional, keywords, "route"))
    view = positional[1] if len(positional) > 1 else keywords.get("view")
    if raw is None or view is None:
        return []
    regex = function != "path"
    path = _django_path(raw, regex)
    match = "regex" if regex else "exact"
    line = line_of(call)
    if view.type == "call" and _is_include(view, context):
        args = call_arguments(view)[0]
        target = args[0] if args else None
        if target is not None and target.type == "tuple" and target.named_children:
            target = target.named_children[0]  # include(("blog.urls", "blog"))
        if target is None:
            return []
        spec = string_value(target)
        if spec is not None:
            return [Route(method="USE", path=path, line=line, target_spec=spec, match="prefix")]
        if target.type == "list":
            context.inline_prefixes.append((target.start_byte, target.end_byte, path))
            return [Route(method="USE", path=path, line=line, match="prefix")]
        return [Route(method="USE", path=path, line=line, target=dotted_name(target), match="prefix")]
    handler = _handler(view)
    if handler is not None and (handler == "urls" or handler.endswith(".urls")):  # path("admin/", admin.site.urls)
        return [Route(method="USE", path=path, line=line, target=handler, match="prefix")]
    return [Route(method="ANY", path=path, line=line, handler=handler, match=match)]


def _is_include(call: Node, context: RouteContext) -> bool:
    callee = dotted_name(call.child_by_field_name("function"))
    return callee is not None and (callee in context.django_include or callee.endswith("urls.include"))


def _join(prefix: str, path: str) -> str:
    if path in ("", "/"):
        return prefix
    return prefix.rstrip("/") + "/" + path.lstrip("/")


_SCOPE_TYPES = frozenset({"function_definition", "lambda"})
_NESTED_SCOPES = frozenset({"function_definition", "class_definition", "lambda"})
_UNSCOPED_HEADS = frozenset({"self", "cls"})
_HTTP_VERBS = ("get", "post", "put", "patch", "delete", "head", "options")


def _bound_names(function: Node) -> set[str]:
    """Names a function binds: its parameters and the targets of assignments in its own body
    (``global``/``nonlocal`` names excluded; nested functions and classes not entered)."""
    names: set[str] = set()
    declared_outside: set[str] = set()
    parameters = function.child_by_field_name("parameters")
    for parameter in parameters.named_children if parameters is not None else ():
        target = parameter if parameter.type == "identifier" else (
            parameter.child_by_field_name("name") or next(iter(parameter.named_children), None))
        if target is not None and target.type == "identifier":
            names.add(text_of(target))
    body = function.child_by_field_name("body")
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in ("assignment", "augmented_assignment"):
            left = node.child_by_field_name("left")
            if left is not None:
                targets = [left] if left.type == "identifier" else [c for c in left.named_children
                                                                    if c.type == "identifier"]
                names.update(text_of(t) for t in targets)
        elif kind in ("global_statement", "nonlocal_statement"):
            declared_outside.update(text_of(c) for c in node.named_children if c.type == "identifier")
        if kind in _NESTED_SCOPES:
            if kind == "function_definition" or kind == "class_definition":
                name = node.child_by_field_name("name")
                if name is not None:
                    names.add(text_of(name))
            continue
        stack.extend(node.named_children)
    return names - declared_outside


class _Scopes:
    """``name`` → ``name@function:line`` for names bound in an enclosing function (module docstring)."""

    def __init__(self) -> None:
        self._bound: dict[int, set[str]] = {}

    def qualify(self, node: Node, dotted: str | None) -> str | None:
        if not dotted or "@" in dotted:
            return dotted
        head = dotted.split(".", 1)[0]
        if head in _UNSCOPED_HEADS:
            return dotted
        parent = node.parent
        while parent is not None:
            if parent.type == "function_definition":
                names = self._bound.get(parent.start_byte)
                if names is None:
                    names = self._bound[parent.start_byte] = _bound_names(parent)
                if head in names:
                    name = parent.child_by_field_name("name")
                    return f"{dotted}@{text_of(name) if name is not None else '?'}:{line_of(parent)}"
            parent = parent.parent
        return dotted


def _view_methods(structure_definitions, class_name: str) -> list[str]:
    """HTTP-verb methods (upper case) of a class defined in the file (``MethodView`` style)."""
    return [verb.upper() for verb in _HTTP_VERBS
            if any(d.kind == "method" and d.parent == class_name and d.name == verb for d in structure_definitions)]


def apply_route_prefixes(context: RouteContext, definitions=()) -> list[Route]:
    """Finish the file's routes: scope-qualify routers and mount targets, set ``Route.prefix``
    from router constructors, then from inline route lists (innermost first, so each enclosing
    list's prefix goes in front), and expand same-file class-based views into their methods.

    Args:
        context: the file's route context (``placed`` holds every route).
        definitions: the file's :class:`~rag.parse.records.Definition` records.

    Returns:
        The routes, in ``placed`` order.
    """
    scopes = _Scopes()
    prefixes: dict[str, str] = {}
    for node, name, prefix in context.router_nodes:
        prefixes[scopes.qualify(node, name) or name] = prefix
    for node, route in context.placed:
        route.router = scopes.qualify(node, route.router)
        if route.method == "USE":
            route.target = scopes.qualify(node, route.target)
        if route.router is not None and route.router in prefixes:
            route.prefix = prefixes[route.router]
    for first, last, prefix in sorted(context.inline_prefixes, key=lambda m: (-m[0], m[1])):
        for node, route in context.placed:
            if first <= node.start_byte < last:
                route.prefix = prefix if route.prefix is None else _join(prefix, route.prefix)
    routes: list[Route] = []
    for _node, route in context.placed:
        methods = _view_methods(definitions, route.handler) if route.method == "ANY" and route.handler else []
        if methods:
            routes.extend(Route(method=m, path=route.path, line=route.line, router=route.router,
                                match=route.match, prefix=route.prefix, handler=route.handler) for m in methods)
        else:
            routes.append(route)
    return routes
