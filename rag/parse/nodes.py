"""Small helpers over tree-sitter nodes shared by the extraction modules.

All functions are pure and cheap (field look-ups and byte slices); none walks
a whole subtree except :func:`find_method_check`, which is bounded.
"""
from __future__ import annotations

import re

from tree_sitter import Node

__all__ = [
    "FUNCTION_NODE_TYPES",
    "text_of",
    "line_of",
    "end_line_of",
    "string_value",
    "simple_name",
    "argument_nodes",
    "bound_names",
    "pattern_names",
    "owner_name",
    "find_method_check",
]

# Node types that open a new function scope (route method inference stops there).
FUNCTION_NODE_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "generator_function",
        "arrow_function",
        "method_definition",
        "program",
    }
)

# A dotted name: identifiers, this, private names and optional-chaining dots.
_SIMPLE_DOTTED = re.compile(r"^[A-Za-z_$#][\w$#]*(?:\??\.[A-Za-z_$#][\w$#]*)*$")
# Nodes whose children may hold a `.method === 'X'` check (bounded search).
_METHOD_SEARCH_LIMIT = 200
_EQUALITY_OPERATORS = frozenset({"===", "=="})


def text_of(node: Node) -> str:
    """The node's source text, decoded as UTF-8 (bad bytes replaced)."""
    data = node.text
    return data.decode("utf-8", "replace") if data is not None else ""


def line_of(node: Node) -> int:
    """1-based line of the node's first byte."""
    return node.start_point[0] + 1


def end_line_of(node: Node) -> int:
    """1-based line of the node's last byte (the end point is exclusive)."""
    row, column = node.end_point
    if column == 0 and row > node.start_point[0]:
        return row
    return row + 1


def string_value(node: Node | None) -> str | None:
    """Value of a string literal or a *simple* template literal, else ``None``.

    Simple template literals have only identifier / member substitutions and
    keep them verbatim (`` `/api/${version}/users` `` → ``/api/${version}/users``).
    """
    if node is None:
        return None
    if node.type == "string":
        raw = text_of(node)[1:-1]
        return raw.replace("\\'", "'").replace('\\"', '"') if "\\" in raw else raw
    if node.type == "template_string":
        for child in node.named_children:
            if child.type == "template_substitution":
                inner = child.named_children
                if len(inner) != 1 or inner[0].type not in ("identifier", "member_expression"):
                    return None
        return text_of(node)[1:-1]
    return None


def simple_name(node: Node | None) -> str | None:
    """Dotted text of an identifier / ``this`` / member chain (``this.app``), else ``None``."""
    if node is None:
        return None
    if node.type in ("identifier", "property_identifier", "private_property_identifier", "this", "type_identifier"):
        return text_of(node)
    if node.type == "member_expression":
        text = "".join(text_of(node).split())
        if len(text) <= 120 and _SIMPLE_DOTTED.match(text):
            return text.replace("?.", ".")
    return None


def argument_nodes(call: Node) -> list[Node]:
    """Argument expressions of a call / ``new`` (comments dropped; tagged templates → [])."""
    args = call.child_by_field_name("arguments")
    if args is None or args.type != "arguments":
        return []
    return [child for child in args.named_children if child.type != "comment"]


def pattern_names(pattern: Node) -> list[str]:
    """Local names bound by an identifier / object / array pattern
    (``{ a, b: c, d = 1 }`` → ``["a", "c", "d"]``), in source order, nested patterns included
    (``[[a], { b }]`` → ``["a", "b"]``).

    Walks the pattern with an explicit stack, so a pattern nested thousands of levels deep
    (generated code) cannot raise ``RecursionError``.
    """
    names: list[str] = []
    # Items still to visit, the next one last: a name already found, or a (sub)pattern.
    pending: list[str | Node] = [pattern]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            names.append(item)
            continue
        kind = item.type
        if kind == "identifier":
            names.append(text_of(item))
            continue
        inner: list[str | Node] = []
        if kind == "object_pattern":
            for child in item.named_children:
                if child.type == "shorthand_property_identifier_pattern":
                    inner.append(text_of(child))
                elif child.type == "object_assignment_pattern":
                    left = child.child_by_field_name("left")
                    if left is not None:
                        inner.append(text_of(left))
                elif child.type == "pair_pattern":
                    value = child.child_by_field_name("value")
                    if value is not None:
                        if value.type == "assignment_pattern":
                            value = value.child_by_field_name("left") or value
                        inner.append(value)
        elif kind == "array_pattern":
            inner.extend(item.named_children)
        pending.extend(reversed(inner))
    return names


