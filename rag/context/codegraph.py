"""The code graph: questions about symbols, routes, env vars and file dependencies.

Built once from the parsed :class:`~rag.parse.parser.FileStructure` of every
parsed file (JavaScript, TypeScript, Python; definitions only for Go, Java, Rust,
Ruby — the index stores them); all look-ups are then
in-memory. It ports the seed's ``findSymbols``, ``findRoutes``,
``getDependencies``, ``getDependants`` and ``findEnvironmentVariable``.

Scoring (the seed's): a symbol or route scores **+100** when its full name
(route: full or literal path) appears in the question and **+20** for every
query token contained in the name (lower-case). Query tokens are the question's
words split at identifier boundaries (``createUser`` → ``create``, ``user``),
lower-cased, at least 3 characters, stopwords removed (``rag.text.STOPWORDS``).
Routes get **+10** more when the question names their HTTP method (our
tie-breaker between ``GET /users`` and ``POST /users``).

Route prefixes: a mount ``app.use('/api', usersRouter)`` (or
``fastify.register(plugin, { prefix })``, Flask's ``register_blueprint``, FastAPI's
``include_router``, Django's ``include``) whose target is imported from another
file gives that file's routes the prefix; when the target is a router of the
same file, that router's routes get it. Mounts chain (``/api`` + ``/v1`` +
``/users``); a router mounted at two prefixes yields one route per prefix. The
mounts themselves are routes too (method ``USE``, their own full prefix), as in
the seed, which listed ``use`` among the route methods. A route ``/`` under a prefix is
the prefix itself in JavaScript (``/api``, as Express matches it) and keeps its slash in
Python (``/api/``: Flask, FastAPI and Starlette append the path to the prefix).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rag.parse.parser import FileStructure, ImportResolver
from rag.text import STOPWORDS, identifier_parts, words

__all__ = [
    "SymbolHit",
    "RouteHit",
    "CodeGraph",
    "question_tokens",
    "FULL_NAME_SCORE",
    "TOKEN_SCORE",
    "METHOD_SCORE",
    "DEFAULT_SYMBOL_LIMIT",
    "DEFAULT_ROUTE_LIMIT",
]

FULL_NAME_SCORE = 100
TOKEN_SCORE = 20
METHOD_SCORE = 10
MIN_TOKEN_CHARS = 3
DEFAULT_SYMBOL_LIMIT = 20
DEFAULT_ROUTE_LIMIT = 20
_MAX_MOUNT_DEPTH = 8
_SUMMARY_MAX_DEFINITIONS = 30
_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")
_HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"})


def question_tokens(question: str) -> list[str]:
    """Query tokens of a question (see module docstring), unique, in order."""
    seen: dict[str, None] = {}
    for word in words(question):
        for part in identifier_parts(word):
            if len(part) >= MIN_TOKEN_CHARS and part not in STOPWORDS:
                seen.setdefault(part, None)
    return list(seen)


def _mentions(question: str, name: str) -> bool:
    """``name`` appears in ``question`` as a whole word/path (case-insensitive)."""
    if len(name) < MIN_TOKEN_CHARS:
        return False
    pattern = r"(?<![\w$/#])" + re.escape(name) + r"(?![\w$/-])"
    return re.search(pattern, question, re.IGNORECASE) is not None


def _token_score(tokens: list[str], text: str) -> int:
    lowered = text.lower()
    return TOKEN_SCORE * sum(1 for token in tokens if token in lowered)


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """A definition matched by a question: file ``path``, ``line``..``end``, and its ``score``."""

    path: str
    name: str
    kind: str
    line: int
    end: int
    parent: str | None
    score: int = 0

    def to_json(self) -> dict:
        """The CLI shape: ``{"path", "line", "end", "name", "kind", "parent", "score"}``."""
        return {"path": self.path, "line": self.line, "end": self.end, "name": self.name,
                "kind": self.kind, "parent": self.parent, "score": self.score}


@dataclass(frozen=True, slots=True)
class RouteHit:
    """A route with its mount prefixes applied: ``route`` is the full path, ``path`` the file."""

    path: str
    line: int
    method: str
    route: str
    router: str | None
    match: str = "exact"
    source: str = "call"
    score: int = 0
    handler: str | None = None

    def to_json(self) -> dict:
        """The CLI shape: ``{"path", "line", "method", "route", "router", "match", "source", "score",
        "handler"}`` (``handler``: the handling function when the parser knows it, else ``None``)."""
        return {"path": self.path, "line": self.line, "method": self.method, "route": self.route,
                "router": self.router, "match": self.match, "source": self.source, "score": self.score,
                "handler": self.handler}


@dataclass(frozen=True, slots=True)
class _Mount:
    parent_path: str
    parent_router: str | None
    prefix: str
    child_path: str
    child_router: str | None  # None: every router-bound route of the child file


def _join(prefix: str, path: str, *, keep_slash: bool = False) -> str:
    """``path`` under ``prefix``. A route ``"/"`` there is the prefix itself (Express, Fastify), or with
    ``keep_slash`` the prefix and its slash (Flask, FastAPI, Starlette append the path: ``/items/``)."""
    if not prefix:
        return path
    if path == "" or (path == "/" and not keep_slash):
        return prefix
    return prefix.rstrip("/") + "/" + path.lstrip("/")


class CodeGraph:
    """Symbols, routes, env vars and dependency edges of a repository.

    Args:
        structures: path → parsed structure with imports already resolved
            (``rag.parse.parser.resolve_imports``). Not copied: do not mutate it after.

    Example::

        graph = CodeGraph(structures)
        graph.find_symbols("where is createUser defined?")[0].path
        graph.dependants("src/lib/store.js")
    """

    def __init__(self, structures: Mapping[str, FileStructure]) -> None:
        self._structures = dict(structures)
        self._paths = sorted(self._structures)
        self._dependencies: dict[str, list[str]] = {}
        dependants: dict[str, list[str]] = {}
        for path in sorted(self._structures):
            deps: dict[str, None] = {}
            for item in self._structures[path].imports:
                if item.resolved and item.resolved != path:
                    deps.setdefault(item.resolved, None)
            self._dependencies[path] = list(deps)
            for dep in deps:
                dependants.setdefault(dep, []).append(path)
        self._dependants = dependants
        self._env: dict[str, list[tuple[str, int]]] = {}
        for path in sorted(self._structures):
            for var in self._structures[path].env_vars:
                self._env.setdefault(var.name, []).append((path, var.line))
        self._routes = self._resolve_routes()
        # (symbol, lower-case name without "#") for the scored search, built once.
        self._symbol_index = [(symbol, symbol.name.lstrip("#").lower()) for symbol in self._all_symbols()]
        # The scored search works on distinct names: each name once in `_names`, the positions in
        # `_symbol_index` of the symbols carrying it in `_name_symbols`, and every name in one
        # "\n"-joined text (`_name_text`, `_name_starts`) where a token is found by str.find.
        positions: dict[str, list[int]] = {}
        for position, (_symbol, bare) in enumerate(self._symbol_index):
            positions.setdefault(bare, []).append(position)
        self._names = list(positions)
        self._name_symbols = list(positions.values())
        self._name_starts: list[int] = []
        offset = 0
        for name in self._names:
            self._name_starts.append(offset)
            offset += len(name) + 1
        self._name_text = "\n".join(self._names)

    # -- plain look-ups -----------------------------------------------------------
    @property
    def paths(self) -> list[str]:
        """Every file in the graph, sorted."""
        return list(self._paths)

    def structure(self, path: str) -> FileStructure | None:
        """The parsed structure of ``path`` or ``None``."""
        return self._structures.get(path)

    def dependencies(self, path: str) -> list[str]:
        """Repository files ``path`` imports (resolved imports, first-import order)."""
        return list(self._dependencies.get(path, []))

    def dependants(self, path: str) -> list[str]:
        """Repository files that import ``path``, sorted."""
        return list(self._dependants.get(path, []))

    def find_environment_variable(self, name: str) -> list[tuple[str, int]]:
        """``(path, line)`` of every read of ``process.env.<name>``, by path then line."""
        return list(self._env.get(name, []))

    def environment_variables(self) -> dict[str, list[tuple[str, int]]]:
        """Every env var name → its ``(path, line)`` uses."""
        return {name: list(uses) for name, uses in sorted(self._env.items())}

    def environment_reads(self) -> list[tuple[str, str, int, str | None]]:
        """Every env var read as ``(name, path, line, expression)``, by name, path and line; ``expression``
        is what a dynamic read (name ``*``) reads through (``process.env[k]``'s ``k``, or ``process.env`` /
        ``os.environ`` itself for the whole environment), ``None`` for a named read."""
        reads = [(var.name, path, var.line, var.expression if var.dynamic else None)
                 for path, structure in self._structures.items() for var in structure.env_vars]
        return sorted(reads, key=lambda read: read[:3])

    @staticmethod
    def env_names_in(question: str) -> list[str]:
        """Upper-case names ``[A-Z][A-Z0-9_]{2,}`` mentioned in the question, unique, in order."""
        return list(dict.fromkeys(_ENV_NAME.findall(question)))

    def symbols(self) -> list[SymbolHit]:
        """Every definition of every file (score 0), by path then line."""
        return [symbol for symbol, _bare in self._symbol_index]

    def _all_symbols(self) -> list[SymbolHit]:
        return [
            SymbolHit(path=path, name=d.name, kind=d.kind, line=d.start, end=d.end, parent=d.parent)
            for path in self.paths
            for d in self._structures[path].definitions
        ]

    def routes(self) -> list[RouteHit]:
        """Every route and ``USE`` mount (mount prefixes applied), by path then line."""
        return [hit for hit, _literal in self._routes]

    # -- scored searches -----------------------------------------------------------
    def find_symbols(self, question: str, *, limit: int = DEFAULT_SYMBOL_LIMIT) -> list[SymbolHit]:
        """Definitions matching the question, best first (score > 0 only).

        Ties are broken by path then line. ``#private`` names match with or without ``#``.
        """
        return self._ranked_symbols(self._name_scores(question), limit)

    def _name_scores(self, question: str) -> dict[int, int]:
        """Distinct-name index → score (> 0 only): :data:`TOKEN_SCORE` per query token the name
        contains, plus :data:`FULL_NAME_SCORE` when the question mentions the whole name.

        The same score as testing every token against every symbol, in time proportional to the
        names' total length per token (``str.find`` over one joined text) plus the matches:
        the per-question cost on a 2,000-file repository falls from ~100 ms to a few ms.
        """
        text, starts = self._name_text, self._name_starts
        scores: dict[int, int] = {}
        for token in question_tokens(question):
            if "\n" in token:
                continue
            found = text.find(token)
            last = -1
            while found >= 0:
                index = bisect.bisect_right(starts, found) - 1
                if index != last:  # a token counts once per name
                    scores[index] = scores.get(index, 0) + TOKEN_SCORE
                    last = index
                found = text.find(token, found + 1)
        lowered = question.lower()
        for index, name in enumerate(self._names):
            # cheap substring test first; the word-boundary regex only for candidates
            if name and name in lowered and _mentions(question, name):
                scores[index] = scores.get(index, 0) + FULL_NAME_SCORE
        return scores

    def _ranked_symbols(self, scores: dict[int, int], limit: int) -> list[SymbolHit]:
        """The symbols of the scored names, by score, then path, then line (then index order), the
        first ``limit``; only the symbols of the score levels that reach the cut are sorted."""
        by_score: dict[int, list[int]] = {}
        for index, score in scores.items():
            by_score.setdefault(score, []).append(index)
        hits: list[SymbolHit] = []
        for score in sorted(by_score, reverse=True):
            if len(hits) >= limit:
                break
            level = [position for index in by_score[score] for position in self._name_symbols[index]]
            level.sort(key=lambda p: (self._symbol_index[p][0].path, self._symbol_index[p][0].line, p))
            for position in level[:limit - len(hits)]:
                symbol = self._symbol_index[position][0]
                hits.append(SymbolHit(path=symbol.path, name=symbol.name, kind=symbol.kind, line=symbol.line,
                                      end=symbol.end, parent=symbol.parent, score=score))
        return hits

    def find_routes(self, question: str, *, limit: int = DEFAULT_ROUTE_LIMIT) -> list[RouteHit]:
        """Routes matching the question, best first (score > 0 only)."""
        tokens = question_tokens(question)
        named_methods = {m for m in _HTTP_METHODS if re.search(rf"\b{m}\b", question, re.IGNORECASE)}
        hits: list[RouteHit] = []
        lowered = question.lower()
        for route, literal in self._routes:
            mentioned = (route.route.lower() in lowered and _mentions(question, route.route)) or (
                literal.lower() in lowered and _mentions(question, literal))
            score = (FULL_NAME_SCORE if mentioned else 0) + _token_score(tokens, route.route)
            if score > 0 and route.method in named_methods:
                score += METHOD_SCORE
            if score > 0:
                hits.append(RouteHit(path=route.path, line=route.line, method=route.method, route=route.route,
                                     router=route.router, match=route.match, source=route.source, score=score,
                                     handler=route.handler))
        hits.sort(key=lambda h: (-h.score, h.path, h.line))
        return hits[:limit]

    # -- summaries -------------------------------------------------------------------
    def summary(self, path: str) -> str:
        """A short structural summary of one file (empty string for unknown paths).

        Lines: the path and language; ``imports:`` (spec → resolved path);
        ``exports:``; ``defines:`` name, kind and line range (parent-qualified,
        at most 30, then ``… N more``); ``routes:`` method, full path and line;
        ``env:`` names and lines; ``used by:`` dependants.
        """
        structure = self._structures.get(path)
        if structure is None:
            return ""
        lines = [f"{path} ({structure.language}{', has syntax errors' if structure.has_error else ''})"]
        if structure.imports:
            specs = dict.fromkeys(
                f"{i.spec} → {i.resolved}" if i.resolved else i.spec for i in structure.imports
            )
            lines.append("imports: " + ", ".join(specs))
        if structure.exports:
            lines.append("exports: " + ", ".join(dict.fromkeys(e.name for e in structure.exports)))
        if structure.definitions:
            shown = structure.definitions[:_SUMMARY_MAX_DEFINITIONS]
            parts = [
                f"{d.parent + '.' if d.parent and d.kind in ('method', 'field') else ''}{d.name} "
                f"{d.kind} {d.start}-{d.end}"
                for d in shown
            ]
            more = len(structure.definitions) - len(shown)
            lines.append("defines: " + "; ".join(parts) + (f"; … {more} more" if more > 0 else ""))
        routes = [hit for hit, _literal in self._routes if hit.path == path]
        if routes:
            lines.append("routes: " + "; ".join(f"{r.method} {r.route} (line {r.line})" for r in routes))
        if structure.env_vars:
            env = dict.fromkeys(f"{v.name} (line {v.line})" for v in structure.env_vars)
            lines.append("env: " + ", ".join(env))
        users = self.dependants(path)
        if users:
            lines.append("used by: " + ", ".join(users))
        return "\n".join(lines)

    # -- route prefixes ----------------------------------------------------------------
    def _mounts(self) -> list[_Mount]:
        resolver = ImportResolver(self._structures)
        mounts: list[_Mount] = []
        for path in sorted(self._structures):
            structure = self._structures[path]
            for route in structure.routes:
                if route.method != "USE" or route.source != "call":
                    continue
                prefix = _join(route.prefix or "", route.path)
                if route.target_spec:
                    child = resolver.resolve(path, route.target_spec)
                    if child:
                        mounts.append(_Mount(path, route.router, prefix, child, None))
                    continue
                if not route.target:
                    continue
                head = route.target.split(".", 1)[0]
                child = next(
                    (i.resolved for i in structure.imports if i.resolved and head in i.names), None
                )
                if child is not None:
                    mounts.append(_Mount(path, route.router, prefix, child, None))
                elif any(r.router == route.target for r in structure.routes if r.method != "USE"):
                    mounts.append(_Mount(path, route.router, prefix, path, route.target))
        return mounts

    def _exported_router(self, path: str) -> str | None:
        structure = self._structures[path]
        routers = {r.router for r in structure.routes if r.source == "call" and r.router}
        for export in structure.exports:
            if export.kind in ("cjs_default", "default") and export.name in routers:
                return export.name
        return None

    def _resolve_routes(self) -> list[tuple[RouteHit, str]]:
        """Every route and mount with each derivable prefix, paired with its literal path."""
        mounts = self._mounts()
        by_child: dict[tuple[str, str | None], list[_Mount]] = {}
        for mount in mounts:
            router = mount.child_router
            if router is None:
                router = self._exported_router(mount.child_path)
            by_child.setdefault((mount.child_path, router), []).append(mount)
        cache: dict[tuple[str, str | None], list[str]] = {}

        def prefixes(path: str, router: str | None, depth: int) -> list[str]:
            key = (path, router)
            if key in cache:
                return cache[key]
            found = by_child.get(key, []) + (by_child.get((path, None), []) if router is not None else [])
            if depth >= _MAX_MOUNT_DEPTH or not found:
                return [""]
            cache[key] = [""]  # cycle guard while computing
            result = list(dict.fromkeys(
                _join(parent, mount.prefix)
                for mount in found
                for parent in prefixes(mount.parent_path, mount.parent_router, depth + 1)
            ))
            cache[key] = result
            return result

        hits: list[tuple[RouteHit, str]] = []
        for path in sorted(self._structures):
            python = self._structures[path].language == "python"
            for route in self._structures[path].routes:
                keep_slash = python and route.method != "USE"
                own = _join(route.prefix or "", route.path, keep_slash=keep_slash)
                outer = prefixes(path, route.router, 0) if route.source == "call" else [""]
                for prefix in outer:
                    hit = RouteHit(path=path, line=route.line, method=route.method,
                                   route=_join(prefix, own, keep_slash=keep_slash),
                                   router=route.router.split("@", 1)[0] if route.router else None,
                                   match=route.match, source=route.source, handler=route.handler)
                    hits.append((hit, route.path))
        return hits
