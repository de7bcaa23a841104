"""The structure stream: files the code structure says a question is about, with a bonus each.

Signals from the parsed structure of the repository's files (JavaScript, TypeScript, Python):

- **dependants**: "which files import / would break without / depend on ``lib/x.js``?"
  (:data:`DEPENDANTS_INTENT` plus a named indexed file), and a list of the files that use or
  call something of a named file ("which files use the ``HandledError`` class defined in
  ``src/query/HandledError.ts``?", "which modules call ``resolve_color_default`` from
  ``src/click/globals.py``?": :data:`FILE_LIST` and :data:`USERS_INTENT`) → every file that
  imports the named files (:meth:`rag.context.codegraph.CodeGraph.dependants`), with a hard
  bonus of 10.5 − 0.01 × rank (≥ :data:`rag.search.lexical.HARD_BOOST`, so they stay first):
  non-test directories before test/bench/example ones, then the files that import a
  name the question writes ("which modules import ``run_in_threadpool`` from
  ``starlette/concurrency.py``?"), then by path. Without this, the named file, boosted as
  every named file is, was the whole answer;
- **dependencies**: the named file is the one doing the importing (:func:`file_is_subject`) in a
  question asking for a list ("which modules does ``lib/application.js`` import?", "which files are
  required by ``lib/app.js``?", ":data:`DEPENDENCIES_OF` ``lib/app.js``") → the files it imports
  (:meth:`~rag.context.codegraph.CodeGraph.dependencies`), ranked and boosted as dependants
  are; before, such a question got the file's dependants, the opposite direction. Without a list
  ("how is the pool used in ``src/server.js``?") the named file is the answer: neither signal;
- **package importers**: "which files import ``tornado``?" (a question asking for a list of
  files, :data:`FILE_LIST`, with an import verb followed by a package name, :data:`IMPORT_OF`,
  that some file imports) → those files, ranked and boosted as dependants are ("does the stop
  condition depend on time …" asks for no list: nothing); a package of the repository's own
  (an indexed folder of that name, or a Python module that is the whole distribution: ``bottle.py``), when the
  signal below finds nothing: the files importing its module (``import h11``, ``import bottle``); a possessive ("import ``typer``'s ``rich_utils``") names no package asked about;
- **importers of a name**: "which modules import ``createAction``?", "which files import from ``_abnf``?"
  (:data:`FILE_LIST`, :data:`IMPORT_VERB` and an identifier, when neither signal above answered) → the files
  whose imports bind that name or import the module of that name, ranked and boosted as dependants are (before:
  the file defining it led and its importers followed as lexical matches, mixed with files merely mentioning it); a
  name the question says it looks in ("in the ``h11`` package", :data:`_LOCATION`) is not one of them;
- **callers of a name**: "which modules call ``assertValidSchema`` …?", "which modules raise
  ``RemoteProtocolError`` directly, rather than raising ``LocalProtocolError``?" (:data:`FILE_LIST`,
  :data:`CALLS_OF` and an identifier after the verb, not set aside, when no signal above answered) → the files
  calling it (:func:`caller_table`), ranked and boosted as dependants are (before: a soft bonus, below the lexical
  match of the file defining it and of the one re-exporting it);
- **subclasses**: "which modules define a subclass of ``Environment``?", "which classes build on
  ``BaseReload``?" (:data:`FILE_LIST` and :data:`SUBCLASS_INTENT`, when no signal above answered) → the files
  defining a class that extends the class named after the verb, directly or not (:func:`subclass_files`), ranked
  and boosted as dependants are (before: the files defining and importing the class led);
- **environment**: "which file reads the process environment?" (:data:`ENV_INTENT`) →
  files that read an environment variable, 0.3; test, bench, fixture and example
  files only when no other file does, or the question asks about tests (they set
  variables up more than they read them);
- **symbols**: code-style identifiers the question writes (``compileTrust``,
  ``FST_ERR_X``, ``handle_request``), matched case-sensitively in the
  :func:`symbol_table` → 0.5 × the table weight (definition 1.0, export 0.8, env var 0.6);
- **callers**: when the question asks who calls, fires or registers through such an
  identifier (:data:`CALLERS_INTENT`, the verb within :data:`CALLER_WINDOW` characters of the identifier), the
  files that call it (:func:`caller_table`) → 0.6,
  above its definition (0.45, below it, when the question also asks where it is defined;
  0.3 for tests, benchmarks and examples unless the question is about tests).

A file's bonus is the largest of its signals. The result feeds
:func:`rag.search.lexical.rank_chunks` (``symbol_files``) and the structure stream of
:func:`rag.search.lexical.fuse_streams`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from rag.context.codegraph import CodeGraph
from rag.ingest.walk import classify_kind
from rag.parse.records import FileStructure, Import
from rag.search.lexical import LOW_VALUE_DIRS, explicit_paths
from rag.search.query import Query

__all__ = ["DEPENDANTS_INTENT", "USERS_INTENT", "DEPENDENCIES_OF", "IMPORT_VERB", "ENV_INTENT", "CALLERS_INTENT",
           "DEFINITION_INTENT", "IMPORT_OF", "FILE_LIST", "CALLS_OF", "CALLER_WINDOW",
           "SUBCLASS_INTENT", "SymbolTable", "CallerTable", "subclass_files",
           "symbol_table", "caller_table", "package_importers", "file_is_subject", "structure_bonus"]

# "Which files import X / would break if X were removed / depend on X?"
DEPENDANTS_INTENT = re.compile(
    r"\b(import(s|ed|ing)?|requires?|depend(s|ing|ants|ents)?|break|fail to load|need to change|"
    r"were (deleted|removed)|(is|was|were|got) removed|uses? of|who uses)\b", re.I)
_IT_IMPORTS = re.compile(r"\b(it|this (file|module))\s+(imports|requires|loads|pulls in)\b", re.I)
"""The named file doing the importing, as a pronoun: "In uvicorn/importer.py, what error do I get … when the module
exists but something it imports is missing?" asks about the file, not for its importers."""
# "Which files use / call / extend / load X (of a named file)?" — with FILE_LIST and a named file: its dependants.
USERS_INTENT = re.compile(
    r"\b(use[sd]?|using|call(s|ed|ing)?|invok(e|es|ed|ing)|instantiat(e|es|ed|ing)|extend(s|ed|ing)?|"
    r"subclass(es|ed|ing)?|reference[sd]?|load(s|ed|ing)?|pull(s|ed|ing)? in|"
    r"(built|build(s|ing)?|based|rest(s|ing)?) (up )?on( top of)?|derived? from|inherit(s|ed|ing)? from)\b", re.I)
