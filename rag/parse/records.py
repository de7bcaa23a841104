"""Records produced by the parsers (DESIGN.md §3 "Parse"): one shape for every language.

The JavaScript/TypeScript extractor (``rag/parse/extract.py``) and the Python one
(``rag/parse/python.py``) fill every list; the definitions-only languages
(``rag/parse/definitions.py``: Go, Java, Rust, Ruby) fill ``definitions``.

Every record is a small dataclass; :class:`FileStructure` groups them for one
file and round-trips through JSON (``to_json()`` / ``from_json()``) so that the
index can store it next to the file's content hash and skip re-parsing
unchanged files. Lines are 1-based and inclusive, paths repository-relative
POSIX paths (see ``rag/types.py``).

``PARSE_VERSION`` is written into every JSON document; :meth:`FileStructure.from_json`
refuses a document written by another version (``ValueError``), so a stored
structure produced by an older parser is re-parsed instead of trusted — the
same policy as aider's ``CACHE_VERSION`` in ``repomap.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "PARSE_VERSION",
    "Import",
    "Export",
    "Definition",
    "Call",
    "EnvVar",
    "Route",
    "PathRef",
    "FileStructure",
    "MODULE_SYSTEMS",
]

# Bump whenever the extraction rules or the JSON shape change.
# 2: class bases, static/accessor flags, function-valued class fields as methods,
#    computed import specifiers, env defaults and dynamic env reads, module_system.
# 3: Python structure, definitions for Go/Java/Rust/Ruby, Route.handler.
# 4: env keys named by a top-level string constant (`os.environ.get(NAME)`, `process.env[NAME]`).
# 5: the whole environment as a value (`{ ...process.env }`, `dict(os.environ)`): a dynamic read `*`.
# 6: also through a bare alias (`from os import environ as env`, then `dict(env)`).
# 7: TypeScript generic call signatures after a line without `;` parse (rag.parse.repair, repair 2).
# 8: also when the signature's `<` ends its line.
# 9: `import.meta.env`, `Deno.env` and `Bun.env` are read like `process.env`.
# 10: Hono route chains, `app.route(prefix, sub)` mounts and `basePath` prefixes.
# 11: Python `add_route` calls (Starlette `app.add_route("/x", v)`, aiohttp `router.add_route("GET", "/x", v)`).
# 12: Python env readers of Starlette (`Config`, `environ`) and python-decouple (`config`, `AutoConfig`).
# 13: bases of JavaScript constructor functions (`Child.prototype = new Base()`, `util.inherits(Child, Base)`).
PARSE_VERSION = 13

MODULE_SYSTEMS = ("esm", "commonjs", "mixed", "unknown")


@dataclass(slots=True)
class Import:
    """One dependency edge out of a file.

    Attributes:
        spec: the module specifier as written (``./lib/users``, ``express``). Python:
            the module (``a.b``, ``..a``) and, for ``from M import n``, the imported
            name joined to it (``M.n``; ``from . import views`` → ``.views``), one
            record per name (``n`` may be a submodule: see ``rag/parse/pymodules.py``).
        line: line of the import statement / ``require`` / ``import()`` call.
        kind: ``esm`` (``import … from``), ``side_effect`` (``import 'x'``),
            ``reexport`` (``export … from``), ``require`` (``require('x')`` with a
            literal specifier) or ``dynamic`` (``import('x')``, and every
            ``require(…)``/``import(…)`` whose specifier is computed); Python:
            ``import`` (``import a.b [as c]``), ``from`` (``from M import n``,
            ``from M import *``) or ``dynamic`` (``importlib.import_module('x')``).
        names: local names bound by the import (``import a, { b as c }`` →
            ``["a", "c"]``; ``const { x } = require()`` → ``["x"]``); for
            re-exports the names re-exported from the module (``*`` for all).
        resolved: repository path the specifier resolves to, or ``None`` for
            bare package names and unresolvable paths (see ``resolve_relative``).
        expression: for a computed specifier (``require(process.env.PLUGIN)``,
            ``import(name)``, ``require('./x/' + name)``, a template literal with
            substitutions), the argument's source text (whitespace collapsed, at most
            120 characters); ``spec`` then holds the same text, so every import has a
            printable specifier, ``kind`` is ``dynamic`` and ``resolved`` stays ``None``.
            ``None`` for literal specifiers. An env var read inside the argument is
            also an :class:`EnvVar` record.
    """

    spec: str
    line: int
    kind: str
    names: list[str] = field(default_factory=list)
    resolved: str | None = None
    expression: str | None = None


@dataclass(slots=True)
class Export:
    """One exported name.

    ``kind`` is ``named`` / ``default`` (ESM), ``reexport`` (``export … from``;
    name ``*`` for ``export *``), ``cjs_default`` (``module.exports = ident |
    class | function | expression``; name is the identifier or ``default``) or
    ``cjs_named`` (object-literal keys of ``module.exports = {…}``,
    ``module.exports.x =``, ``exports.x =``).
    """

    name: str
    line: int
    kind: str


@dataclass(slots=True)
class Definition:
    """A named code symbol with its line range.

    ``kind``: ``function``, ``generator``, ``class``, ``method``, ``field``,
    ``arrow`` (arrow function bound to a name), and for TypeScript files also
    ``interface``, ``type`` and ``enum``. ``parent`` is the enclosing class or
    object owner (``Router``, ``module.exports``) or the enclosing function.
    Private members keep their ``#`` (``#secret``). Python: ``class``,
    ``function``, ``method``, ``field`` (class-level assignments); the range of a
    decorated definition starts at its first decorator. Go/Java/Rust/Ruby also use
    ``struct``, ``trait``, ``module`` and ``macro`` (``rag/parse/definitions.py``).

    Class members: a class field whose value is an arrow function, a function
    expression or a generator (``handle = (req) => {…}``, ``static create =
    function () {}``) has kind ``method``, like ``m() {}``; other fields are
    ``field``. The kind never encodes modifiers; they are flags:

    Attributes:
        static: ``True`` for ``static`` methods and fields.
        accessor: ``get`` or ``set`` for getters and setters (kind ``method``;
            classes and object literals), else ``None``.
        bases: for kind ``class``, the ``extends`` base as written (``Base``,
            ``events.EventEmitter``, ``mixin(A, B)``; TypeScript type arguments
            dropped) — one item at most; for a TypeScript ``interface``, every
            extended type. ``implements`` clauses are not recorded. For a JavaScript ``function``
            (a constructor), the constructors its prototype extends in the function's scope
            (``Child.prototype = new Base()``, ``= Object.create(Base.prototype)``,
            ``util.inherits(Child, Base)`` and any ``x.inherits``, ``Object.setPrototypeOf(Child.prototype,
            Base.prototype)``).
            Python: every positional base class as written (``metaclass=`` and other keywords left out).
    """

    name: str
    kind: str
    start: int
    end: int
    parent: str | None = None
    static: bool = False
    accessor: str | None = None
    bases: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Call:
    """A call (or ``new``) site: dotted ``callee`` when simple (``path.join``,
    ``this.save``), else the called property name; ``enclosing`` is the name
    of the innermost named definition containing the call, ``None`` at top level."""

    callee: str
    line: int
    enclosing: str | None = None


@dataclass(slots=True)
class EnvVar:
    """A ``process.env`` read: ``process.env.X``, ``process.env['X']``, a
    destructured ``const { X } = process.env``, a dynamic ``process.env[k]``, or the
    whole environment used as a value (``{ ...process.env }``); in Python
    ``os.environ['X']``, ``os.environ.get('X')``, ``os.getenv('X')``, env readers,
    settings-class fields and ``os.environ`` as a value (``rag/parse/python_env.py``).

    Attributes:
        name: the variable's name; ``*`` for a dynamic read (the key is computed).
        line: line of the name (of the key expression for dynamic reads).
        default: the fallback literal as written in the source (quotes kept:
            ``8080``, ``'3000'``, ``true``) for ``process.env.X || <literal>``,
            ``process.env.X ?? <literal>`` (also at the end of a ``||``/``??``
            chain, and after ``Number()``/``parseInt()``/``parseFloat()``/``String()``/
            ``Boolean()``: ``parseInt(process.env.X, 10) || 8080``) and
            ``const { X = <literal> } = process.env``; ``None`` when
            there is none or the fallback is not a literal.
        dynamic: ``True`` for ``process.env[k]`` with a computed key, and for the whole
            environment used as a value.
        expression: for dynamic reads, the key expression's source text (``k``,
            ``name``, `` `${prefix}_URL` ``) or the environment as written
            (``process.env``, ``os.environ``), else ``None``.
    """

    name: str
    line: int
    default: str | None = None
    dynamic: bool = False
    expression: str | None = None


@dataclass(slots=True)
class Route:
    """An HTTP route or a router mount found in one file.

    Attributes:
        method: ``GET``, ``POST``, … , ``ALL``, ``USE`` (mount or middleware
            with a path) or ``ANY`` (``url.pathname`` check without a method check,
            a Django URL pattern); ``WEBSOCKET`` for Python websocket routes.
        path: the literal path (template literals keep ``${x}``).
        line: line of the method name / comparison.
        router: receiver expression (``app``, ``router``, ``this.app``) or
            ``None`` for ``url.pathname`` checks. Python: a name bound inside a
            function carries ``@<function>:<line>`` (``bp@test_nested:12``) so the
            routers of two functions are told apart; the code graph shows it without.
        target: for ``USE``, the identifier of the mounted router, if any.
        target_spec: for ``USE`` with an inline ``require('./x')``, its spec.
        match: ``exact``, ``prefix`` (``pathname.startsWith('/x')``, ``USE``) or
            ``regex`` (Django's ``re_path``/``url``; the path is the pattern without
            its ``^``/``$`` anchors).
        source: ``call`` (``app.get(…)``) or ``pathname`` (``url.pathname`` checks).
        prefix: mount prefix. The parser sets it only for routes inside an
            inline plugin (``fastify.register(function (i) { i.get(…) }, { prefix })``)
            and, in Python, for routes of a router built with a prefix
            (``Blueprint(url_prefix=…)``, ``APIRouter(prefix=…)``) or inside an inline
            route list (``include([…])``); the code graph derives the others from
            ``USE`` mounts across files.
        handler: the handling function when the parser knows it (Python: the
            decorated function, the Django view, ``view_func``/``endpoint``), else ``None``.
    """

    method: str
    path: str
    line: int
    router: str | None = None
    target: str | None = None
    target_spec: str | None = None
    match: str = "exact"
    source: str = "call"
    prefix: str | None = None
    handler: str | None = None

    @property
    def full_path(self) -> str:
        """``prefix + path`` with exactly one ``/`` at the seam (``/api`` + ``/users``)."""
        if not self.prefix:
            return self.path
        if self.path in ("", "/"):
            return self.prefix
        return self.prefix.rstrip("/") + "/" + self.path.lstrip("/")


@dataclass(slots=True)
class PathRef:
    """A ``path.join``/``path.resolve`` call: ``parts`` are the literal strings,
    ``__dirname``/``__filename`` kept by name, anything else as ``*``."""

    line: int
    parts: list[str] = field(default_factory=list)


_RECORD_TYPES: dict[str, type] = {
    "imports": Import,
    "exports": Export,
    "definitions": Definition,
    "calls": Call,
    "env_vars": EnvVar,
    "routes": Route,
    "path_refs": PathRef,
}


# Field names per record type, and which of them hold lists (copied by ``to_json``).
_FIELD_NAMES: dict[str, tuple[str, ...]] = {
    name: tuple(f.name for f in fields(record_type)) for name, record_type in _RECORD_TYPES.items()
}
_FIELD_SETS: dict[str, frozenset[str]] = {name: frozenset(names) for name, names in _FIELD_NAMES.items()}
_LIST_FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(f.name for f in fields(record_type) if f.default_factory is list)
    for name, record_type in _RECORD_TYPES.items()
}


def _record_json(item: Any, names: tuple[str, ...], lists: frozenset[str]) -> dict[str, Any]:
    """``asdict(item)`` for a flat record (str/int/bool/None values and lists of str), ~5× faster."""
    out = {name: getattr(item, name) for name in names}
    for name in lists:
        out[name] = list(out[name])
    return out


@dataclass(slots=True)
class FileStructure:
    """Everything the parser extracted from one file.

    ``has_error`` is ``True`` when the file had syntax errors; the lists then
    hold everything that still parsed (see ``rag/parse/repair.py``).

    ``module_system`` (one of ``MODULE_SYSTEMS``): ``esm`` when the file has
    ``import``/``export`` statements, ``commonjs`` when it calls ``require(…)``
    (or uses TypeScript's ``import x = require()``) or assigns ``module.exports``
    / ``module.exports.x`` / ``exports.x``, ``mixed`` when it has both, else
    ``unknown`` — except that an ``.mjs`` file without either is ``esm`` and a
    ``.cjs`` file ``commonjs`` (Node decides those by extension). ``import()``
    is valid in both systems and does not count.
    """

    path: str
    language: str
    imports: list[Import] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    env_vars: list[EnvVar] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    path_refs: list[PathRef] = field(default_factory=list)
    has_error: bool = False
    module_system: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (``json.dumps`` ready) including ``version``."""
        out: dict[str, Any] = {"version": PARSE_VERSION, "path": self.path, "language": self.language}
        for name in _RECORD_TYPES:
            names, lists = _FIELD_NAMES[name], _LIST_FIELDS[name]
            out[name] = [_record_json(item, names, lists) for item in getattr(self, name)]
        out["has_error"] = self.has_error
        out["module_system"] = self.module_system
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileStructure:
        """Rebuild from :meth:`to_json` output.

        Raises:
            ValueError: the document was written by another ``PARSE_VERSION``
                or is not a structure document (re-parse the file instead).
        """
        if not isinstance(data, dict) or data.get("version") != PARSE_VERSION:
            raise ValueError("stored file structure has another parser version; re-parse the file")
        try:
            lists = {}
            for name, record_type in _RECORD_TYPES.items():
                allowed = _FIELD_SETS[name]
                # A document of this PARSE_VERSION has exactly the fields (the common case: passed as they are);
                # unknown keys are dropped.
                lists[name] = [
                    record_type(**item) if item.keys() <= allowed
                    else record_type(**{k: v for k, v in item.items() if k in allowed})
                    for item in data.get(name, [])
                ]
            return cls(
                path=data["path"],
                language=data["language"],
                has_error=bool(data.get("has_error", False)),
                module_system=str(data.get("module_system", "unknown")),
                **lists,
            )
        except (KeyError, TypeError, AttributeError) as exc:  # AttributeError: a record that is not an object
            raise ValueError(f"malformed file structure document: {exc}") from exc
