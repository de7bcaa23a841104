"""Parse stage: JavaScript-family source → :class:`FileStructure` (DESIGN.md §3 "Parse").

One combined tree-sitter query per language (``rag/queries/common.scm`` plus
``javascript.scm`` or ``typescript.scm``, loaded with ``importlib.resources``;
capture names follow aider's ``javascript-tags.scm``) is run once per file,
and ``rag/parse/extract.py`` turns its matches into records: imports,
exports, definitions with line ranges (class bases, static/get/set flags),
calls with their enclosing definition, ``process.env`` reads (defaults and
dynamic keys included), routes, ``path.join``/``path.resolve`` references and
the file's module system (ESM / CommonJS).
Syntax errors never raise: ``rag/parse/repair.py`` keeps what parsed and
flags the file.

Usage::

    parser = JsParser()                      # build once, reuse for every file
    structure = parser.parse("lib/app.js", text)
    resolve_imports({s.path: s for s in structures}, known_paths=all_paths)

``parse_source(path, text)`` is the one-off convenience form (it builds a
parser each call; the compiled queries are shared by the process; pass ``parser=`` in loops).

Grammars: ``.js .jsx .mjs .cjs`` use tree-sitter-javascript (JSX included);
``.ts`` and ``.tsx`` use tree-sitter-typescript's ``typescript``/``tsx`` grammars.
"""
from __future__ import annotations

import functools
import logging
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

import tree_sitter
import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Query

from rag.parse.extract import Extraction, extract, module_system
from rag.parse.records import (
    MODULE_SYSTEMS,
    PARSE_VERSION,
    Call,
    Definition,
    EnvVar,
    Export,
    FileStructure,
    Import,
    PathRef,
    Route,
)
from rag.parse.repair import parse_with_repair

__all__ = [
    "MODULE_SYSTEMS",
    "PARSE_VERSION",
    "PARSEABLE_EXTENSIONS",
    "RESOLVE_EXTENSIONS",
    "Import",
    "Export",
    "Definition",
    "Call",
    "EnvVar",
    "Route",
    "PathRef",
    "FileStructure",
    "JsParser",
    "language_for_path",
    "warm_grammars",
    "parse_source",
    "resolve_relative",
    "resolve_imports",
]

logger = logging.getLogger(__name__)

PARSEABLE_EXTENSIONS = frozenset({"js", "jsx", "mjs", "cjs", "ts", "tsx"})
# Extensions tried, in order, when resolving a relative specifier (issue 3).
RESOLVE_EXTENSIONS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx")
# TypeScript's ESM convention: `import './x.js'` may name `x.ts`.
_TS_SOURCE_FOR = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_LANGUAGE_BY_EXTENSION = {
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "tsx": "tsx",
}
_QUERY_FILES = {
    "javascript": ("common.scm", "javascript.scm"),
    "typescript": ("common.scm", "typescript.scm"),
    "tsx": ("common.scm", "typescript.scm"),
}
_QueryCursor = getattr(tree_sitter, "QueryCursor", None)


def _run_matches(query: Query, node: Node) -> list[tuple[int, dict[str, list[Node]]]]:
    """Version shim: tree-sitter ≥ 0.25 runs queries through ``QueryCursor``;
    0.22–0.24 had ``Query.matches``. The only place that knows the difference."""
    if _QueryCursor is not None:
        return _QueryCursor(query).matches(node)
    return query.matches(node)  # type: ignore[attr-defined]


def _language_capsule(name: str) -> object:
    if name == "javascript":
        return tree_sitter_javascript.language()
    if name == "typescript":
        return tree_sitter_typescript.language_typescript()
    return tree_sitter_typescript.language_tsx()


def _query_source(name: str) -> str:
    folder = resources.files("rag.parse").joinpath("queries")
    return "\n".join(folder.joinpath(file).read_text(encoding="utf-8") for file in _QUERY_FILES[name])


@functools.lru_cache(maxsize=None)
def _compiled(name: str) -> tuple[Language, Query]:
    """The grammar and its compiled query for ``name``, built once per process.

    Compiling a query costs 30-70 ms (measured here: javascript 30, typescript and tsx 70), so
    every :class:`JsParser` of a process (one per engine, per ``parse_source`` call, per indexing
    worker) shares them: ``Language`` and ``Query`` are read-only once built (each run gets its
    own ``QueryCursor``); ``Parser`` objects keep parse state and stay per instance.
    """
    language = Language(_language_capsule(name))
    return language, Query(language, _query_source(name))


def warm_grammars(paths: Iterable[str]) -> None:
    """Build the grammars and queries the files at ``paths`` need now (:func:`_compiled`), e.g. before
    an indexing pool forks its workers: they inherit them instead of each compiling its own, and this
    process has them for the small updates it parses itself."""
    for language in {language_for_path(path) for path in paths} - {None}:
        _compiled(language)


def language_for_path(path: str) -> str | None:
    """``javascript``, ``typescript``, ``tsx`` or ``None`` for a path by its extension."""
    _, dot, ext = path.rpartition(".")
    return _LANGUAGE_BY_EXTENSION.get(ext.lower()) if dot else None


@dataclass(slots=True)
class _Grammar:
    parser: Parser
    query: Query