# The named file does the importing: "does FILE import", "FILE requires", "imported by FILE",
# "dependencies of FILE", "FILE's imports" (FILE stands for the mention, see file_is_subject).
_IMPORTING = r"(?:imports?|requires?|uses?|depends? on|loads?|needs?|pulls? in|calls? into)"
_SUBJECT_FORMS = (
    r"\b(?:does|do|did)\s+(?:the\s+)?(?:file\s+|module\s+)?{file}\s+(?:itself\s+|directly\s+)?" + _IMPORTING + r"\b",
    r"{file}\s+(?:itself\s+|directly\s+)?(?:imports|requires|uses|depends on|loads|needs|pulls in)\b",
    r"\b(?:imported|required|used|loaded|needed|pulled in|called)\s+(?:by|in|from|within)\s+(?:the\s+)?"
    r"(?:file\s+|module\s+)?{file}",
    r"\b(?:dependencies|imports|requires)\s+(?:of|in)\s+(?:the\s+)?(?:file\s+|module\s+)?{file}",
    r"{file}'s\s+(?:dependencies|imports)\b",
)
_SUBJECT_SCREENS = tuple(tuple(re.compile(part, re.I) for part in form.split("{file}") if part)
                         for form in _SUBJECT_FORMS)
"""Each of :data:`_SUBJECT_FORMS` without the mention: its part before ``{file}`` and its part after it,
compiled once. A form can match only where both parts do, so :func:`file_is_subject` compiles (with the
mention) only the forms whose parts are in the question: the mention is in each pattern, Python's cache of
compiled patterns rarely has them, and compiling the five took 1.6 ms per mention here ("What does
lib/x.js do?", "Where is lib/x.js used?": a few µs now)."""
# "The dependencies / imports of FILE", "FILE's dependencies": a list, even without "which files".
DEPENDENCIES_OF = re.compile(r"\b(dependencies|imports)\s+of\b|'s\s+(dependencies|imports)\b", re.I)
# An import verb: "which modules import / require X?"
IMPORT_VERB = re.compile(r"\b(import(s|ed|ing)?|requir(e|es|ed|ing))\b", re.I)
# "Which classes subclass / extend / build on X?" — with FILE_LIST: the files extending the class named after the verb.
SUBCLASS_INTENT = re.compile(
    r"\b(?:(?P<strong>subclass(?:es|ed|ing)?(?: of)?|extend(?:s|ed|ing)?|inherit(?:s|ed|ing)?(?: \w+ly)?(?: from)?|"
    r"derived?(?: \w+ly)? from)|(?:built|build(?:s|ing)?|based)(?: \w+ly)? (?:up )?on(?: top of)?)\s+"
    r"(?:the |a |an |its |their )?"
    r"(?:(?:(?!(?:of|and|or|that|which|in|with|to|for|from)\b)[a-z][a-z-]*|(?P<acronym>[A-Z]{2,})) ){0,2}"
    r"[`'\"]?(?:[a-z_]\w*(?:'s\s+[`'\"]?|\.))*(?P<name>[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*)\b")
