"""Parse stage: source file → :class:`FileStructure` (DESIGN.md §3 "Parse").

One combined tree-sitter query per language (``.scm`` files in ``rag/parse/queries/``,
loaded with ``importlib.resources``; capture names follow aider's ``*-tags.scm``)
is run once per file, and an extractor turns its matches into records:

* **JavaScript / TypeScript** (``common.scm`` plus ``javascript.scm`` or
  ``typescript.scm``; ``rag/parse/extract.py``): imports, exports, definitions with
  line ranges (class bases, static/get/set flags), calls with their enclosing
  definition, ``process.env`` reads (``import.meta.env``, ``Deno.env``, ``Bun.env`` too; defaults and
  dynamic keys included), routes,
  ``path.join``/``path.resolve`` references and the file's module system (ESM /
  CommonJS). Syntax errors never raise: ``rag/parse/repair.py`` keeps what parsed
  and flags the file.
* **Python** (``python.scm``; ``rag/parse/python.py``): the same records — imports
  resolved to repository modules, definitions, calls, ``os.environ``/settings-class
  env vars, Flask/FastAPI/Starlette/Django routes and mounts.
* **Go, Java, Rust, Ruby** (``go.scm`` …; ``rag/parse/definitions.py``):
  definitions only (for symbol-boundary chunks and ``slackzilla code symbols``).

Which extension uses which grammar is :data:`rag.parse.grammars.LANGUAGES`.

Usage::

    parser = CodeParser()                    # build once, reuse for every file
    structure = parser.parse("lib/app.js", text)
    resolve_imports({s.path: s for s in structures}, known_paths=all_paths)

``parse_source(path, text)`` is the one-off convenience form. Compiled grammars are
shared by the whole process (:func:`rag.parse.grammars.grammar`); a parser instance
holds only its ``tree_sitter.Parser`` objects.

Grammars: ``.js .jsx .mjs .cjs`` use tree-sitter-javascript (JSX included);
``.ts`` and ``.tsx`` use tree-sitter-typescript's ``typescript``/``tsx`` grammars;
``.py`` tree-sitter-python; ``.go .java .rs .rb`` tree-sitter-go, -java, -rust, -ruby.
"""
from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable, Mapping

from tree_sitter import Parser

from rag.parse.definitions import extract_definitions
from rag.parse.extract import Extraction, extract, module_system
from rag.parse.grammars import DEFINITIONS, EXTENSION_LANGUAGES, FULL, LANGUAGES, grammar, run_matches
from rag.parse.pymodules import PythonModules
from rag.parse.python import extract_python
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
from rag.parse.tsconfig import PathAliases

__all__ = [
    "MODULE_SYSTEMS",
    "PARSE_VERSION",
    "PARSEABLE_EXTENSIONS",
    "JS_EXTENSIONS",
    "RESOLVE_EXTENSIONS",
    "FULL",
    "DEFINITIONS",
    "Import",
    "Export",
    "Definition",
    "Call",
    "EnvVar",
    "Route",
    "PathRef",
    "FileStructure",
    "CodeParser",
    "JsParser",
    "ImportResolver",
    "language_for_path",
    "language_display",
    "structure_level",
    "supported_languages",
    "warm_grammars",
    "parse_source",
    "resolve_relative",
    "resolve_imports",
]

logger = logging.getLogger(__name__)

PARSEABLE_EXTENSIONS = frozenset(EXTENSION_LANGUAGES)
"""File extensions (lower case, no dot) that get a structure: every language of ``LANGUAGES``."""
_JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
JS_EXTENSIONS = frozenset(ext for ext, name in EXTENSION_LANGUAGES.items() if name in _JS_LANGUAGES)
"""The JavaScript-family extensions (``js jsx mjs cjs ts tsx``)."""
# Extensions tried, in order, when resolving a relative specifier (issue 3).
RESOLVE_EXTENSIONS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx")
# TypeScript's ESM convention: `import './x.js'` may name `x.ts`.
_TS_SOURCE_FOR = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}


