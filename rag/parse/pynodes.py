"""Small helpers over tree-sitter-python nodes shared by the Python extraction modules.

All functions are pure and cheap (field look-ups and byte slices).
"""
from __future__ import annotations

import re

from tree_sitter import Node

from rag.parse.nodes import text_of

__all__ = [
    "string_value",
    "literal_text",
    "dotted_name",
    "call_arguments",
    "keyword_argument",
    "strings_of",
    "compact",
]

# A dotted name of identifiers: `os.environ`, `self.app`, `app`.
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_MAX_DOTTED_CHARS = 120
# Literal node types whose source text is kept as a default value.
_LITERAL_TYPES = frozenset({"integer", "float", "true", "false", "none"})
# Literal texts longer than this are not kept (same cap as the JavaScript defaults).
_MAX_LITERAL_CHARS = 200


def string_value(node: Node | None) -> str | None:
    """The value of a string literal without substitutions, as written between its quotes.

    ``"a"``, ``'a'``, ``r"^a$"``, ``b"a"``, ``\"\"\"a\"\"\"`` and an f-string without
    ``{…}`` give their content (escape sequences kept as written: raw regexes stay
    readable); implicit concatenation (``"a" "b"``) is joined. An f-string with a
    substitution, or any other node, gives ``None``.
    """
    if node is None:
        return None
    if node.type == "concatenated_string":
        parts = [string_value(child) for child in node.named_children]
        return None if any(part is None for part in parts) else "".join(parts)  # type: ignore[arg-type]
    if node.type != "string":
        return None
    start = end = None
    for child in node.children:
        kind = child.type
        if kind == "interpolation":
            return None
        if kind == "string_start":
            start = child
        elif kind == "string_end":
            end = child
    if start is None or end is None:
        return None
    data = node.text or b""
    base = node.start_byte
    return data[start.end_byte - base:end.start_byte - base].decode("utf-8", "replace")


def literal_text(node: Node | None) -> str | None:
    """Source text of a literal (string without substitutions, number, ``True``/``False``/``None``,
    ``-1``), at most 200 characters; else ``None``."""
    if node is None:
        return None
    kind = node.type
    if kind in ("string", "concatenated_string"):
        if string_value(node) is None:
            return None
    elif kind == "unary_operator":
        argument = node.child_by_field_name("argument")
        if argument is None or argument.type not in ("integer", "float"):
            return None
    elif kind not in _LITERAL_TYPES:
        return None
    text = text_of(node)
    return text if len(text) <= _MAX_LITERAL_CHARS else None


def dotted_name(node: Node | None) -> str | None:
    """Text of an identifier or an attribute chain of identifiers (``os.environ``), else ``None``."""
    if node is None:
        return None
    if node.type == "identifier":
        return text_of(node)
    if node.type == "attribute":
        text = text_of(node)
        if len(text) <= _MAX_DOTTED_CHARS:
            text = "".join(text.split())
            if _DOTTED.match(text):
                return text
    return None


def call_arguments(call: Node) -> tuple[list[Node], dict[str, Node]]:
    """``(positional argument nodes, {keyword: value node})`` of a ``call`` (comments and
    ``*args``/``**kwargs`` splats dropped)."""
    args = call.child_by_field_name("arguments")
    positional: list[Node] = []
    keywords: dict[str, Node] = {}
    if args is None or args.type != "argument_list":
        return positional, keywords
    for child in args.named_children:
        kind = child.type
        if kind == "keyword_argument":
            name = child.child_by_field_name("name")
            value = child.child_by_field_name("value")
            if name is not None and value is not None:
                keywords[text_of(name)] = value
        elif kind not in ("comment", "list_splat", "dictionary_splat"):
            positional.append(child)
    return positional, keywords


def keyword_argument(call: Node, name: str) -> Node | None:
    """The value node of keyword argument ``name`` of a ``call``, or ``None``."""
    return call_arguments(call)[1].get(name)


def strings_of(node: Node | None) -> list[str] | None:
    """The string values of a list/tuple/set literal of strings (``["GET", "POST"]``), or of a
    single string (``"GET"`` → ``["GET"]``); ``None`` when it is neither."""
    if node is None:
        return None
    single = string_value(node)
    if single is not None:
        return [single]
    if node.type not in ("list", "tuple", "set"):
        return None
    values = [string_value(child) for child in node.named_children if child.type != "comment"]
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def compact(node: Node, limit: int) -> str:
    """The node's text with whitespace runs collapsed, cut to ``limit`` characters (``…``)."""
    text = " ".join(text_of(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
