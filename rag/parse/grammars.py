"""The tree-sitter grammars the parse stage knows: language names, extensions, queries.

One table (:data:`LANGUAGES`) says, per language, which PyPI grammar package
provides it, which file extensions use it, which ``.scm`` files in
``rag/parse/queries/`` make up its one combined query, and how much structure
is extracted (:data:`FULL` — imports, definitions, calls, env vars, routes — or
:data:`DEFINITIONS` — definitions only, for symbol-boundary chunking and
``slackzilla code symbols``).

Compiling a grammar's query costs ~20 ms (the JavaScript one) and the compiled
``Language`` and ``Query`` are immutable, so :func:`grammar` compiles each
language once per process (``functools.cache``: an explicit, read-only cache of
data files, not mutable state). ``tree_sitter.Parser`` objects hold parse state
and are *not* shared: :class:`rag.parse.parser.CodeParser` builds its own.

Grammar packages (all ABI 14/15 wheels, compatible with ``tree-sitter>=0.25,<0.26``):
tree-sitter-javascript, tree-sitter-typescript, tree-sitter-python, tree-sitter-go,
tree-sitter-java, tree-sitter-rust, tree-sitter-ruby.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from importlib import resources

import tree_sitter
from tree_sitter import Language, Node, Query

__all__ = [
    "FULL",
    "DEFINITIONS",
    "LanguageSpec",
    "LANGUAGES",
    "EXTENSION_LANGUAGES",
    "Grammar",
    "grammar",
    "run_matches",
]

FULL = "full"
"""Structure level: imports, exports, definitions, calls, env vars and routes."""
DEFINITIONS = "definitions"
"""Structure level: definitions (with line ranges and parents) only."""


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """One grammar the parse stage uses.

    Attributes:
        name: the language name stored in ``FileStructure.language`` (``python``).
        display: the name shown to people (``Python``).
        module: the grammar package's import name (``tree_sitter_python``).
        function: its function returning the language capsule (``language``,
            ``language_typescript``).
        extensions: lower-case file extensions, without the dot, parsed with it.
        query_files: the ``.scm`` files, in ``rag/parse/queries/``, joined into its query.
        level: :data:`FULL` or :data:`DEFINITIONS`.
    """

    name: str
    display: str
    module: str
    function: str
    extensions: tuple[str, ...]
    query_files: tuple[str, ...]
    level: str = FULL


LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec("javascript", "JavaScript", "tree_sitter_javascript", "language",
                     ("js", "jsx", "mjs", "cjs"), ("common.scm", "javascript.scm")),
        LanguageSpec("typescript", "TypeScript", "tree_sitter_typescript", "language_typescript",
                     ("ts",), ("common.scm", "typescript.scm")),
        LanguageSpec("tsx", "TypeScript (TSX)", "tree_sitter_typescript", "language_tsx",
                     ("tsx",), ("common.scm", "typescript.scm")),
        LanguageSpec("python", "Python", "tree_sitter_python", "language", ("py",), ("python.scm",)),
        LanguageSpec("go", "Go", "tree_sitter_go", "language", ("go",), ("go.scm",), DEFINITIONS),
        LanguageSpec("java", "Java", "tree_sitter_java", "language", ("java",), ("java.scm",), DEFINITIONS),
        LanguageSpec("rust", "Rust", "tree_sitter_rust", "language", ("rs",), ("rust.scm",), DEFINITIONS),
        LanguageSpec("ruby", "Ruby", "tree_sitter_ruby", "language", ("rb",), ("ruby.scm",), DEFINITIONS),
    )
}
"""Every supported language by name."""

EXTENSION_LANGUAGES: dict[str, str] = {ext: spec.name for spec in LANGUAGES.values() for ext in spec.extensions}
"""Lower-case extension (no dot) → language name."""


@dataclass(frozen=True, slots=True)
class Grammar:
    """A compiled grammar: the ``Language`` and its combined ``Query`` (both immutable)."""

    spec: LanguageSpec
    language: Language
    query: Query


def _query_source(spec: LanguageSpec) -> str:
    folder = resources.files("rag.parse").joinpath("queries")
    return "\n".join(folder.joinpath(file).read_text(encoding="utf-8") for file in spec.query_files)


@functools.cache
def grammar(name: str) -> Grammar:
    """The compiled :class:`Grammar` of language ``name``, built on first use, once per process.

    Raises:
        KeyError: ``name`` is not in :data:`LANGUAGES`.
        tree_sitter.QueryError: a query file does not compile against its grammar (a bug).
    """
    spec = LANGUAGES[name]
    capsule = getattr(importlib.import_module(spec.module), spec.function)()
    language = Language(capsule)
    return Grammar(spec=spec, language=language, query=Query(language, _query_source(spec)))


_QueryCursor = getattr(tree_sitter, "QueryCursor", None)


def run_matches(query: Query, node: Node) -> list[tuple[int, dict[str, list[Node]]]]:
    """``(pattern index, {capture name: nodes})`` for every match of ``query`` under ``node``.

    Version shim: tree-sitter ≥ 0.25 runs queries through ``QueryCursor``; 0.22–0.24 had
    ``Query.matches``. The only place that knows the difference.
    """
    if _QueryCursor is not None:
        return _QueryCursor(query).matches(node)
    return query.matches(node)  # type: ignore[attr-defined]