"""A subclass wording followed by the class it names, capitalised and not all capitals, perhaps after two words
describing it ("subclass of Environment", "build on BaseReload", "extend the compiler's CodeGenerator", "built
directly on top of QueueBase", "subclasses of the abstract Metric base class", "subclass the AST Visitor", "a subclass
of `TypedAttributeSet`", "subclass `starlette.middleware.base.BaseHTTPMiddleware`"): "which classes does Engine
extend?" asks the other way. An acronym describes the class only after a subclass verb: "which files build on the JSON
Schema spec?" names a standard (a break-it review)."""
_LOCATION = re.compile(r"\b(?:(?:in|inside|within|of|across) (?:the )?[`'\"]?(?P<name>[\w.-]+)[`'\"]? "
                       r"(?:package|library|project|codebase|code base|repo|repository)|"
                       r"(?:which|what) [`'\"]?(?P<owner>[\w.-]+)[`'\"]? (?:files|modules|sources))\b", re.I)
"""Where the question looks, not what it asks about: "which modules in the h11 package import … from _abnf?", "which
h11 files import from _abnf?" ask for the importers of ``_abnf``, not of ``h11``."""
_IN_FOLDER = re.compile(r"\b(?:in|inside|within|under) (?:the )?[`'\"]?(?P<name>[\w.-]+)")
""""… in ``h11`` …": where to look when ``h11`` is a folder at the repository's top ("which modules in h11 import
``normalize_and_validate``?", a break-it review)."""
_POSSESSIVE = re.compile(r"[`'\"]?['’]s\b")
"""A possessive after a name, perhaps after its closing quote: "typer's", "`typer`'s", "typer’s"."""
_DIRECT = re.compile(r"\bdirect(ly)?\b|\bwithout an intermediate\b", re.I)
"""Only the classes extending the named one themselves ("built directly on top of QueueBase")."""
# "Which file reads the process environment / environment variables?"
ENV_INTENT = re.compile(r"\b(process environment|environment variables?|env(ironment)? vars?|process\.env)\b", re.I)
# "Which files call / fire / invoke / register through X?" ("use" and "via" are left out: "when using
# async handlers" asks how X behaves, not who calls it)
CALLERS_INTENT = re.compile(
    r"\b(calls?|calling|called(?!\s+(?!(?:by|from|in|inside|within|with|on|when|if|before|after|at|during|once|"
    r"twice)\b)[`'\"]?[A-Za-z_$])|callers?|invok(e|es|ed|ing)|fire[sd]?|firing|emit(s|ted|ting)?|"
    r"trigger(s|ed|ing)?|register(s|ed|ing)?)\b", re.I)
"""Not "called" before a name: "the function called ``normalizeOptions``" names it (a break-it review)."""
CALLS_OF = re.compile(r"\b(?:call(?:s|ing)?|invok(?:e|es|ing)|rais(?:e|es|ing)|throw(?:s|ing)?|"
                      r"instantiat(?:e|es|ing)|construct(?:s|ing)?)\s+(?:the\s+|an?\s+)?[`'\"]?(?:new\s+)?[`'\"]?"
                      r"(?P<name>[A-Za-z_$][\w$.]*)")