def warm_grammars(paths: Iterable[str]) -> None:
    """Compile the grammars and queries the files at ``paths`` need now (:func:`rag.parse.grammars.grammar`),
    e.g. before an indexing pool forks its workers: they inherit them instead of each compiling its own,
    and this process has them for the small updates it parses itself."""
    for language in {language_for_path(path) for path in paths} - {None}:
        grammar(language)


def language_for_path(path: str) -> str | None:
    """The language name (``javascript``, ``typescript``, ``tsx``, ``python``, ``go``, ``java``,
    ``rust``, ``ruby``) of a path by its extension, or ``None`` when it has no structure support."""
    _, dot, ext = path.rpartition(".")
    return EXTENSION_LANGUAGES.get(ext.lower()) if dot else None


def language_display(language: str) -> str:
    """The name shown to people (``Python``) of a language name (``python``); unknown names unchanged."""
    spec = LANGUAGES.get(language)
    return spec.display if spec is not None else language


def structure_level(language: str) -> str | None:
    """:data:`FULL` or :data:`DEFINITIONS` for a language name, ``None`` when unknown."""
    spec = LANGUAGES.get(language)
    return spec.level if spec is not None else None


def supported_languages() -> dict[str, list[str]]:
    """``{FULL: [display names], DEFINITIONS: [display names]}`` of every supported language
    (``tsx`` folded into TypeScript), for messages such as "Python structure is parsed"."""
    levels: dict[str, list[str]] = {FULL: [], DEFINITIONS: []}
    for spec in LANGUAGES.values():
        if spec.name != "tsx":
            levels[spec.level].append(spec.display)
    return levels


def _finish(found: FileStructure, *, has_error: bool, module: str = "unknown") -> FileStructure:
    """The final structure: every list in line order."""
    return FileStructure(
        path=found.path,
        language=found.language,
        imports=sorted(found.imports, key=lambda r: r.line),
        exports=sorted(found.exports, key=lambda r: r.line),
        definitions=sorted(found.definitions, key=lambda r: (r.start, -r.end)),
        calls=sorted(found.calls, key=lambda r: r.line),
        env_vars=sorted(found.env_vars, key=lambda r: r.line),
        routes=sorted(found.routes, key=lambda r: r.line),
        path_refs=sorted(found.path_refs, key=lambda r: r.line),
        has_error=has_error,
        module_system=module,
    )


class CodeParser:
    """Parses source files of every supported language; holds one ``tree_sitter.Parser`` per language.

    Parsers are built lazily on first use and cached on the instance (never
    module-level); the compiled grammars and queries are shared process-wide
    (:func:`rag.parse.grammars.grammar`). One instance per indexing run or worker
    thread is the intended use; an instance is not safe to share between threads.
    """

    def __init__(self) -> None:
        self._parsers: dict[str, Parser] = {}

    def _parser(self, name: str) -> Parser:
        parser = self._parsers.get(name)
        if parser is None:
            parser = self._parsers[name] = Parser(grammar(name).language)
        return parser

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
            raise ValueError(f"no structure support for {path!r} (parsed extensions: "
                             f"{', '.join(sorted(PARSEABLE_EXTENSIONS))})")
        query = grammar(language).query
        parser = self._parser(language)
        source = text.encode("utf-8", "replace")
        if language in _JS_LANGUAGES:
            return self._parse_js(path, language, parser, query, source)
        tree = parser.parse(source)
        root = tree.root_node
        if root.has_error:
            logger.debug("syntax errors in %s; kept what parsed", path)
        if language == "python":
            found = extract_python(run_matches(query, root), path=path, has_error=root.has_error)
        else:
            found = extract_definitions(run_matches(query, root), path=path, language=language,
                                        has_error=root.has_error)
        return _finish(found, has_error=root.has_error)

    @staticmethod
    def _parse_js(path: str, language: str, parser: Parser, query, source: bytes) -> FileStructure:
        repaired = parse_with_repair(parser.parse, source, typescript=language == "typescript")
        result = extract(run_matches(query, repaired.tree.root_node), path=path, language=language)
        for tree, first_line, last_line in repaired.earlier:
            earlier = extract(run_matches(query, tree.root_node), path=path, language=language)
            _merge_lines(result, earlier, first_line, last_line)
        if repaired.has_error:
            logger.debug("syntax errors in %s; kept what parsed", path)
        return _finish(result.records, has_error=repaired.has_error,
                       module=module_system(result.esm_lines, result.cjs_lines, path))


