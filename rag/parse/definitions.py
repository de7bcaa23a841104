"""Definitions-only structure for the languages without a full extractor (Go, Java, Rust, Ruby).

Their queries (``queries/go.scm`` …) capture only definitions, with aider's names:
``@name.definition.<kind>`` (the name) and ``@definition.<kind>`` (the whole node, whose
lines are the definition's range), plus ``@owner.definition.<kind>`` where the parent
is not the enclosing node (a Go method's receiver type, the type of a Rust ``impl``).
Other parents come from nesting (a Java method's class, a Ruby method's module), by
the same sweep as for JavaScript (:func:`rag.parse.scopes.nest_definitions`).

Kinds: ``function``, ``method``, ``class``, ``interface``, ``enum``, ``type``,
``struct``, ``trait``, ``module``, ``macro``; ``static_method`` in a query gives a
``method`` with ``static=True`` (Ruby's ``def self.x``). A ``method`` with no parent
(Ruby's top-level ``def``) is a ``function``. When two patterns capture one node, the
one naming an owner wins, then the more specific kind (``struct`` over ``type``,
``method`` over ``function``).

The records are the same :class:`~rag.parse.records.FileStructure` as for any other
language, with empty import/call/env/route lists.
"""
from __future__ import annotations

from tree_sitter import Node

from rag.parse.nodes import end_line_of, line_of, text_of
from rag.parse.records import Definition, FileStructure
from rag.parse.scopes import nest_definitions

__all__ = ["extract_definitions"]

_GENERIC_KINDS = frozenset({"type", "function"})


def _rank(kind: str, owner: Node | None) -> int:
    return 2 if owner is not None else (0 if kind in _GENERIC_KINDS else 1)


def extract_definitions(matches, *, path: str, language: str, has_error: bool) -> FileStructure:
    """The definitions of one file from the ``QueryCursor.matches()`` output of its language's query.

    Args:
        matches: the matches (see :func:`rag.parse.grammars.run_matches`).
        path: repository-relative path.
        language: the language name stored in the structure (``go``).
        has_error: the tree had syntax errors (what parsed is kept).
    """
    best: dict[tuple[int, int], tuple[int, str, Node, Node, Node | None]] = {}
    for _pattern, captures in matches:
        for key, nodes in captures.items():
            if not key.startswith("definition."):
                continue
            kind = key[len("definition."):]
            names = captures.get("name." + key)
            if not names:
                continue
            owners = captures.get("owner." + key)
            owner = owners[0] if owners else None
            node = nodes[0]
            rank = _rank(kind, owner)
            span = (node.start_byte, node.end_byte)
            if span not in best or rank > best[span][0]:
                best[span] = (rank, kind, names[0], node, owner)
    out = FileStructure(path=path, language=language, has_error=has_error)
    spans: list[tuple[int, int, int]] = []
    owned: set[int] = set()
    for span in sorted(best):
        _rank_value, kind, name_node, node, owner = best[span]
        static = kind == "static_method"
        record = Definition(name=" ".join(text_of(name_node).split()), kind="method" if static else kind,
                            start=line_of(node), end=end_line_of(node), static=static)
        if owner is not None:
            record.parent = text_of(owner)
            owned.add(len(out.definitions))
        spans.append((node.start_byte, node.end_byte, len(out.definitions)))
        out.definitions.append(record)
    nest_definitions(out.definitions, spans, owned=owned)
    for record in out.definitions:
        if record.kind == "method" and record.parent is None:
            record.kind = "function"
    return out
