"""Python source → :class:`~rag.parse.records.FileStructure` (tree-sitter-python).

The same records as the JavaScript parser, from one pass of ``queries/python.scm``:

* **imports** — ``import a.b`` (spec ``a.b``, binds ``a``), ``import a.b as c``
  (binds ``c``), ``from M import n [as m]`` (one record per name, spec ``M.n``;
  ``from . import views`` → ``.views``, ``from ..a import b`` → ``..a.b``), ``from M
  import *`` (spec ``M``, names ``["*"]``), literal ``importlib.import_module("x")``
  / ``__import__("x")`` (kind ``dynamic``). ``from __future__`` is not a dependency.
  Resolution to files: :mod:`rag.parse.pymodules`.
* **exports** — the strings of ``__all__ = [...]`` / ``__all__ += [...]`` (kind ``named``).
* **definitions** — classes (``bases``: the positional superclasses as written),
  functions, methods (a function in a class body; ``parent`` the class), nested
  functions and classes (``parent`` the enclosing definition), a lambda bound to a
  name (kind ``function``), class-level assignments (kind ``field``: model fields,
  settings fields, constants). A decorated definition's range starts at its first
  decorator. ``@staticmethod`` sets ``static``; ``@property`` /
  ``@cached_property`` set ``accessor="get"``, ``@x.setter`` ``accessor="set"``.
* **calls** — every call, ``callee`` dotted when simple (``os.path.join``,
  ``self.save``) else the called attribute's name, with the enclosing definition.
* **env vars** — :mod:`rag.parse.python_env`; **routes** — :mod:`rag.parse.python_routes`.

``has_error`` is set when the tree has syntax errors; tree-sitter-python recovers
locally, so everything outside the broken statement is kept as it parsed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from rag.parse.nodes import end_line_of, line_of, text_of
from rag.parse.pynodes import call_arguments, compact, dotted_name, string_value
from rag.parse.python_env import (
    env_aliases,
    env_from_call,
    env_from_compare,
    env_from_whole,
    env_from_subscript,
    module_constants,
    reader_names,
    settings_env_vars,
)
from rag.parse.python_routes import apply_route_prefixes, route_context, routes_from_call, routes_from_decorated
from rag.parse.records import Definition, Export, FileStructure, Import
from rag.parse.scopes import nest_definitions

__all__ = ["extract_python"]

# Callee text longer than this is replaced by its last attribute name (as for JavaScript).
_MAX_CALLEE_CHARS = 80
_MAX_EXPRESSION_CHARS = 120
_MAX_BASE_CHARS = 80
_DYNAMIC_IMPORTS = frozenset({"importlib.import_module", "import_module", "__import__"})
_GETTERS = frozenset({"property", "cached_property", "functools.cached_property", "abc.abstractproperty"})


@dataclass(slots=True)
class _Captured:
    """The query's captures of one file, by what they are."""

    definitions: list[tuple[str, Node, Node]] = field(default_factory=list)
    imports: list[Node] = field(default_factory=list)
    all_lists: list[Node] = field(default_factory=list)
    calls: list[tuple[Node, Node]] = field(default_factory=list)
    subscripts: list[Node] = field(default_factory=list)
    compares: list[Node] = field(default_factory=list)
    environs: list[Node] = field(default_factory=list)
    decorated: list[Node] = field(default_factory=list)
    constants: list[Node] = field(default_factory=list)


def _capture(matches) -> _Captured:
    found = _Captured()
    for _pattern, captures in matches:
        for key, nodes in captures.items():
            if key[0] == "_" or key.startswith("name."):
                continue
            node = nodes[0]
            if key.startswith("definition."):
                names = captures.get("name." + key)
                if names:
                    found.definitions.append((key[len("definition."):], names[0], node))
            elif key == "reference.call":
                fn = captures.get("name.reference.call")
                if fn:
                    found.calls.append((node, fn[0]))
            elif key == "reference.import":
                found.imports.append(node)
            elif key == "reference.all":
                found.all_lists.append(node)
            elif key == "reference.subscript":
                found.subscripts.append(node)
            elif key == "reference.compare":
                found.compares.append(node)
            elif key == "reference.environ":
                found.environs.append(node)
            elif key == "reference.decorated":
                found.decorated.append(node)
            elif key == "reference.constant":
                found.constants.append(node)
    return found


# -- imports ---------------------------------------------------------------------------------------

def _module_text(node: Node) -> str:
    return "".join(text_of(node).split())