"""A call verb and the name after it: "which modules call ``assertValidSchema`` …?", "which modules raise
``RemoteProtocolError``?", "which files construct a ``new FormidableError``?" (a raise, a ``throw new`` or a
``new`` calls the class; with :data:`FILE_LIST`, the list's noun its
subject, :data:`_LISTED_SUBJECT`: its callers are the answer). Not a participle: "the function called
``normalizeOptions``" names it."""
_LISTED_SUBJECT = re.compile(r"\b(?:files?|modules?|sources?|scripts?|classes|components|parts)\s+"
                             r"(?:(?!(?:do|does|did|i|we|you|to|use|should|can|could|would)\b)[\w./-]+\s+){0,3}$", re.I)
"""The list's noun right before a call verb, at most three words between them and no clause of another subject:
"which source modules raise …", "which files in the repo call …", not "which module do I use to call …"."""
_NOT_THIS = re.compile(r"\b(?:rather than|instead of|as opposed to|not|never|n't|without|except)\s*$", re.I)
"""What precedes a call verb the question sets aside: "… raise ``RemoteProtocolError`` directly, rather than
(without) raising ``LocalProtocolError``"."""
# "Where is X defined / implemented?": the definition stays first.
DEFINITION_INTENT = re.compile(r"\b(defines?|defined|declared|implemented|implementation|definition)\b", re.I)
# An import verb and the package after it: "import tornado", "require('lodash')", "depend on the events package",
# "pull in http-errors".
IMPORT_OF = re.compile(
    r"\b(?:import(?:s|ed|ing)?|requir(?:e|es|ed|ing)|depend(?:s|ing)? on|pull(?:s|ed|ing)? in)\s*\(?\s*(?:from\s+)?"
    r"(?:the\s+)?[`'\"]?"
    r"(?P<name>@?[A-Za-z_][\w.:-]*(?:/[\w.-]+)*)", re.I)
# The question asks for a list of files: "Which files / modules …", "List the sources that …".
_CLAUSE_WORDS = r"(?:do|does|did|happens?|happened|when|if|where|how|why|can|could|should|would|will)"
FILE_LIST = re.compile(r"\b(which|what|list|find|show)\b(?:[\s,]+(?!" + _CLAUSE_WORDS + r"\b)[\w./@'-]+){0,4}?[\s,]+"
                       r"(files?|modules?|sources?|scripts?|places|classes|types|components|parts)\b", re.I)
"""A question asking for a list of files, or of the code units they hold ("which schema types are built on
top of …", "which classes extend …", "which other source files …", "what are the modules that …"): the noun at
most four words after the question word, none of them a verb other than *be* or a clause's first word. Any
distance took "In uvicorn/importer.py, what error do I get … when the module exists …" and "What does
src/jinja2/bccache.py check before it trusts a cached bytecode file" for lists (16 questions of the eval sets,
none of them one)."""
SymbolTable = dict[str, dict[str, float]]
"""Symbol name → {path → weight}: 1.0 where it is defined, else 0.8 exported, else 0.6 an env var read."""
CallerTable = dict[str, set[str]]
"""Called name (the callee's last dotted part: ``this.notify`` → ``notify``) → paths that call it."""


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


def caller_table(structures: Mapping[str, FileStructure]) -> CallerTable:
    """The :data:`CallerTable` of ``structures`` (path → structure): each call site's callee, by its
    last dotted part (``this.notify``, ``events.notify`` and ``notify`` are all calls of ``notify``)."""
    table: CallerTable = {}
    for path, structure in structures.items():
        for call in structure.calls:
            table.setdefault(call.callee.rsplit(".", 1)[-1], set()).add(path)
    return table


def _package_root(spec: str) -> str:
    """The package an external import specifier names: ``lodash/merge`` → ``lodash``, ``@a/b/c`` →
    ``@a/b``, ``node:fs`` → ``fs``, Python's ``tornado.ioloop.IOLoop`` → ``tornado``."""
    spec = spec.removeprefix("node:")
    if spec.startswith("@"):
        return "/".join(spec.split("/")[:2])
    return re.split(r"[/.]", spec, maxsplit=1)[0]