def bound_names(node: Node) -> list[str]:
    """Local names an expression's value is bound to (``const { a } = require('x')`` → ``["a"]``).

    Climbs through ``await``, parentheses and one property access
    (``require('x').y``), then reads a variable declarator or an assignment.
    """
    current = node
    parent = node.parent
    while parent is not None and parent.type in ("await_expression", "parenthesized_expression", "member_expression"):
        if parent.type == "member_expression" and parent.child_by_field_name("object") != current:
            return []
        current, parent = parent, parent.parent
    if parent is None:
        return []
    if parent.type == "variable_declarator":
        name = parent.child_by_field_name("name")
        return pattern_names(name) if name is not None else []
    if parent.type == "assignment_expression" and parent.child_by_field_name("right") == current:
        left = simple_name(parent.child_by_field_name("left"))
        return [left] if left else []
    return []


def owner_name(container: Node) -> str | None:
    """Name of the thing an object literal or class expression is bound to.

    ``const handlers = {…}`` → ``handlers``; ``module.exports = {…}`` →
    ``module.exports``; ``{ routes: {…} }`` → ``routes``; a named class → its
    name; ``export default class {…}`` → ``default``.
    """
    if container.type in ("class", "class_declaration", "abstract_class_declaration"):
        name = container.child_by_field_name("name")
        if name is not None:
            return text_of(name)
    parent = container.parent
    if parent is None:
        return None
    if parent.type == "parenthesized_expression":
        parent = parent.parent
        if parent is None:
            return None
    if parent.type == "variable_declarator":
        name = parent.child_by_field_name("name")
        return text_of(name) if name is not None and name.type == "identifier" else None
    if parent.type == "assignment_expression":
        return simple_name(parent.child_by_field_name("left"))
    if parent.type == "pair":
        key = parent.child_by_field_name("key")
        if key is not None:
            return string_value(key) if key.type == "string" else text_of(key)
    if parent.type == "export_statement":
        return "default"
    return None


def _is_method_side(node: Node) -> bool:
    if node.type == "identifier":
        return text_of(node) == "method"
    if node.type == "member_expression":
        prop = node.child_by_field_name("property")
        return prop is not None and text_of(prop) == "method"
    return False


def find_method_check(root: Node) -> str | None:
    """First ``req.method === 'POST'`` (or ``method == 'POST'``) inside ``root``.

    Returns the upper-cased method or ``None``. Visits at most
    ``_METHOD_SEARCH_LIMIT`` nodes so a huge condition cannot cost much.
    """
    stack = [root]
    seen = 0
    while stack and seen < _METHOD_SEARCH_LIMIT:
        node = stack.pop()
        seen += 1
        if node.type == "binary_expression":
            operator = node.child_by_field_name("operator")
            if operator is not None and operator.type in _EQUALITY_OPERATORS:
                left = node.child_by_field_name("left")
                right = node.child_by_field_name("right")
                for side, other in ((left, right), (right, left)):
                    if side is not None and other is not None and _is_method_side(side):
                        value = string_value(other)
                        if value and value.isalpha():
                            return value.upper()
        if node.type in FUNCTION_NODE_TYPES and node is not root:
            continue
        stack.extend(reversed(node.named_children))
    return None