def _imports(statement: Node) -> list[Import]:
    line = line_of(statement)
    records: list[Import] = []
    if statement.type == "import_statement":
        for item in statement.children_by_field_name("name"):
            if item.type == "aliased_import":
                module, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
                if module is not None and alias is not None:
                    records.append(Import(spec=_module_text(module), line=line, kind="import", names=[text_of(alias)]))
            elif item.type == "dotted_name":
                spec = _module_text(item)
                records.append(Import(spec=spec, line=line, kind="import", names=[spec.split(".", 1)[0]]))
        return records
    module_node = statement.child_by_field_name("module_name")
    if module_node is None:
        return records
    module = _module_text(module_node)
    if any(child.type == "wildcard_import" for child in statement.named_children):
        return [Import(spec=module, line=line, kind="from", names=["*"])]
    for item in statement.children_by_field_name("name"):
        if item.type == "aliased_import":
            name_node, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
        else:
            name_node, alias = item, None
        if name_node is None:
            continue
        name = _module_text(name_node)
        spec = module + name if module.endswith(".") else f"{module}.{name}"
        records.append(Import(spec=spec, line=line, kind="from", names=[text_of(alias) if alias is not None else name]))
    return records


def _dynamic_import(call: Node) -> Import | None:
    positional, _ = call_arguments(call)
    if not positional:
        return None
    names: list[str] = []
    parent = call.parent
    if parent is not None and parent.type == "assignment":
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            names = [text_of(left)]
    spec = string_value(positional[0])
    if spec:
        return Import(spec=spec, line=line_of(call), kind="dynamic", names=names)
    expression = compact(positional[0], _MAX_EXPRESSION_CHARS)
    return Import(spec=expression, line=line_of(call), kind="dynamic", names=names, expression=expression)


def _exports(node: Node) -> list[Export]:
    right = node.child_by_field_name("right")
    if right is None or right.type not in ("list", "tuple"):
        return []
    return [Export(name=value, line=line_of(child), kind="named")
            for child in right.named_children if (value := string_value(child))]


# -- definitions -----------------------------------------------------------------------------------

def _decorator_names(decorated: Node | None) -> list[str]:
    if decorated is None:
        return []
    names = []
    for decorator in decorated.named_children:
        if decorator.type == "decorator" and decorator.named_children:
            expression = decorator.named_children[0]
            if expression.type == "call":
                expression = expression.child_by_field_name("function") or expression
            name = dotted_name(expression)
            if name:
                names.append(name)
    return names


def _class_owner(node: Node) -> str | None:
    """Name of the class whose body holds ``node`` directly (through its decorators), else ``None``."""
    outer = node
    if node.parent is not None and node.parent.type in ("decorated_definition", "expression_statement"):
        outer = node.parent  # decorators; a lambda's assignment statement
    block = outer.parent
    if block is None or block.type != "block" or block.parent is None or block.parent.type != "class_definition":
        return None
    name = block.parent.child_by_field_name("name")
    return text_of(name) if name is not None else None


def _bases(class_node: Node) -> list[str]:
    superclasses = class_node.child_by_field_name("superclasses")
    if superclasses is None:
        return []
    return [dotted_name(child) or compact(child, _MAX_BASE_CHARS) for child in superclasses.named_children
            if child.type not in ("keyword_argument", "comment", "list_splat", "dictionary_splat")]


class _Collector:
    """Mutable state of one extraction (built per file, never shared)."""

    def __init__(self, path: str) -> None:
        self.out = FileStructure(path=path, language="python")
        self.spans: list[tuple[int, int, int]] = []
        self.owned: set[int] = set()
        self.classes: list[tuple[Node, str, list[str]]] = []
        self.handlers: dict[int, str] = {}  # decorated_definition start byte → definition name

    def add(self, record: Definition, node: Node) -> None:
        index = len(self.out.definitions)
        self.out.definitions.append(record)
        if record.parent is not None:
            self.owned.add(index)
        self.spans.append((node.start_byte, node.end_byte, index))

    def definition(self, kind: str, name_node: Node, node: Node) -> None:
        name = text_of(name_node)
        decorated = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else None
        owner = _class_owner(node)
        record = Definition(name=name, kind=kind, start=line_of(decorated or node), end=_end_line(node),
                            parent=owner)
        if kind == "function" and owner is not None:
            record.kind = "method"
            for decorator in _decorator_names(decorated):
                if decorator == "staticmethod":
                    record.static = True
                elif decorator in _GETTERS:
                    record.accessor = "get"
                elif decorator.endswith(".setter"):
                    record.accessor = "set"
        elif kind == "class":
            record.bases = _bases(node)
            self.classes.append((node, name, record.bases))
            self._fields(node, name)
        if decorated is not None:
            self.handlers[decorated.start_byte] = name
        self.add(record, node)

    def _fields(self, class_node: Node, class_name: str) -> None:
        body = class_node.child_by_field_name("body")
        for statement in body.named_children if body is not None else ():
            if statement.type != "expression_statement":
                continue
            for assignment in statement.named_children:
                if assignment.type != "assignment":
                    continue
                end = _end_line(assignment)
                while assignment is not None and assignment.type == "assignment":  # a = b = value
                    left = assignment.child_by_field_name("left")
                    right = assignment.child_by_field_name("right")
                    if left is not None and left.type == "identifier" and (right is None or right.type != "lambda"):
                        # (a lambda is captured as a function → method)
                        self.add(Definition(name=text_of(left), kind="field", start=line_of(assignment),
                                            end=end, parent=class_name), assignment)
                    assignment = right


