"""HTTP route and path-reference extraction from call and comparison nodes.

Recognised forms (issue 3):

* ``app.get('/x', h)`` — ``.get .post .put .patch .delete .options .head
  .all`` with a literal (or simple template) path starting with ``/`` or ``*``
  and at least one handler argument, on any receiver (``app``, ``router``,
  ``fastify``, ``this.app``). One-argument calls such as ``map.get('/x')`` or
  ``app.get('env')`` are not routes.
* ``app.use('/api', router)`` — a mount (method ``USE``, ``match="prefix"``)
  whose ``target`` is the mounted identifier, or ``target_spec`` for an inline
  ``require('./routes')``; the code graph turns mounts into route prefixes.
* ``router.route('/x').get(h).post(h)`` — chained methods take the path of ``.route``.
* Fastify: ``fastify.register(plugin, { prefix: '/v1' })`` (a mount) and
  ``fastify.route({ method: 'GET', url: '/x', handler })``.
* Hono: routes chained on the app (``new Hono().get('/a', h).post('/b', h)``, also Express's
  ``app.get(…).post(…)``), their router the chain's receiver or the variable the chain is assigned
  to; ``app.route('/books', books)`` mounts (chained too); ``basePath('/api')`` in the chain is the
  prefix of the routes after it, on a variable (``const app = new Hono().basePath('/api')``) the
  prefix of that router's routes in the file (:func:`base_path`, applied by the extractor).
* The seed's ``url.pathname`` checks: ``===``/``==``/``!==``/``!=`` against a
  literal, ``pathname.startsWith('/x')`` (prefix), ``['/a', '/b'].includes(pathname)``
  and ``switch (url.pathname) { case '/x': … }``; the method comes from a
  ``req.method === 'POST'`` check in the same condition or an enclosing
  ``if`` of the same function, else ``ANY``.
* ``path.join`` / ``path.resolve`` (also ``path.posix.*``/``path.win32.*``) → :class:`PathRef`.
"""
from __future__ import annotations

from tree_sitter import Node

from rag.parse.nodes import (
    FUNCTION_NODE_TYPES,
    argument_nodes,
    end_line_of,
    find_method_check,
    line_of,
    simple_name,
    string_value,
    text_of,
)
from rag.parse.records import PathRef, Route

__all__ = [
    "ROUTE_METHODS",
    "PATH_CALLEES",
    "routes_from_call",
    "routes_from_pathname_compare",
    "routes_from_pathname_switch",
    "path_ref_from_call",
    "inline_mount",
    "apply_inline_mounts",
    "base_path",
]

ROUTE_METHODS = frozenset({"get", "post", "put", "patch", "delete", "options", "head", "all", "use"})
_ROUTE_CALL_PROPERTIES = ROUTE_METHODS | {"startsWith", "includes", "register", "route"}
# Calls a chain of route registrations passes through (each returns the app or router).
_CHAIN_PROPERTIES = ROUTE_METHODS | {"route", "basePath"}
PATH_CALLEES = frozenset(
    f"path{flavour}.{fn}" for flavour in ("", ".posix", ".win32") for fn in ("join", "resolve")
)
_PATH_IDENTIFIERS = frozenset({"__dirname", "__filename"})
# A negated check (`if (url.pathname !== '/x') return`) still names a served path.
_COMPARISON_OPERATORS = frozenset({"===", "==", "!==", "!="})


def _route_path(node: Node | None) -> str | None:
    value = string_value(node)
    if value is None:
        return None
    if value.startswith(("/", "*")) or (node is not None and node.type == "template_string" and value.startswith("${")):
        return value
    return None


def _property(member: Node) -> str:
    prop = member.child_by_field_name("property")
    return text_of(prop) if prop is not None else ""


def _is_pathname(node: Node | None) -> bool:
    if node is None:
        return False
    if node.type == "identifier":
        return text_of(node) == "pathname"
    return node.type == "member_expression" and _property(node) == "pathname"


def _chained_route_path(receiver: Node) -> tuple[str | None, str | None]:
    """Walk ``router.route('/x').get(a).post(b)`` back to ``.route('/x')`` (Express: one argument;
    Hono's two-argument ``.route('/x', sub)`` is a mount, not a path for what follows)."""
    current = receiver
    while current.type == "call_expression":
        fn = current.child_by_field_name("function")
        if fn is None or fn.type != "member_expression":
            return None, None
        prop = _property(fn)
        args = argument_nodes(current)
        if prop == "route" and len(args) == 1:
            path = _route_path(args[0])
            return path, simple_name(fn.child_by_field_name("object"))
        if prop not in ROUTE_METHODS or len(args) >= 2 and _route_path(args[0]) is not None:
            return None, None  # `app.get('/a', h).post(…)`: a route with its own path
        current = fn.child_by_field_name("object")
        if current is None:
            return None, None
    return None, None