def package_importers(structures: Mapping[str, FileStructure], name: str) -> list[str]:
    """Paths of the files that import the external package ``name`` (case-insensitive; an import
    resolved to an indexed file, a relative or a computed specifier is not a package), in the
    mapping's order."""
    wanted = name.lower()
    return [path for path, structure in structures.items()
            if any(i.resolved is None and i.kind != "dynamic" and not i.spec.startswith(".")
                   and _package_root(i.spec).lower() == wanted for i in structure.imports)]


def file_is_subject(text: str, mention: str) -> bool:
    """Whether the question asks what the file it mentions as ``mention`` (as written, e.g. ``lib/app.js``,
    ``flask.ctx``) imports, rather than who imports it: "which modules does ``lib/app.js`` import?",
    "``lib/app.js`` requires …", "imported / used / called by (in, from) ``lib/app.js``", "dependencies of
    ``lib/app.js``", "``lib/app.js``'s imports" (case-insensitive; the mention may be quoted or
    backticked). "Which modules call ``x`` from ``lib/app.js``?" is not: ``x`` comes from the file."""
    file = r"[`'\"]?" + re.escape(mention) + r"[`'\"]?"
    return any(re.search(form.replace("{file}", file), text, re.I)
               for form, parts in zip(_SUBJECT_FORMS, _SUBJECT_SCREENS)
               if all(part.search(text) for part in parts))  # the form's words are there: worth compiling


def _low_value(path: str) -> bool:
    """A test (by folder or name: ``x.test.js``, ``test_x.py``), benchmark, fixture or example file."""
    return bool(LOW_VALUE_DIRS.search(path)) or classify_kind(path) == "test"


def _hard_ranked(paths: list[str], *, first: set[str] = frozenset()) -> dict[str, float]:
    """The hard structural bonus 10.5 − 0.01 × rank: other files before tests, benchmarks, fixtures and
    examples (:func:`_low_value`), then ``first``, then by path."""
    ordered = sorted(paths, key=lambda p: (_low_value(p), p not in first, p))
    return {path: 10.5 - 0.01 * rank for rank, path in enumerate(ordered)}