def _end_line(node: Node) -> int:
    """Last line of ``node`` without trailing comments: tree-sitter-python puts the comments that
    follow a body's last statement (at its indentation) inside the body, though they usually
    introduce what comes next; Python's own ``ast`` ends a definition at its last statement."""
    current = node
    while current.child_count:
        last = next((c for c in reversed(current.children) if c.type != "comment"), None)
        if last is None:
            break
        current = last
    return end_line_of(current)


def _callee(fn: Node) -> str | None:
    name = dotted_name(fn)
    if name is not None and len(name) <= _MAX_CALLEE_CHARS:
        return name
    if fn.type == "attribute":
        attribute = fn.child_by_field_name("attribute")
        return text_of(attribute) if attribute is not None else None
    return None


def _alias_uses(imports: list[Node], aliases) -> list[Node]:
    """The identifiers naming ``os.environ`` under another bare name (``from os import environ as env``):
    the query captures only identifiers spelled ``environ``, so the file's tree is walked for these
    (only in a file with such an alias)."""
    names = {name for name in aliases.environ if "." not in name and name != "environ"}
    if not names or not imports:
        return []
    root = imports[0]
    while root.parent is not None:
        root = root.parent
    found: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "identifier":
            if text_of(node) in names:
                found.append(node)
        else:
            stack.extend(node.children)
    return sorted(found, key=lambda n: n.start_byte)


def extract_python(matches, *, path: str, has_error: bool) -> FileStructure:
    """The :class:`FileStructure` of one Python file from the ``QueryCursor.matches()`` output of
    ``queries/python.scm``; imports unresolved (``rag.parse.parser.resolve_imports``)."""
    captured = _capture(matches)
    collector = _Collector(path)
    out = collector.out
    out.has_error = has_error
    for statement in captured.imports:
        out.imports.extend(_imports(statement))
    for node in captured.all_lists:
        out.exports.extend(_exports(node))
    for kind, name_node, node in captured.definitions:
        collector.definition(kind, name_node, node)

    aliases = env_aliases(out.imports, constants=module_constants(captured.constants))
    routes = route_context(out.imports)
    readers: dict[str, list[tuple[int, str]]] = {}  # reader variable → (start byte, env prefix) of each binding
    for call, _fn in captured.calls:
        if call.parent is not None and call.parent.type == "assignment" \
                and (binding := reader_names(call.parent, aliases)) is not None:
            readers.setdefault(binding[0], []).append((call.start_byte, binding[1]))
    call_sites: list[tuple[int, str, int]] = []
    for call, fn in captured.calls:
        callee = _callee(fn)
        if callee is None:
            continue
        call_sites.append((call.start_byte, callee, line_of(call)))
        if callee in _DYNAMIC_IMPORTS:
            record = _dynamic_import(call)
            if record is not None:
                out.imports.append(record)
            continue
        env = env_from_call(call, callee, aliases, readers)
        if env:
            out.env_vars.extend(env)
            continue
        if call.parent is not None and call.parent.type == "decorator":
            continue
        routes.placed.extend((call, route) for route in routes_from_call(call, callee, routes))
    for node in captured.subscripts:
        env = env_from_subscript(node, aliases)
        if env is not None:
            out.env_vars.append(env)
    for node in captured.compares:
        env = env_from_compare(node, aliases)
        if env is not None:
            out.env_vars.append(env)
    for node in (*captured.environs, *_alias_uses(captured.imports, aliases)):
        env = env_from_whole(node, aliases)
        if env is not None:
            out.env_vars.append(env)
    out.env_vars.extend(settings_env_vars(collector.classes))
    for decorated in captured.decorated:
        routes.placed.extend((decorated, route) for route in
                             routes_from_decorated(decorated, collector.handlers.get(decorated.start_byte)))
    out.routes = apply_route_prefixes(routes, out.definitions)
    out.calls = nest_definitions(out.definitions, collector.spans, owned=collector.owned, call_sites=call_sites)
    return out
