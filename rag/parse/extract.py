"""Turn one query pass over a syntax tree into parse records.

``extract(matches, path=, language=)`` consumes the matches of the combined query
(``rag/queries/common.scm`` + the language's file) and dispatches on the main
capture name of each match: ``definition.<kind>``, ``reference.call``,
``reference.import``, ``reference.export``, ``reference.cjs_export``,
``reference.env``, ``reference.pathname`` and ``reference.pathname_switch``.
Everything else is done with cheap field look-ups on the captured nodes; the
only cross-node computation — which named definition encloses each call and
each nested definition — is one sweep over the captures sorted by byte
offset (definitions nest like the tree, so a stack suffices).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from rag.parse.nodes import (
    argument_nodes,
    bound_names,
    end_line_of,
    line_of,
    owner_name,
    simple_name,
    string_value,
    text_of,
)
from rag.parse.records import Definition, EnvVar, Export, FileStructure, Import
from rag.parse.routes import (
    apply_inline_mounts,
    base_path,
    inline_mount,
    path_ref_from_call,
    routes_from_call,
    routes_from_pathname_compare,
    routes_from_pathname_switch,
)
from rag.parse.scopes import nest_definitions

__all__ = ["Extraction", "extract", "module_system"]

_CLASS_MEMBER_PARENTS = frozenset({"class_body"})
_OBJECT_MEMBER_PARENTS = frozenset({"object"})
_CLASS_TYPES = frozenset({"class", "class_declaration", "abstract_class_declaration"})
_CJS_ROOTS = frozenset({"module.exports", "exports"})
_DECLARATION_NAME_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "function_signature",
    }
)
# Callee text longer than this is replaced by its last property name.
_MAX_CALLEE_CHARS = 80
# Computed import specifiers and dynamic env keys: text kept up to this many characters.
_MAX_EXPRESSION_CHARS = 120
# Class bases: text kept up to this many characters.
_MAX_BASE_CHARS = 80
# Env defaults: literals longer than this are not kept.
_MAX_DEFAULT_CHARS = 200
_FUNCTION_VALUE_TYPES = frozenset({"arrow_function", "function_expression", "generator_function"})
_MEMBER_MODIFIERS = frozenset({"static", "get", "set"})
_LITERAL_TYPES = frozenset({"number", "string", "true", "false", "null", "undefined"})
_FALLBACK_OPERATORS = frozenset({"||", "??"})
# Conversions a read may pass through before its fallback: `Number(process.env.PORT) || 3000`.
_CONVERTERS = frozenset({"Number", "parseInt", "parseFloat", "String", "Boolean"})
# Wrappers climbed from `process.env.X` to find its `|| default` (TS casts included).
_TRANSPARENT_TYPES = frozenset({"parenthesized_expression", "as_expression", "non_null_expression",
                                "satisfies_expression"})


@dataclass(slots=True)
class Extraction:
    """Records extracted from one tree: a :class:`FileStructure` as the query pass found it.

    Attributes:
        records: the file's path and language, and its record lists in match order
            (:meth:`rag.parse.parser.JsParser.parse` sorts them into the final structure);
            imports unresolved, ``has_error`` and ``module_system`` not set yet.
        esm_lines: lines of the ``import``/``export`` statements.
        cjs_lines: lines of the ``require(…)`` calls, TypeScript ``import x = require()``
            and ``module.exports``/``exports.x`` assignments.
            (:func:`module_system` turns both into ``FileStructure.module_system``.)
    """

    records: FileStructure
    esm_lines: list[int] = field(default_factory=list)
    cjs_lines: list[int] = field(default_factory=list)


def module_system(esm_lines: list[int], cjs_lines: list[int], path: str) -> str:
    """``esm``, ``commonjs``, ``mixed`` or ``unknown`` (see ``FileStructure.module_system``)."""
    if esm_lines and cjs_lines:
        return "mixed"
    if esm_lines:
        return "esm"
    if cjs_lines:
        return "commonjs"
    ext = path.rpartition(".")[2].lower()
    return {"mjs": "esm", "cjs": "commonjs"}.get(ext, "unknown")


def _key_text(node: Node) -> str | None:
    if node.type == "string":
        return string_value(node)
    if node.type == "number":
        return None
    return text_of(node)


def _definition_name(name_node: Node, def_node: Node) -> tuple[str | None, str | None]:
    """``(name, owner)`` for a captured definition; owner is set for ``X.prototype.y = fn``."""
    if name_node.type != "member_expression":
        return _key_text(name_node), None
    left = simple_name(name_node)
    if left in _CJS_ROOTS:  # module.exports = function named() {} → "named"
        right = def_node.child_by_field_name("right")
        inner = right.child_by_field_name("name") if right is not None else None
        return (text_of(inner) if inner is not None else None), None
    prop = name_node.child_by_field_name("property")
    owner = simple_name(name_node.child_by_field_name("object"))
    if owner and owner.endswith(".prototype"):
        owner = owner[: -len(".prototype")]
    return (text_of(prop) if prop is not None else None), owner


def _member_owner(def_node: Node) -> str | None:
    """Owner of a class member or object-literal member, if nameable."""
    parent = def_node.parent
    if parent is None:
        return None
    if parent.type in _CLASS_MEMBER_PARENTS and parent.parent is not None and parent.parent.type in _CLASS_TYPES:
        return owner_name(parent.parent)
    if parent.type in _OBJECT_MEMBER_PARENTS:
        return owner_name(parent)
    return None


def _callee_name(fn: Node) -> str | None:
    kind = fn.type
    if kind in ("identifier", "super", "this"):
        return text_of(fn)
    if kind == "member_expression":
        name = simple_name(fn)
        if name is not None and len(name) <= _MAX_CALLEE_CHARS:
            return name
        prop = fn.child_by_field_name("property")
        return text_of(prop) if prop is not None else None
    return None


def _inherit_call(callee: str) -> bool:
    """Whether a call makes a constructor function extend another: ``Object.setPrototypeOf``, or any ``inherits``
    (the ``inherits`` package, Node's ``util.inherits``, axios's ``utils.inherits``, Closure's ``goog.inherits``)."""
    return callee == "Object.setPrototypeOf" or callee.rsplit(".", 1)[-1] == "inherits"


def _innermost(spans: list[tuple[int, int, int]], offset: int, *, skip: int | None = None) -> int | None:
    """The index of the smallest definition span ``(start_byte, end_byte, index)`` holding ``offset`` (not
    ``skip``), else ``None`` (the file's top level, or an anonymous wrapper's)."""
    best: tuple[int, int] | None = None
    for start, end, index in spans:
        if index != skip and start <= offset < end and (best is None or end - start < best[0]):
            best = (end - start, index)
    return None if best is None else best[1]


def _prototype_owner(node: Node) -> str | None:
    """``Base`` of ``Base.prototype`` (``ns.Base`` of ``ns.Base.prototype``), else ``None``."""
    name = simple_name(node) if node.type == "member_expression" else None
    if name is None or not name.endswith(".prototype"):
        return None
    return name[: -len(".prototype")] or None


def _compact(node: Node, limit: int) -> str:
    """The node's text with whitespace runs collapsed, cut to ``limit`` characters (``…``)."""
    text = " ".join(text_of(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _member_flags(def_node: Node) -> tuple[bool, str | None]:
    """``(static, accessor)`` of a method / field: the keyword tokens before its name."""
    name = def_node.child_by_field_name("name") or def_node.child_by_field_name("property")
    if name is None:
        return False, None
    static, accessor = False, None
    for child in def_node.children:
        if child.start_byte >= name.start_byte:
            break
        kind = child.type
        if kind in _MEMBER_MODIFIERS:
            if kind == "static":
                static = True
            else:
                accessor = kind
    return static, accessor


def _class_bases(def_node: Node) -> list[str]:
    """The ``extends`` base of a class declaration / expression (or of the class a
    declarator binds), or a TypeScript interface's extended types."""
    node = def_node
    if node.type == "variable_declarator":
        node = node.child_by_field_name("value")
        if node is None:
            return []
    for child in node.named_children:
        kind = child.type
        if kind == "class_heritage":
            for clause in child.named_children:
                if clause.type == "implements_clause":
                    continue
                base = clause.child_by_field_name("value") if clause.type == "extends_clause" else clause
                if base is not None and base.type != "comment":
                    return [simple_name(base) or _compact(base, _MAX_BASE_CHARS)]
            return []
        if kind == "extends_type_clause":
            return [_compact(t, _MAX_BASE_CHARS) for t in child.named_children if t.type != "comment"]
        if kind == "class_body" or kind == "interface_body":
            return []
    return []


def _literal_text(node: Node | None) -> str | None:
    """Source text of a literal (number, string, plain template, true/false/null/undefined, -1)."""
    if node is None:
        return None
    kind = node.type
    if kind == "template_string":
        if any(c.type == "template_substitution" for c in node.named_children):
            return None
    elif kind == "unary_expression":
        argument = node.child_by_field_name("argument")
        if argument is None or argument.type != "number" or text_of(node)[:1] not in "-+":
            return None
    elif kind not in _LITERAL_TYPES:
        return None
    text = text_of(node)
    return text if len(text) <= _MAX_DEFAULT_CHARS else None


_ENV_WRAPPERS = frozenset({"parenthesized_expression", "as_expression", "satisfies_expression", "non_null_expression"})
"""Nodes around ``process.env`` that leave it the same value: parentheses and TypeScript casts."""
_WHOLE_ENV_PARENTS = frozenset({"spread_element", "arguments", "pair", "return_statement", "array",
                                "ternary_expression", "assignment_pattern", "arrow_function", "export_statement",
                                "for_in_statement"})
"""Where ``process.env`` itself is the value (not one variable of it): spread into an object, passed to a
call, a property's value, returned (also by an arrow function), an array element, a branch of ``?:``, a
default parameter, exported, iterated by ``for … in``."""


def _whole_environment(node: Node) -> EnvVar:
    """A read of the whole environment (``process.env`` as a value): a dynamic read of every variable."""
    return EnvVar(name="*", line=line_of(node), dynamic=True, expression=_compact(node, _MAX_EXPRESSION_CHARS))


def _fallback_default(read: Node) -> str | None:
    """The literal at the end of the ``||``/``??`` chain ``read`` is an operand of
    (also when ``read`` is first converted: ``Number(process.env.PORT) || 3000``)."""
    current, parent = read, read.parent
    while parent is not None:
        if parent.type in _TRANSPARENT_TYPES:
            current, parent = parent, parent.parent
        elif (parent.type == "arguments" and parent.named_child_count and parent.named_children[0] == current
              and parent.parent is not None and parent.parent.type == "call_expression"
              and text_of(parent.parent.child_by_field_name("function") or parent) in _CONVERTERS):
            current = parent.parent
            parent = current.parent
        else:
            break
    top = None
    while parent is not None and parent.type == "binary_expression":
        operator = parent.child_by_field_name("operator")
        if operator is None or operator.type not in _FALLBACK_OPERATORS:
            break
        top = parent
        current, parent = parent, parent.parent
        while parent is not None and parent.type == "parenthesized_expression":
            current, parent = parent, parent.parent
    if top is None:
        return None
    right = top.child_by_field_name("right")
    while right is not None and right.type == "parenthesized_expression" and right.named_child_count == 1:
        right = right.named_children[0]
    return None if right is None or right == read else _literal_text(right)


class _Collector:
    """Mutable state of one extraction (built per tree, never shared)."""

    def __init__(self, path: str, language: str) -> None:
        self.out = FileStructure(path=path, language=language)
        # (start_byte, end_byte, definition index) for the enclosing sweep.
        self.def_spans: list[tuple[int, int, int]] = []
        self.owned: set[int] = set()
        # (start_byte, callee, line) for calls awaiting their enclosing name.
        self.call_sites: list[tuple[int, str, int]] = []
        # Inline plugins registered with a prefix: (first_line, last_line, param, prefix).
        self.inline_mounts: list[tuple[int, int, str, str]] = []
        # Routers declared with a base path (`const app = new Hono().basePath('/api')`): (router, prefix).
        self.base_paths: list[tuple[str, str]] = []
        # Lines of ESM statements / CommonJS constructs (→ FileStructure.module_system).
        self.esm_lines: list[int] = []
        self.cjs_lines: list[int] = []
        # Top-level `const NAME = "literal"` (name → value; None when bound twice or not a string).
        self.constants: dict[str, str | None] = {}
        # (index into out.env_vars, key name) of `process.env[NAME]` reads awaiting the constants.
        self.named_keys: list[tuple[int, str]] = []
        # (constructor, base, byte offset) of pre-class inheritance (`Child.prototype = new Base()`,
        # `util.inherits(Child, Base)`).
        self.inherits: list[tuple[str, str, int]] = []

    # -- definitions ---------------------------------------------------------
    def definition(self, kind: str, name_node: Node, def_node: Node) -> None:
        name, owner = _definition_name(name_node, def_node)
        if not name:
            return
        if owner is None:
            owner = _member_owner(def_node)
        record = Definition(name=name, kind=kind, start=line_of(def_node), end=end_line_of(def_node), parent=owner)
        if kind == "method" or kind == "field":
            record.static, record.accessor = _member_flags(def_node)
            if kind == "field":
                value = def_node.child_by_field_name("value")
                if value is not None and value.type in _FUNCTION_VALUE_TYPES:
                    record.kind = "method"
        elif kind == "class" or kind == "interface":
            record.bases = _class_bases(def_node)
        index = len(self.out.definitions)
        self.out.definitions.append(record)
        if owner is not None:
            self.owned.add(index)
        self.def_spans.append((def_node.start_byte, def_node.end_byte, index))

    # -- calls ---------------------------------------------------------------
    def call(self, call: Node, fn: Node) -> None:
        if fn.type == "import":
            self._import_call(call, "dynamic")
            return
        callee = _callee_name(fn)
        if callee is None:
            return
        self.call_sites.append((call.start_byte, callee, line_of(call)))
        if call.type != "call_expression":
            return
        if _inherit_call(callee):
            self._inherits_from_call(call, callee)
        if callee == "require":
            if self._import_call(call, "require"):
                self.cjs_lines.append(line_of(call))
            return
        if fn.type == "member_expression":
            ref = path_ref_from_call(call, callee)
            if ref is not None:
                self.out.path_refs.append(ref)
                return
            self.out.routes.extend(routes_from_call(call, fn))
            mount = inline_mount(call, fn)
            if mount is not None:
                self.inline_mounts.append(mount)
            based = base_path(call, fn)
            if based is not None:
                self.base_paths.append(based)

    def _import_call(self, call: Node, kind: str) -> bool:
        """Record ``require(…)`` / ``import(…)``; ``False`` when it has no argument."""
        args = argument_nodes(call)
        if not args:
            return False
        spec = string_value(args[0])
        line = line_of(call)
        if spec is not None and "${" not in spec:
            self.out.imports.append(Import(spec=spec, line=line, kind=kind, names=bound_names(call)))
        else:  # computed specifier: require(process.env.X), import(name), `./${x}`
            expression = _compact(args[0], _MAX_EXPRESSION_CHARS)
            self.out.imports.append(Import(spec=expression, line=line, kind="dynamic", names=bound_names(call),
                                           expression=expression))
        return True

    # -- imports / exports ---------------------------------------------------
    def import_statement(self, node: Node) -> None:
        source = node.child_by_field_name("source")
        line = line_of(node)
        for child in node.named_children:
            if child.type == "import_require_clause":
                self.cjs_lines.append(line)
                break
        else:
            self.esm_lines.append(line)
        clause = None
        for child in node.named_children:
            if child.type == "import_clause":
                clause = child
            elif child.type == "import_require_clause":  # TS: import x = require('y')
                source = child.child_by_field_name("source")
                names = [text_of(c) for c in child.named_children if c.type == "identifier"]
                spec = string_value(source)
                if spec is not None:
                    self.out.imports.append(Import(spec=spec, line=line, kind="require", names=names))
                return
        spec = string_value(source)
        if spec is None:
            return
        if clause is None:
            self.out.imports.append(Import(spec=spec, line=line, kind="side_effect"))
            return
        names: list[str] = []
        for child in clause.named_children:
            if child.type == "identifier":
                names.append(text_of(child))
            elif child.type == "namespace_import":
                names.extend(text_of(c) for c in child.named_children if c.type == "identifier")
            elif child.type == "named_imports":
                for spec_node in child.named_children:
                    if spec_node.type == "import_specifier":
                        alias = spec_node.child_by_field_name("alias") or spec_node.child_by_field_name("name")
                        if alias is not None:
                            names.append(_key_text(alias) or "")
        self.out.imports.append(Import(spec=spec, line=line, kind="esm", names=[n for n in names if n]))

    def export_statement(self, node: Node) -> None:
        self.esm_lines.append(line_of(node))
        exports = self.out.exports
        source = node.child_by_field_name("source")
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        if source is not None:
            spec = string_value(source)
            if spec is None:
                return
            namespace = next((c for c in node.named_children if c.type == "namespace_export"), None)
            imported: list[str] = []
            if clause is not None:
                for spec_node in _export_specifiers(clause):
                    name, alias = spec_node
                    imported.append(name)
                    exports.append(Export(name=alias or name, line=line_of(node), kind="reexport"))
            else:
                imported.append("*")
                alias = None
                if namespace is not None:
                    alias = next((text_of(c) for c in namespace.named_children), None)
                exports.append(Export(name=alias or "*", line=line_of(node), kind="reexport"))
            self.out.imports.append(Import(spec=spec, line=line_of(node), kind="reexport", names=imported))
            return
        is_default = any(child.type == "default" for child in node.children)
        kind = "default" if is_default else "named"
        declaration = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        if declaration is not None:
            for name_node in _declared_name_nodes(declaration):
                exports.append(Export(name=text_of(name_node), line=line_of(name_node), kind=kind))
        elif value is not None:
            name = None
            if value.type == "identifier":
                name = text_of(value)
            elif value.child_by_field_name("name") is not None and value.type != "call_expression":
                name = text_of(value.child_by_field_name("name"))
            exports.append(Export(name=name or "default", line=line_of(node), kind="default"))
        elif clause is not None:
            for name, alias in _export_specifiers(clause):
                exports.append(
                    Export(name=name if alias == "default" else (alias or name), line=line_of(node),
                           kind="default" if alias == "default" else "named")
                )

    def cjs_export(self, node: Node) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        target = simple_name(left)
        if target is None or right is None:
            return
        self.cjs_lines.append(line_of(node))
        exports = self.out.exports
        if target != "module.exports":  # module.exports.x = … / exports.x = …
            prop = left.child_by_field_name("property") if left is not None else None
            if prop is not None:
                exports.append(Export(name=text_of(prop), line=line_of(prop), kind="cjs_named"))
            return
        if right.type == "object":
            for member in right.named_children:
                key = None
                if member.type == "pair":
                    key = member.child_by_field_name("key")
                elif member.type == "method_definition":
                    key = member.child_by_field_name("name")
                elif member.type == "shorthand_property_identifier":
                    key = member
                name = _key_text(key) if key is not None else None
                if name:
                    exports.append(Export(name=name, line=line_of(key), kind="cjs_named"))
            return
        name = None
        if right.type == "identifier":
            name = text_of(right)
        elif right.type in ("class", "function_expression", "generator_function", "arrow_function"):
            inner = right.child_by_field_name("name")
            name = text_of(inner) if inner is not None else None
        exports.append(Export(name=name or "default", line=line_of(node), kind="cjs_default"))

    # -- process.env -----------------------------------------------------------
    def env(self, node: Node) -> None:
        read = node  # seen through casts and parentheses: `(process.env as any).X` reads X
        parent = node.parent
        while parent is not None and parent.type in _ENV_WRAPPERS:
            read, parent = parent, parent.parent
        if parent is None:
            return
        env_vars = self.out.env_vars
        if parent.type == "member_expression" and parent.child_by_field_name("object") == read:
            prop = parent.child_by_field_name("property")
            if text_of(node).startswith("Deno"):  # `Deno.env` is read through methods
                self._deno_env(node, parent, prop)
            elif prop is not None:
                env_vars.append(EnvVar(name=text_of(prop), line=line_of(prop), default=_fallback_default(parent)))
        elif parent.type == "subscript_expression" and parent.child_by_field_name("object") == read:
            index = parent.child_by_field_name("index")
            if index is None:
                return
            name = string_value(index)
            if name and "${" not in name:
                env_vars.append(EnvVar(name=name, line=line_of(index), default=_fallback_default(parent)))
            else:  # process.env[k], process.env[`${p}_URL`]
                if index.type == "identifier" and not _is_parameter(index):
                    self.named_keys.append((len(env_vars), text_of(index)))
                env_vars.append(EnvVar(name="*", line=line_of(index), default=_fallback_default(parent),
                                       dynamic=True, expression=_compact(index, _MAX_EXPRESSION_CHARS)))
        elif parent.type in ("variable_declarator", "assignment_expression"):
            pattern = parent.child_by_field_name("name") or parent.child_by_field_name("left")
            if pattern is not None and pattern.type == "object_pattern":
                for child in pattern.named_children:
                    if child.type == "rest_pattern":  # `const { A, ...rest } = process.env`: the rest too
                        env_vars.append(_whole_environment(node))
                        continue
                    name = _destructured_key(child)
                    if name:
                        env_vars.append(EnvVar(name=name, line=line_of(child), default=_destructured_default(child)))
            elif pattern is not None and pattern != read:  # `const env = process.env`: the whole environment
                env_vars.append(_whole_environment(node))
        elif parent.type == "binary_expression":  # `opts.env || process.env`
            operator = parent.child_by_field_name("operator")
            if operator is not None and operator.type in ("||", "??"):  # not `process.env && …`, a check
                env_vars.append(_whole_environment(node))
        elif parent.type in _WHOLE_ENV_PARENTS:  # `{ ...process.env }`, `Object.keys(process.env)`, `env: process.env`
            env_vars.append(_whole_environment(node))

    def _deno_env(self, node: Node, member: Node, prop: Node | None) -> None:
        """``Deno.env.get('X')`` / ``.has('X')`` read ``X`` (``get(k)``: a dynamic read);
        ``Deno.env.toObject()`` reads the whole environment; ``set``/``delete`` are not reads."""
        call = member.parent
        if prop is None or call is None or call.type != "call_expression" or call.child_by_field_name(
                "function") != member:
            return
        method = text_of(prop)
        if method == "toObject":
            self.out.env_vars.append(_whole_environment(node))
            return
        args = argument_nodes(call)
        if method not in ("get", "has") or not args:
            return
        name = string_value(args[0])
        if name and "${" not in name:
            self.out.env_vars.append(EnvVar(name=name, line=line_of(args[0]), default=_fallback_default(call)))
            return
        if args[0].type == "identifier" and not _is_parameter(args[0]):
            self.named_keys.append((len(self.out.env_vars), text_of(args[0])))
        self.out.env_vars.append(EnvVar(name="*", line=line_of(args[0]), default=_fallback_default(call),
                                        dynamic=True, expression=_compact(args[0], _MAX_EXPRESSION_CHARS)))

    # -- pre-class inheritance -------------------------------------------------
    def prototype(self, assignment: Node) -> None:
        """``Child.prototype = new Base()`` or ``= Object.create(Base.prototype)``: ``Child`` extends ``Base``."""
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        child = left.child_by_field_name("object") if left is not None else None
        if child is None or right is None:
            return
        base = None
        if right.type == "new_expression":
            base = simple_name(right.child_by_field_name("constructor"))
        elif simple_name(right.child_by_field_name("function")) == "Object.create":
            args = argument_nodes(right)
            base = _prototype_owner(args[0]) if args else None
        if base:
            self.inherits.append((text_of(child), base, assignment.start_byte))

    def _inherits_from_call(self, call: Node, callee: str) -> None:
        """``util.inherits(Child, Base)``, ``inherits(Child, Base)`` or
        ``Object.setPrototypeOf(Child.prototype, Base.prototype)``."""
        args = argument_nodes(call)
        if len(args) < 2:
            return
        if callee == "Object.setPrototypeOf":
            child, base = _prototype_owner(args[0]), _prototype_owner(args[1])
        else:
            child = text_of(args[0]) if args[0].type == "identifier" else None
            base = simple_name(args[1])
        if child and base:
            self.inherits.append((child, base, call.start_byte))

    # -- sweep -------------------------------------------------------------------
    def constant(self, declaration: Node) -> None:
        """Record the ``NAME = "literal"`` bindings of a top-level ``const``/``let``/``var``."""
        for declarator in declaration.named_children:
            if declarator.type != "variable_declarator":
                continue
            name = declarator.child_by_field_name("name")
            if name is None or name.type != "identifier":
                continue
            value = declarator.child_by_field_name("value")
            literal = value is not None and value.type == "string" and string_value(value) or None
            key = text_of(name)
            self.constants[key] = literal if key not in self.constants else None

    def finish(self) -> Extraction:
        """Name the ``process.env[NAME]`` reads whose ``NAME`` is a top-level string constant, and fill
        ``Definition.parent`` and ``Call.enclosing`` with one sweep; give a constructor function the bases its
        prototype was given in its own scope (:meth:`prototype`); give the routes of a router declared with a
        ``basePath`` their prefix."""
        out = self.out
        for position, key in self.named_keys:
            value = self.constants.get(key)
            if value:
                read = out.env_vars[position]
                out.env_vars[position] = EnvVar(name=value, line=read.line, default=read.default)
        out.calls.extend(nest_definitions(out.definitions, self.def_spans, owned=self.owned,
                                          call_sites=self.call_sites))
        if self.inherits:  # the constructor function (or class) of that name in the same scope
            spans = {index: (start, end) for start, end, index in self.def_spans}
            for child, base, offset in self.inherits:
                scope = _innermost(self.def_spans, offset)
                for index, record in enumerate(out.definitions):
                    if record.name == child and record.kind in ("function", "class") and base not in record.bases \
                            and index in spans and _innermost(self.def_spans, spans[index][0], skip=index) == scope:
                        record.bases.append(base)
        apply_inline_mounts(out.routes, self.inline_mounts)
        for router, prefix in self.base_paths:
            for route in out.routes:
                if route.source == "call" and route.router == router:
                    route.prefix = prefix if not route.prefix else prefix.rstrip("/") + route.prefix
        return Extraction(out, esm_lines=self.esm_lines, cjs_lines=self.cjs_lines)


_FUNCTION_TYPES = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                             "method_definition", "generator_function", "generator_function_declaration"})


def _is_parameter(identifier: Node) -> bool:
    """Whether ``identifier``'s name is a parameter of a function enclosing it (it shadows a
    top-level constant of the same name)."""
    name = text_of(identifier)
    parent = identifier.parent
    while parent is not None:
        if parent.type in _FUNCTION_TYPES:
            parameters = parent.child_by_field_name("parameters") or parent.child_by_field_name("parameter")
            if parameters is not None and (parameters.type == "identifier" and text_of(parameters) == name or any(
                    text_of(p) == name for p in _parameter_names(parameters))):
                return True
        parent = parent.parent
    return False


def _parameter_names(parameters: Node) -> list[Node]:
    """The plain identifier parameters (also ``x = 1`` and TypeScript's ``x: T``) of a parameter list."""
    found = []
    for child in parameters.named_children:
        if child.type == "identifier":
            found.append(child)
        elif child.type in ("assignment_pattern", "required_parameter", "optional_parameter"):
            inner = child.child_by_field_name("left") or child.child_by_field_name("pattern")
            if inner is not None and inner.type == "identifier":
                found.append(inner)
    return found


def _destructured_default(member: Node) -> str | None:
    """The literal default of one object-pattern member (``3000`` in ``{ PORT = 3000 }``)."""
    if member.type == "object_assignment_pattern":
        return _literal_text(member.child_by_field_name("right"))
    if member.type == "pair_pattern":
        value = member.child_by_field_name("value")
        if value is not None and value.type == "assignment_pattern":
            return _literal_text(value.child_by_field_name("right"))
    return None


def _destructured_key(member: Node) -> str | None:
    """Property name read by one member of an object pattern (``B`` in ``{ B: b }``)."""
    if member.type == "shorthand_property_identifier_pattern":
        return text_of(member)
    if member.type == "object_assignment_pattern":
        left = member.child_by_field_name("left")
        return text_of(left) if left is not None else None
    if member.type == "pair_pattern":
        key = member.child_by_field_name("key")
        return _key_text(key) if key is not None else None
    return None


def _export_specifiers(clause: Node) -> Iterable[tuple[str, str | None]]:
    for spec in clause.named_children:
        if spec.type != "export_specifier":
            continue
        name_node = spec.child_by_field_name("name")
        alias_node = spec.child_by_field_name("alias")
        name = _key_text(name_node) if name_node is not None else None
        alias = _key_text(alias_node) if alias_node is not None else None
        if alias is None and " as " in text_of(spec):
            alias = text_of(spec).rsplit(" as ", 1)[1].strip()
        if name:
            yield name, alias


def _declared_name_nodes(declaration: Node) -> list[Node]:
    if declaration.type in _DECLARATION_NAME_TYPES:
        name = declaration.child_by_field_name("name")
        return [name] if name is not None else []
    nodes: list[Node] = []
    if declaration.type in ("lexical_declaration", "variable_declaration"):
        for declarator in declaration.named_children:
            if declarator.type != "variable_declarator":
                continue
            name = declarator.child_by_field_name("name")
            if name is None:
                continue
            if name.type == "identifier":
                nodes.append(name)
            else:
                nodes.extend(_pattern_identifier_nodes(name))
    return nodes


def _pattern_identifier_nodes(pattern: Node) -> list[Node]:
    found: list[Node] = []
    stack = [pattern]
    while stack:
        node = stack.pop()
        if node.type in ("identifier", "shorthand_property_identifier_pattern"):
            found.append(node)
        elif node.type == "pair_pattern":
            value = node.child_by_field_name("value")
            if value is not None:
                stack.append(value)
        else:
            stack.extend(reversed(node.named_children))
    return found


def extract(matches: Iterable[tuple[int, dict[str, list[Node]]]], *, path: str, language: str) -> Extraction:
    """Records from the ``QueryCursor.matches()`` output of the combined query over the file
    ``path`` (repository-relative) in ``language`` (``javascript``, ``typescript``, ``tsx``)."""
    collector = _Collector(path, language)
    for _pattern, captures in matches:
        for key, nodes in captures.items():
            if key[0] == "_" or key.startswith("name."):
                continue
            node = nodes[0]
            if key.startswith("definition."):
                name_nodes = captures.get("name." + key)
                if name_nodes:
                    collector.definition(key[len("definition."):], name_nodes[0], node)
            elif key == "reference.call":
                fn_nodes = captures.get("name.reference.call")
                if fn_nodes:
                    collector.call(node, fn_nodes[0])
            elif key == "reference.import":
                collector.import_statement(node)
            elif key == "reference.export":
                collector.export_statement(node)
            elif key == "reference.cjs_export":
                collector.cjs_export(node)
            elif key == "reference.env":
                collector.env(node)
            elif key == "reference.constant":
                collector.constant(node)
            elif key == "reference.prototype":
                collector.prototype(node)
            elif key == "reference.pathname":
                collector.out.routes.extend(routes_from_pathname_compare(node))
            elif key == "reference.pathname_switch":
                collector.out.routes.extend(routes_from_pathname_switch(node))
    return collector.finish()