JsParser = CodeParser
"""The former name of :class:`CodeParser` (when only JavaScript/TypeScript was parsed)."""


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


def parse_source(path: str, text: str, *, parser: CodeParser | None = None) -> FileStructure:
    """Parse one file (see :meth:`CodeParser.parse`); builds a parser when none is given."""
    return (parser or CodeParser()).parse(path, text)


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
    return _resolve_base("" if base == "." else base, known_paths)


def _resolve_base(base: str, known_paths: set[str] | frozenset[str]) -> str | None:
    """The file a normalised repository path names (see :func:`resolve_relative` for the order tried)."""
    candidates = [base] if base else []
    candidates += [base + ext for ext in RESOLVE_EXTENSIONS]
    prefix = base + "/" if base else ""
    candidates += [prefix + "index" + ext for ext in RESOLVE_EXTENSIONS]
    stem, ext = posixpath.splitext(base)
    candidates += [stem + alt for alt in _TS_SOURCE_FOR.get(ext, ())]
    return next((c for c in candidates if c and c in known_paths), None)


class ImportResolver:
    """Resolves import specifiers to repository files, for every language that has imports.

    JavaScript-family files resolve relative specifiers (:func:`resolve_relative`) and, with
    ``aliases``, the ``tsconfig.json``/``jsconfig.json`` path aliases (``@/lib/db``,
    :class:`rag.parse.tsconfig.PathAliases`); Python files resolve module names
    (:class:`rag.parse.pymodules.PythonModules`, built on first use).

    Args:
        known_paths: every repository file path.
        aliases: the repository's path aliases (``None``: non-relative specifiers stay packages).
    """

    def __init__(self, known_paths: Iterable[str], *, aliases: PathAliases | None = None) -> None:
        self._known = set(known_paths)
        self._python: PythonModules | None = None
        self._aliases = aliases

    def resolve(self, from_path: str, spec: str, *, member: bool = False) -> str | None:
        """The repository file ``spec`` names when written in ``from_path``, else ``None``.

        ``member`` (Python): ``spec`` is ``M.n`` of ``from M import n`` (``n`` may be a
        name defined in ``M``: ``M``'s file is the fallback).
        """
        if language_for_path(from_path) == "python":
            if self._python is None:
                self._python = PythonModules(self._known)
            return self._python.resolve(from_path, spec, member=member)
        if self._aliases and not spec.startswith("."):
            spec = spec.split("?", 1)[0]
            return next((found for base in self._aliases.candidates(from_path, spec)
                         if (found := _resolve_base(base, self._known)) is not None), None)
        return resolve_relative(from_path, spec, self._known)

    def resolve_import(self, from_path: str, item: Import) -> str | None:
        """The file an :class:`Import` record of ``from_path`` names (``None`` for computed specifiers)."""
        if item.expression is not None:
            return None
        return self.resolve(from_path, item.spec, member=item.kind == "from" and item.names != ["*"])


def resolve_imports(
    structures: Mapping[str, FileStructure], *, known_paths: Iterable[str] | None = None,
    aliases: PathAliases | None = None,
) -> None:
    """Set ``Import.resolved`` on every import of every structure, in place (:class:`ImportResolver`).

    Args:
        structures: path → structure of the parsed files.
        known_paths: every repository file path (so ``./data.json`` resolves
            too); defaults to the keys of ``structures``.
        aliases: the ``tsconfig.json``/``jsconfig.json`` path aliases of the repository
            (:meth:`rag.parse.tsconfig.PathAliases.from_configs`), if any.
    """
    known = set(known_paths) if known_paths is not None else set(structures)
    known.update(structures)
    resolver = ImportResolver(known, aliases=aliases)
    for path, structure in structures.items():
        for item in structure.imports:
            item.resolved = resolver.resolve_import(path, item)
