"""The structure stream: files the code structure says a question is about, with a bonus each.

Three signals, from the parsed structure of the repository's JavaScript-family files:

- **dependants**: "which files import / would break without / depend on ``lib/x.js``?"
  (:data:`DEPENDANTS_INTENT` plus a named indexed file) → every file that imports the
  named files, transitively (:meth:`rag.context.codegraph.CodeGraph.dependants`), with a
  hard bonus of 10.5 − 0.01 × rank (≥ :data:`rag.search.lexical.HARD_BOOST`, so they stay
  first), non-test directories ranked before test/bench/example ones, then by path;
- **environment**: "which file reads the process environment?" (:data:`ENV_INTENT`) →
  files that read an environment variable, 0.3;
- **symbols**: code-style identifiers the question writes (``compileTrust``,
  ``FST_ERR_X``, ``handle_request``), matched case-sensitively in the
  :func:`symbol_table` → 0.5 × the table weight (definition 1.0, export 0.8, env var 0.6).

A file's bonus is the largest of its signals. The result feeds
:func:`rag.search.lexical.rank_chunks` (``symbol_files``) and the structure stream of
:func:`rag.search.lexical.fuse_streams`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from rag.context.codegraph import CodeGraph
from rag.parse.records import FileStructure
from rag.search.lexical import LOW_VALUE_DIRS, explicit_paths
from rag.search.query import Query

__all__ = ["DEPENDANTS_INTENT", "ENV_INTENT", "SymbolTable", "symbol_table", "structure_bonus"]

# "Which files import X / would break if X were removed / depend on X?"
DEPENDANTS_INTENT = re.compile(
    r"\b(import(s|ed|ing)?|requires?|depend(s|ing|ants|ents)?|break|fail to load|need to change|"
    r"were (deleted|removed)|(is|was|were|got) removed|uses? of|who uses)\b", re.I)
# "Which file reads the process environment / environment variables?"
ENV_INTENT = re.compile(r"\b(process environment|environment variables?|env(ironment)? vars?|process\.env)\b", re.I)

SymbolTable = dict[str, dict[str, float]]
"""Symbol name → {path → weight}: 1.0 where it is defined, else 0.8 exported, else 0.6 an env var read."""


def symbol_table(structures: Mapping[str, FileStructure]) -> SymbolTable:
    """The :data:`SymbolTable` of ``structures`` (path → structure), paths in the mapping's order.

    A definition sets the weight 1.0 (overriding an earlier export or env var of the same
    name in that file); exports (0.8) and env vars (0.6) only fill a missing entry.
    """
    table: SymbolTable = {}
    for path, structure in structures.items():
        for d in structure.definitions:
            table.setdefault(d.name, {})[path] = 1.0
        for e in structure.exports:
            table.setdefault(e.name, {}).setdefault(path, 0.8)
        for v in structure.env_vars:
            table.setdefault(v.name, {}).setdefault(path, 0.6)
    return table


def structure_bonus(
    query: Query,
    *,
    known_paths: list[str],
    structures: Callable[[], Mapping[str, FileStructure]],
    graph: Callable[[], CodeGraph],
    symbols: Callable[[], SymbolTable],
) -> dict[str, float] | None:
    """Path → bonus in (0, 10.5] for the files the structure ties to ``query`` (module docstring).

    Args:
        query: the analysed question.
        known_paths: every indexed path (to recognise the files the question names).
        structures, graph, symbols: the repository's parsed structures, code graph and
            symbol table, asked for only when a signal needs them (they are built lazily
            and cached per index generation by :class:`rag.search.retriever.Retriever`).

    Returns:
        The bonuses (insertion order: dependants, env readers, symbol files), or ``None``
        when no file qualifies.
    """
    out: dict[str, float] = {}
    if DEPENDANTS_INTENT.search(query.text) and (query.paths or query.modules):
        named = explicit_paths(query, known_paths)
        if named:
            code_graph = graph()
            deps = sorted({d for p in named for d in code_graph.dependants(p) if d not in named},
                          key=lambda p: (bool(LOW_VALUE_DIRS.search(p)), p))
            for rank, path in enumerate(deps):
                out[path] = 10.5 - 0.01 * rank
    if ENV_INTENT.search(query.text):
        for path, structure in structures().items():
            if structure.env_vars:
                out[path] = max(out.get(path, 0.0), 0.3)
    if not query.identifiers:
        return out or None
    table = symbols()
    for name in query.identifiers:
        for path, weight in table.get(name, {}).items():
            out[path] = max(out.get(path, 0.0), 0.5 * weight)
    return out or None