def structure_bonus(
    query: Query,
    *,
    known_paths: list[str],
    structures: Callable[[], Mapping[str, FileStructure]],
    graph: Callable[[], CodeGraph],
    symbols: Callable[[], SymbolTable],
    callers: Callable[[], CallerTable] | None = None,
) -> dict[str, float] | None:
    """Path → bonus in (0, 10.5] for the files the structure ties to ``query`` (module docstring).

    Args:
        query: the analysed question.
        known_paths: every indexed path (to recognise the files the question names).
        structures, graph, symbols, callers: the repository's parsed structures, code graph,
            symbol table and caller table, asked for only when a signal needs them (they are
            built lazily and cached per index generation by :class:`rag.search.retriever.Retriever`);
            without ``callers`` there is no callers signal.

    Returns:
        The bonuses (insertion order: dependants or package importers, env readers, symbol files,
        callers), or ``None`` when no file qualifies.
    """
    out: dict[str, float] = {}
    if query.paths or query.modules:
        mentions = [*query.paths, *query.modules]
        subjects = [m for m in mentions if file_is_subject(query.text, m)]
        if subjects:   # "which modules does lib/app.js import?": what the file imports
            # only for a list of files: "how is the pool used in src/server.js?" asks about the file itself
            named: list[str] = []
            if FILE_LIST.search(query.text) or DEPENDENCIES_OF.search(query.text):
                importing = replace(query, paths=[m for m in query.paths if m in subjects],
                                    modules=[m for m in query.modules if m in subjects])
                named = explicit_paths(importing, known_paths)
            if named:
                code_graph = graph()
                deps = list(dict.fromkeys(d for p in named for d in code_graph.dependencies(p) if d not in named))
                out.update(_hard_ranked(deps))
        elif not _IT_IMPORTS.search(query.text) and (DEPENDANTS_INTENT.search(query.text) or (
                FILE_LIST.search(query.text) and USERS_INTENT.search(query.text))):
            named = explicit_paths(query, known_paths)
            if named:
                code_graph = graph()
                deps = sorted({d for p in named for d in code_graph.dependants(p) if d not in named})
                out.update(_hard_ranked(deps, first=_importing_names(structures, deps, named, query.identifiers)))
    local: set[str] = set()
    if not out and FILE_LIST.search(query.text):
        # a possessive qualifies what follows it ("import typer's rich_utils"): not the package asked about
        packages = {_package_root(m.group("name").rstrip(".:")) for m in IMPORT_OF.finditer(query.text)
                    if not _POSSESSIVE.match(query.text, m.end("name"))}
        # the repository's own: a folder of that name, or a Python module that is the whole distribution
        # (``bottle.py``, ``src/six.py``: ``import bottle`` resolves to it)
        local = {p for p in packages if any(k == p or k.startswith(f"{p}/") or k in (f"{p}.py", f"src/{p}.py")
                                            for k in known_paths)}
        importers = [path for name in sorted(packages - local) for path in package_importers(structures(), name)]
        out.update(_hard_ranked(list(dict.fromkeys(importers))))
    if not out and query.identifiers and FILE_LIST.search(query.text) and IMPORT_VERB.search(query.text):
        # "which modules import createAction?": the files whose imports bind a name the question writes
        tops = {path.split("/", 1)[0] for path in known_paths if "/" in path}
        wanted = set(query.identifiers) - {m.group("name") or m.group("owner") for m in _LOCATION.finditer(query.text)}
        wanted -= {m.group("name") for m in _IN_FOLDER.finditer(query.text) if m.group("name") in tops}
        importers = [path for path, structure in structures().items()
                     if any(_binds(i, wanted) or _module_name(i.resolved) in wanted for i in structure.imports)]
        out.update(_hard_ranked(importers))
    if not out and local:   # "which files import pkg?" of the repository's own package: the files importing it
        out.update(_hard_ranked([path for path, structure in structures().items()
                                 if any(_module_name(i.resolved) in local for i in structure.imports)]))
    if not out and callers is not None and FILE_LIST.search(query.text):
        # "which modules call assertValidSchema?": the files calling the name written after the verb
        called: set[str] = set()
        set_aside: set[str] = set()
        for m in CALLS_OF.finditer(query.text):
            name = m.group("name").rsplit(".", 1)[-1]
            if _NOT_THIS.search(query.text[max(0, m.start() - 20):m.start()]):
                set_aside.add(name)
            elif (m.group("name") in query.identifiers
                  or _written_as_code(query.text, m.start("name"), m.end("name"))) \
                    and _LISTED_SUBJECT.search(query.text[max(0, m.start() - 80):m.start()]):
                called.add(name)
        called -= set_aside
        if called:
            table = callers()
            out.update(_hard_ranked(sorted({path for name in called for path in table.get(name, ())})))
    named = [m.group("name") for m in SUBCLASS_INTENT.finditer(query.text)
             if m.group("strong") or not m.group("acronym")] if not out else []
    if named and FILE_LIST.search(query.text):
        # "which modules define a subclass of Environment?": the files whose classes extend it (where it is defined
        # follows by its words)
        out.update(_hard_ranked(subclass_files(structures(), named, indirect=not _DIRECT.search(query.text))))
    if ENV_INTENT.search(query.text):
        readers = [path for path, structure in structures().items() if structure.env_vars]
        main = readers if "test" in query.intents else [path for path in readers if not _low_value(path)]
        for path in main or readers:
            out[path] = max(out.get(path, 0.0), 0.3)
    if not query.identifiers:
        return out or None
    table = symbols()
    for name in query.identifiers:
        for path, weight in table.get(name, {}).items():
            out[path] = max(out.get(path, 0.0), 0.5 * weight)
    verbs = [m.span() for m in CALLERS_INTENT.finditer(query.text)] if callers is not None else []
    if verbs:
        # above the definition, unless the question asks where it is defined; tests' calls below both
        bonus = 0.45 if DEFINITION_INTENT.search(query.text) else 0.6
        called = callers()
        for name in _near_verbs(query.text, query.identifiers, verbs):
            for path in called.get(name.rsplit(".", 1)[-1], ()):
                weight = bonus if "test" in query.intents or not _low_value(path) else 0.3
                out[path] = max(out.get(path, 0.0), weight)
    return out or None