def _chain(receiver: Node) -> tuple[str | None, str]:
    """``(router, prefix)`` of a call chain's receiver: the identifier it starts from, else the variable
    the whole chain is assigned to (``const api = new Hono().get(…)``); the ``basePath('/x')`` calls of
    the chain before this point joined as the prefix."""
    prefix: list[str] = []
    current = receiver
    while current.type == "call_expression":
        fn = current.child_by_field_name("function")
        if fn is None or fn.type != "member_expression" or _property(fn) not in _CHAIN_PROPERTIES:
            break
        if _property(fn) == "basePath":
            args = argument_nodes(current)
            path = _route_path(args[0]) if args else None
            if path is not None:
                prefix.append(path)
        current = fn.child_by_field_name("object")
    joined = "".join(p.rstrip("/") for p in reversed(prefix))
    if current.type in ("identifier", "member_expression", "this"):
        return simple_name(current), joined
    return _assigned_name(receiver), joined


def _assigned_name(node: Node) -> str | None:
    """The variable (or ``export const``) a call chain containing ``node`` is assigned to."""
    top = node
    while top.parent is not None and top.parent.type in ("call_expression", "member_expression", "await_expression"):
        top = top.parent
    parent = top.parent
    if parent is not None and parent.type == "variable_declarator" and parent.child_by_field_name("value") == top:
        name = parent.child_by_field_name("name")
        if name is not None and name.type == "identifier":
            return text_of(name)
    return None


def base_path(call: Node, fn: Node) -> tuple[str, str] | None:
    """``const app = new Hono().basePath('/api')`` → ``("app", "/api")``: the prefix of ``app``'s routes."""
    if _property(fn) != "basePath":
        return None
    parent = call.parent
    if parent is None or parent.type != "variable_declarator" or parent.child_by_field_name("value") != call:
        return None
    router, prefix = _chain(call)
    return (router, prefix) if router else None


def _mount_target(node: Node) -> tuple[str | None, str | None]:
    """``(identifier, spec)`` of what ``.use``/``.register`` mounts (seen through any number of
    ``await``: a loop, not recursion, so a generated ``await await …`` chain cannot exhaust the stack)."""
    while node.type == "await_expression" and node.named_children:
        node = node.named_children[0]
    if node.type in ("identifier", "member_expression"):
        return simple_name(node), None
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        args = argument_nodes(node)
        if fn is not None and fn.type == "identifier" and text_of(fn) == "require" and args:
            return None, string_value(args[0])
    return None, None


def _object_string(obj: Node, key_name: str) -> Node | None:
    for pair in obj.named_children:
        if pair.type != "pair":
            continue
        key = pair.child_by_field_name("key")
        if key is not None and (string_value(key) if key.type == "string" else text_of(key)) == key_name:
            return pair.child_by_field_name("value")
    return None


def _fastify_route_object(obj: Node, line: int, router: str | None) -> list[Route]:
    path = _route_path(_object_string(obj, "url") or _object_string(obj, "path"))
    method_node = _object_string(obj, "method")
    if path is None or method_node is None:
        return []
    methods = [string_value(method_node)]
    if method_node.type == "array":
        methods = [string_value(child) for child in method_node.named_children]
    return [Route(method=m.upper(), path=path, line=line, router=router) for m in methods if m]


def routes_from_call(call: Node, fn: Node) -> list[Route]:
    """Routes and mounts declared by one call whose callee ``fn`` is a member expression."""
    prop_node = fn.child_by_field_name("property")
    if prop_node is None:
        return []
    prop = text_of(prop_node)
    if prop not in _ROUTE_CALL_PROPERTIES:
        return []
    line = line_of(prop_node)
    receiver = fn.child_by_field_name("object")
    if receiver is None:
        return []
    args = argument_nodes(call)
    if prop == "startsWith":
        path = _route_path(args[0]) if args else None
        if path is not None and _is_pathname(receiver):
            return [Route(method=_infer_method(call), path=path, line=line, match="prefix", source="pathname")]
        return []
    if prop == "includes":
        if receiver.type == "array" and args and _is_pathname(args[0]):
            method = _infer_method(call)
            return [
                Route(method=method, path=path, line=line_of(item), source="pathname")
                for item in receiver.named_children
                if (path := _route_path(item)) is not None
            ]
        return []
    if prop == "register" and len(args) >= 2 and args[1].type == "object":
        prefix = _route_path(_object_string(args[1], "prefix"))
        target, spec = _mount_target(args[0])
        if prefix is not None and (target or spec):
            return [
                Route(method="USE", path=prefix, line=line, router=simple_name(receiver), target=target,
                      target_spec=spec, match="prefix")
            ]
        return []
    if prop == "route" and len(args) == 1 and args[0].type == "object":
        return _fastify_route_object(args[0], line, simple_name(receiver))
    if prop == "route" and len(args) == 2:  # Hono: app.route('/books', books)
        path = _route_path(args[0])
        target, spec = _mount_target(args[1])
        if path is None or not (target or spec):
            return []
        router, prefix = _chain(receiver)
        return [Route(method="USE", path=path, line=line, router=router, target=target, target_spec=spec,
                      match="prefix", prefix=prefix or None)]
    if prop not in ROUTE_METHODS:
        return []
    if receiver.type == "call_expression":
        path, router = _chained_route_path(receiver)
        if path is not None:
            return [] if prop == "use" else [Route(method=prop.upper(), path=path, line=line, router=router)]
    if len(args) < 2:
        return []
    path = _route_path(args[0])
    if path is None:
        return []
    router, prefix = _chain(receiver)
    if prop == "use":
        target, spec = _mount_target(args[-1])
        return [Route(method="USE", path=path, line=line, router=router, target=target, target_spec=spec,
                      match="prefix", prefix=prefix or None)]
    return [Route(method=prop.upper(), path=path, line=line, router=router, prefix=prefix or None)]