class JsParser:
    """Parses JavaScript-family files; holds one parser + compiled query per grammar.

    Parsers are built lazily on first use and kept on the instance (the compiled
    queries are shared by the process: :func:`_compiled`), so one instance per
    indexing run or worker thread is the intended use; an instance is not safe to
    share between threads.
    """

    def __init__(self) -> None:
        self._grammars: dict[str, _Grammar] = {}

    def _grammar(self, name: str) -> _Grammar:
        grammar = self._grammars.get(name)
        if grammar is None:
            language, query = _compiled(name)
            grammar = _Grammar(parser=Parser(language), query=query)
            self._grammars[name] = grammar
        return grammar

    def parse(self, path: str, text: str) -> FileStructure:
        """Extract the structure of one file.

        Args:
            path: repository-relative POSIX path; its extension picks the grammar.
            text: the file's text (already decoded).

        Returns:
            A :class:`FileStructure`; ``has_error`` is set when the file had
            syntax errors (what parsed is kept). Imports are not resolved yet
            (see :func:`resolve_imports`).

        Raises:
            ValueError: ``path`` does not have a parseable extension
                (see ``PARSEABLE_EXTENSIONS``).
        """
        language = language_for_path(path)
        if language is None:
            raise ValueError(f"not a JavaScript/TypeScript file: {path!r}")
        grammar = self._grammar(language)
        source = text.encode("utf-8", "replace")
        repaired = parse_with_repair(grammar.parser.parse, source)
        result = extract(_run_matches(grammar.query, repaired.tree.root_node), path=path, language=language)
        for tree, first_line, last_line in repaired.earlier:
            earlier = extract(_run_matches(grammar.query, tree.root_node), path=path, language=language)
            _merge_lines(result, earlier, first_line, last_line)
        if repaired.has_error:
            logger.debug("syntax errors in %s; kept what parsed", path)
        found = result.records
        return FileStructure(
            path=path,
            language=language,
            imports=sorted(found.imports, key=lambda r: r.line),
            exports=sorted(found.exports, key=lambda r: r.line),
            definitions=sorted(found.definitions, key=lambda r: (r.start, -r.end)),
            calls=sorted(found.calls, key=lambda r: r.line),
            env_vars=sorted(found.env_vars, key=lambda r: r.line),
            routes=sorted(found.routes, key=lambda r: r.line),
            path_refs=sorted(found.path_refs, key=lambda r: r.line),
            has_error=repaired.has_error,
            module_system=module_system(result.esm_lines, result.cjs_lines, path),
        )


def _merge_lines(into: Extraction, extra: Extraction, first: int, last: int) -> None:
    """Append ``extra``'s records whose (start) line is in ``first..last``."""
    def inside(line: int) -> bool:
        return first <= line <= last

    dst, src = into.records, extra.records
    dst.imports.extend(r for r in src.imports if inside(r.line))
    dst.exports.extend(r for r in src.exports if inside(r.line))
    dst.definitions.extend(r for r in src.definitions if inside(r.start))
    dst.calls.extend(r for r in src.calls if inside(r.line))
    dst.env_vars.extend(r for r in src.env_vars if inside(r.line))
    dst.routes.extend(r for r in src.routes if inside(r.line))
    dst.path_refs.extend(r for r in src.path_refs if inside(r.line))
    into.esm_lines.extend(line for line in extra.esm_lines if inside(line))
    into.cjs_lines.extend(line for line in extra.cjs_lines if inside(line))


def parse_source(path: str, text: str, *, parser: JsParser | None = None) -> FileStructure:
    """Parse one file (see :meth:`JsParser.parse`); builds a parser when none is given."""
    return (parser or JsParser()).parse(path, text)


def resolve_relative(from_path: str, spec: str, known_paths: set[str] | frozenset[str]) -> str | None:
    """Resolve a relative specifier to a repository file.

    Tries, in order: the exact path, the path plus each of
    ``RESOLVE_EXTENSIONS``, ``<path>/index`` plus each extension, and for a
    ``.js``-style spec the TypeScript source (``./x.js`` → ``x.ts``).

    Args:
        from_path: repository-relative path of the importing file.
        spec: the specifier as written; only ``./`` and ``../`` specs resolve.
        known_paths: repository-relative paths of the files that exist.

    Returns:
        The resolved repository path, or ``None`` for bare package names,
        paths leaving the repository and specifiers matching no file.
    """
    if not (spec.startswith("./") or spec.startswith("../") or spec in (".", "..")):
        return None
    spec = spec.split("?", 1)[0].split("#", 1)[0]
    base = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), spec))
    if base == ".." or base.startswith("../"):
        return None
    base = "" if base == "." else base
    candidates = [base] if base else []
    candidates += [base + ext for ext in RESOLVE_EXTENSIONS]
    prefix = base + "/" if base else ""
    candidates += [prefix + "index" + ext for ext in RESOLVE_EXTENSIONS]
    stem, ext = posixpath.splitext(base)
    candidates += [stem + alt for alt in _TS_SOURCE_FOR.get(ext, ())]
    return next((c for c in candidates if c and c in known_paths), None)


def resolve_imports(
    structures: Mapping[str, FileStructure], *, known_paths: Iterable[str] | None = None
) -> None:
    """Set ``Import.resolved`` on every import of every structure, in place.

    Args:
        structures: path → structure of the parsed files.
        known_paths: every repository file path (so ``./data.json`` resolves
            too); defaults to the keys of ``structures``.
    """
    known = set(known_paths) if known_paths is not None else set(structures)
    known.update(structures)
    for path, structure in structures.items():
        for item in structure.imports:
            item.resolved = resolve_relative(path, item.spec, known)