def subclass_files(structures: Mapping[str, FileStructure], names: Iterable[str], *,
                   indirect: bool = True) -> list[str]:
    """The files defining a class (or a JavaScript constructor function) that extends one of ``names``
    (case-sensitive), directly or (with ``indirect``)
    through a class that does (its parsed :attr:`rag.parse.records.Definition.bases`, as written: ``Base``,
    ``module.Base``, ``Base[T]``), in path order; ``[]`` when none does."""
    wanted = set(names)
    done: set[str] = set()
    files: set[str] = set()
    while wanted:   # each round: the classes extending the last round's
        done |= wanted
        found = {(path, d.name) for path, structure in structures.items() for d in structure.definitions
                 if d.kind in ("class", "function") and any(_base_name(b) in wanted for b in d.bases)}
        files |= {path for path, _ in found}
        wanted = {name for _, name in found} - done if indirect else set()
    return sorted(files)


CALLER_WINDOW = 40
"""Characters between a call verb and a name the callers signal counts for: "who calls ``connectPool``?", "where is
``connectPool`` defined, and who calls it?" (25), not "how does an ``HTTPException`` raised in a path operation become
the JSON error reply, …, and where is that default handler registered?" (a verb of another clause: the callers of a
class raised in 70 files of fastapi led, above the handler asked about)."""


def _written_as_code(text: str, start: int, end: int) -> bool:
    """Whether the word at ``text[start:end]`` is written as code: in backticks or quotes, or called (``Headers(``,
    a one-word class is no identifier by its form: "which files construct a ``new Headers(...)``?")."""
    return (start > 0 and text[start - 1] in "`'\"") or text.startswith("(", end)


_PRONOUN_OBJECT = re.compile(r"\s+(?:it|them|this|that|these|those)\b", re.I)
"""A call verb whose object is a pronoun ("who calls it?") asks about a name written before it, at any distance."""


def _near_verbs(text: str, names: Iterable[str], verbs: list[tuple[int, int]]) -> list[str]:
    """The ``names`` occurring in ``text`` (as whole words) within :data:`CALLER_WINDOW` characters of a call
    verb's span (either side), or anywhere before a call verb whose object is a pronoun ("``connectPool`` keeps
    timing out under load; which functions call it?", a break-it review), in their order."""
    pronoun_verbs = [end for _start, end in verbs if _PRONOUN_OBJECT.match(text, end)]
    out = []
    for name in names:
        for m in re.finditer(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
            if any(m.start() - end <= CALLER_WINDOW and start - m.end() <= CALLER_WINDOW for start, end in verbs) \
                    or any(m.end() <= end for end in pronoun_verbs):
                out.append(name)
                break
    return out


def _base_name(base: str) -> str:
    """A base class as written, without its module and type arguments: ``environment.Environment[T]`` →
    ``Environment``."""
    return base.split("[", 1)[0].split("(", 1)[0].rsplit(".", 1)[-1].strip()


def _module_name(path: str | None) -> str | None:
    """The name a module is imported by, from its indexed path: ``h11/_abnf.py`` → ``_abnf``, ``lib/x/index.js``
    and ``pkg/x/__init__.py`` → ``x``; ``None`` for ``None`` (an import resolved to no indexed file)."""
    if path is None:
        return None
    folder, _, name = path.rpartition("/")
    stem = name.split(".", 1)[0]
    return folder.rpartition("/")[2] if stem in ("index", "__init__") and folder else stem


def _binds(item: Import, wanted: set[str]) -> bool:
    """Whether an import binds one of the ``wanted`` names (``import { a }``; Python ``from m import a``,
    whose spec ends in ``.a``)."""
    return bool(wanted.intersection(item.names)) or item.spec.rsplit(".", 1)[-1] in wanted


def _importing_names(structures: Callable[[], Mapping[str, FileStructure]], paths: list[str], named: list[str],
                     identifiers: list[str]) -> set[str]:
    """Those of ``paths`` whose import of one of the ``named`` files binds a name the question writes."""
    if not identifiers:
        return set()
    wanted = set(identifiers)
    found = structures()
    return {path for path in paths if path in found and any(
        i.resolved in named and _binds(i, wanted)
        for i in found[path].imports)}