def _infer_method(node: Node) -> str:
    """Method from a ``req.method === 'X'`` check around ``node``, else ``ANY``.

    Looks at the enclosing ``&&``/``||`` expression and the conditions of the
    enclosing ``if`` statements, up to the nearest function boundary.
    """
    top_expression = node
    parent = node.parent
    while parent is not None and parent.type not in FUNCTION_NODE_TYPES:
        if parent.type in ("binary_expression", "parenthesized_expression", "unary_expression"):
            top_expression = parent
        elif parent.type == "if_statement":
            condition = parent.child_by_field_name("condition")
            if condition is not None:
                method = find_method_check(condition)
                if method:
                    return method
        parent = parent.parent
    if top_expression is not node:
        method = find_method_check(top_expression)
        if method:
            return method
    return "ANY"


def routes_from_pathname_compare(node: Node) -> list[Route]:
    """``url.pathname === '/x'`` (either side, ``==``/``!==``/``!=`` too)."""
    operator = node.child_by_field_name("operator")
    if operator is None or operator.type not in _COMPARISON_OPERATORS:
        return []
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    literal = right if _is_pathname(left) else left
    path = _route_path(literal)
    if path is None or literal is None:
        return []
    return [Route(method=_infer_method(node), path=path, line=line_of(literal), source="pathname")]


def routes_from_pathname_switch(node: Node) -> list[Route]:
    """``switch (url.pathname) { case '/x': … }`` → one route per literal case."""
    body = node.child_by_field_name("body")
    if body is None:
        return []
    method = _infer_method(node)
    routes: list[Route] = []
    for case in body.named_children:
        if case.type != "switch_case":
            continue
        path = _route_path(case.child_by_field_name("value"))
        if path is not None:
            case_method = find_method_check(case) or method
            routes.append(Route(method=case_method, path=path, line=line_of(case), source="pathname"))
    return routes


def inline_mount(call: Node, fn: Node) -> tuple[int, int, str, str] | None:
    """``fastify.register(function (instance) {…}, { prefix: '/v1' })`` →
    ``(first_line, last_line, "instance", "/v1")`` for :func:`apply_inline_mounts`."""
    prop = fn.child_by_field_name("property")
    if prop is None or text_of(prop) != "register":
        return None
    args = argument_nodes(call)
    if len(args) < 2 or args[1].type != "object":
        return None
    plugin = args[0]
    if plugin.type not in ("function_expression", "arrow_function"):
        return None
    prefix = _route_path(_object_string(args[1], "prefix"))
    params = plugin.child_by_field_name("parameters") or plugin.child_by_field_name("parameter")
    if prefix is None or params is None:
        return None
    first = params if params.type == "identifier" else next(iter(params.named_children), None)
    if first is None or first.type != "identifier":
        return None
    return line_of(plugin), end_line_of(plugin), text_of(first), prefix


def apply_inline_mounts(routes: list[Route], mounts: list[tuple[int, int, str, str]]) -> None:
    """Set ``Route.prefix`` for routes declared on an inline plugin's instance (outer prefixes first)."""
    for first, last, param, prefix in sorted(mounts, key=lambda m: (m[0], -m[1])):
        for route in routes:
            if route.source == "call" and route.router == param and first <= route.line <= last:
                route.prefix = prefix if route.prefix is None else route.prefix.rstrip("/") + prefix


def path_ref_from_call(call: Node, callee: str) -> PathRef | None:
    """A :class:`PathRef` for ``path.join/resolve(...)`` with at least one literal part."""
    if callee not in PATH_CALLEES:
        return None
    parts: list[str] = []
    literal = False
    for arg in argument_nodes(call):
        value = string_value(arg)
        if value is not None:
            parts.append(value)
            literal = True
        elif arg.type == "identifier" and text_of(arg) in _PATH_IDENTIFIERS:
            parts.append(text_of(arg))
        else:
            parts.append("*")
    return PathRef(line=line_of(call), parts=parts) if literal else None
