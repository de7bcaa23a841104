"""Question analysis: content terms, code identifiers, path mentions and intent.

Everything here is pure string work on the question; nothing touches the
index. The retriever uses a :class:`Query` to build a safe FTS5 expression
(every term double-quoted, so user text never reaches ``MATCH`` raw) and to
weigh its ranking signals.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.ingest.walk import IMAGE_EXTENSIONS, TEXT_EXTENSIONS
from rag.text import STOPWORDS, light_stem, query_terms, synonyms_of

__all__ = ["FILE_EXTENSIONS", "Query", "analyze", "fts_expression", "fts_phrases", "version_terms", "version_pattern", "MAX_QUERY_TERMS"]

MAX_QUERY_TERMS = 40

FILE_EXTENSIONS: frozenset[str] = frozenset({ext[1:] for ext in TEXT_EXTENSIONS | IMAGE_EXTENSIONS}) | frozenset(
    {"mdx", "xml", "csv", "sql", "lock", "log", "vue", "svelte", "map"})
"""File extensions (no dot, lower-case: the indexed text and image types, and a few more): a dotted
mention ending in one (``package.json``, ``Node.js``) may be a file name, so its last word is not
taken for a member name."""
_MEMBER_MENTION = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
# A name written as code writes a call or a member access: "populate()", ".extend()", ".use" (not prose's
# "(really)" or "e.g."): the word is a name to look up, however plain ("extend", "use").
_CALL_OR_MEMBER = re.compile(r"(?<![\w$.])\.?([A-Za-z_$][\w$]*)\(\)|(?<![\w$.])\.([A-Za-z_$][\w$]{1,})\b(?!\.\w)")


# A path-like mention: "lib/view.js", "./src/a.ts", "README.md", "docs/api".
_PATH_MENTION = re.compile(r"(?<![\w@])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,6}\b|(?<![\w@])(?:[\w.-]+/)+[\w.-]+")
# A dotted module name as Python writes it ("flask.sessions", "django.db.models"); resolved to a file
# only when one of that module path is indexed (lexical.explicit_paths), so attribute chains cost nothing.
_MODULE_MENTION = re.compile(r"(?<![\w./@$-])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?![\w/(-])")
# "e.g", "i.e": abbreviations, neither paths nor modules.
_ABBREVIATION = re.compile(r"(?:[a-z]\.){1,3}[a-z]?", re.I)
# A version number: "4.0", "v1.2.3" (not part of a path, a longer number or a word).
_VERSION = re.compile(r"(?<![\w./-])v?(\d+(?:\.\d+){1,3})(?![\w/-]|\.\w)", re.I)
# A code identifier as written: camelCase, PascalCase with a lower→upper hump or after an acronym
# (``SQLParseError``, ``URLSearchParams``; not ``URLs`` or ``APIs``), snake_case, SCREAMING_CASE, $-prefixed, or
# letters mixed with digits.
_IDENTIFIER = re.compile(
    r"\b(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*|"
    r"[A-Za-z0-9]*_[A-Za-z0-9_]+|[A-Z][A-Z0-9]{2,}|[A-Za-z]+[0-9]+[A-Za-z0-9]*)\b"
)

_INTENTS: dict[str, re.Pattern[str]] = {
    # The user wants prose: how to use, whether to, what is supported.
    "docs": re.compile(
        r"\b(how (do|can|should|would) (i|we|you)|should (i|we)|is it (a )?good|recommend\w*|best practice|"
        r"guide|tutorial|documentation|docs?|readme|getting started|supported|support|install\w*|"
        r"scaffold\w*|generator|good idea|when to|lts|documented|write-?ups?|guidance|"
        r"known (limitation|issue|problem|bug)s?|(project|library|package|readme|docs?) (suggests?|recommends?|says?)|"
        r"(is there|any|a quick|an) examples?)\b",
        re.I,
    ),
    # The project's history: a release, a change between versions, an upgrade of the package. Not the words a
    # versioning, packaging, pool or protocol library uses for its subject ("a prerelease version", "the major
    # version", "a compatible release clause", "sorts before 1.0.0", "v1.2.3", "released back to the pool", "an
    # upgrade request", "upgrading the connection", "database migrations", "files that changed"): a version number
    # counts after a change verb ("fixed in 2.32.0", "removed in httpx 0.28.0") or as a release ("in the 4.0
    # release", "the v5 line"), an upgrade when the user does it ("after upgrading", "we upgraded to v3").
    "release": re.compile(
        r"\b(change ?logs?|release notes?|(change|release|version) history|history (file|page)|deprecat\w*|"
        r"breaking changes?|taken out|since when|"
        r"(upgrade|migration) (guide|notes?|path|instructions)|migrat(e|ing) (from|to) (v|version |\w+ )?\d|"
        r"(after|since|when|before|while) upgrading|(i|we|i've|we've|we're|i'm|just) upgrad(ed|ing)|"
        r"upgrad(e|ed|ing) (to|from) (v|version |\w+ )?\d|"
        r"(which|what|each|every|major|minor|patch|next|latest|last|recent|previous|older|newer|new|this|that) "
        r"releases?(?! (type|clause|segment|number|tag|candidate|packet|build)s?\b)|"
        r"(which|what|in which) versions? (of \S+ )?(added|removed|introduced|dropped|changed|deprecated|fixed|made|"
        r"broke|renamed|shipped)|"
        r"when (was|were|did) .{1,60}? (added|removed|introduced|dropped|changed|deprecated|renamed|released)|"
        r"what('s| has| was| have)? changed|"
        r"changed (in|between|since|after) (v?\d|versions?|releases?|the (last|latest|new))|"
        r"released (in|on|as of) (v|version |\w+ )?\d|"
        r"(fixed|added|removed|introduced|dropped|renamed|changed|shipped|landed|broke|broken|new|available) "
        r"(\w+ ){0,3}?(in|since|after|as of) (\w+ )?(version |release |v)?\d+(\.\d+)*(?![\w+-]|\.\d)|"
        r"(in|since|as of) (the )?v?\d+(\.\d+)* (release|line|branch|series)|"
        r"(to|from|in|since|on|for) v\d+(?![\w.])|v\d+ (line|release|branch|series))\b",
        re.I,
    ),
    # The user wants the code location.
    "location": re.compile(
        r"\b(where|which (file|module|function|class|method)|defined?|defines|implemented|"
        r"implementation|implements|declared|raised|thrown|emitted|set up|read)\b",
        re.I,
    ),
    # The user asks for source files by name: "which source files …", "in the library code".
    "source": re.compile(r"\b(source|library|implementation) (files?|code|modules?)\b", re.I),
    # The user asks how the code does it, not how to use it: "how does X work under the hood?", "what does X
    # actually do?", "how is X stored internally?" (ten eval questions, all answered by code; a README led four).
    # Not how to use it: "Can I pass my own agent instead of the one it uses internally?", "What do I actually do to
    # disable it?" (a break-it review): "internally" counts in a wh- question, "actually do" of the code.
    "internals": re.compile(r"\b(under the hood|behind the scenes|under the covers|implementation details?|"
                            r"(how|what|where|why|which)\b[^?.;]{0,80}?\binternally|"
                            r"what (does|do) (?!(i|we|you|users?|people)\b)[^?.;]{1,80}? actually (do|return))\b",
                            re.I),
    # The user asks what the code does in a case: "what happens when…", "why does…", "how is X resolved?"
    "behaviour": re.compile(
        r"\b(what happens|what (does|did) .{1,80}? (do|get|return|send|produce)|what ends up|what stops|"
        r"why (does|is|are|doesn't|don't|isn't|aren't|can't)|why (do|might|would) (?!(i|we|you)\b)|"
        r"how (is|are) .{1,60}? (handled|resolved|decided|computed|combined|loaded|parsed|detected|chosen|"
        r"avoided|discovered|interpreted|built|matched|checked|applied|enforced|prevented|stored|kept|serialized|"
        r"serialised|escaped|validated|sent|written|rejected|passed|merged|cached|closed|cancelled|canceled))\b",
        re.I,
    ),
    # The user asks about the package's manifest or build configuration.
    "config": re.compile(
        r"\b(dependenc(y|ies)|devdependencies|peer ?dependenc\w*|npm scripts?|package\.json|package manifest|"
        r"tsconfig|config(uration)? files?|build (setup|config\w*)|exports map)\b",
        re.I,
    ),
    "test": re.compile(r"\b(tests?|testing|spec|specs|test suite|unit tests?|fixtures?)\b", re.I),
    # The user asks about the type declarations: "the type docs", "TypeScript", "index.d.ts", "which interface
    # describes …" (not "root types", "the backoff type" or "interface implementations", which are code: 35 of 44
    # eval questions saying "type" or "types" wanted no declaration, and a declaration, no longer demoted, led a
    # GraphQL question on "root types … and interface implementations")
    "types": re.compile(r"\b(typescript|typings|d\.ts|pyi|type (docs?|documentation|definitions?|declarations?|"
                        r"annotations?|signatures?|hints?|parameters?)|types? (files?|docs?)|declared types?|"
                        r"generics?|interfaces?(?! implement))\b", re.I),
    "architecture": re.compile(r"\b(architecture|overview|structure|design|layers?|components?|how is .* organi[sz]ed)\b", re.I),
    "security": re.compile(r"\b(security|secure|secrets?|vulnerab\w*|sanitiz\w*|escape\w*|inject\w*|xss|csrf)\b", re.I),
    "deploy": re.compile(r"\b(deploy\w*|webhook\w*|systemd|docker\w*|ci|pipeline|release process)\b", re.I),
}


# A mention that excludes what it names: "(not tests)", "outside the test suite", "excluding specs".
_NEGATED = re.compile(r"((^|[(,:;]\s*)(not|no)|\bnon|\boutside(\s+of)?|\bexcluding|\bexcept(\s+for)?|\bother\s+than|"
                      r"\bbesides|\bapart\s+from)[\s-]+(the\s+|any\s+|its\s+)?$", re.I)
"""What precedes a mention that excludes it; "not"/"no" only opening a sentence or an aside ("(not tests)",
"no docs, only code"), not in a negated statement ("are there no tests for X?" asks for tests)."""
_NEGATION_WINDOW = 40
"""Characters before a mention searched for its exclusion (a bounded look-back: linear in the question)."""


@dataclass(slots=True)
class Query:
    """An analysed question.

    Attributes:
        text: the question as given (already length-capped by the caller).
        terms: content terms (lower-case, identifier-split, stopwords out).
        identifiers: code identifiers written in the question, as written.
        paths: path-like mentions (``lib/view.js``), without a leading ``./``.
        modules: dotted names (``flask.sessions``; ``flask.ctx`` is among the paths too): which of
            them name an indexed Python module is decided against the index
            (:func:`rag.search.lexical.explicit_paths`).
        intents: subset of ``docs release location source behaviour config test types architecture security
            deploy`` (a mention that excludes it, "(not tests)", does not count).
        stems: light stems of ``terms`` (for path and heading comparisons).
    """

    text: str
    terms: list[str]
    identifiers: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    intents: set[str] = field(default_factory=set)
    stems: dict[str, str] = field(default_factory=dict)


def analyze(question: str) -> Query:
    """Analyse ``question`` into a :class:`Query` (never raises)."""
    paths = []
    for match in _PATH_MENTION.finditer(question):
        mention = match.group(0).rstrip(".")
        while mention.startswith("./") or mention.startswith("../"):
            mention = mention.split("/", 1)[1]
        if "/" in mention or re.search(r"\.[A-Za-z]{1,5}$", mention):
            # "e.g" / "i.e" and version numbers are not paths.
            if not _ABBREVIATION.fullmatch(mention) and not re.fullmatch(r"v?\d+(?:\.\d+)+", mention, re.I):
                paths.append(mention)
    # "flask.ctx" also looks like a file with a ".ctx" extension: it stays among the paths too
    modules = [m.rstrip(".") for m in _MODULE_MENTION.findall(question)
               if not _ABBREVIATION.fullmatch(m.rstrip("."))]
    identifiers = [m for m in _IDENTIFIER.findall(question) if len(m) >= 3 and m.lower() not in STOPWORDS]
    # obj.member as code writes it (app.use, req.ip, ctx.request.body): the member is a name to look up
    # and a topic word, even a short or common one ("use", "ip")
    members = [member for m in paths if _MEMBER_MENTION.fullmatch(m)
               and len(member := m.rsplit(".", 1)[1]) >= 2 and member.lower() not in FILE_EXTENSIONS]
    identifiers += members
    written_as_code = [a or b for a, b in _CALL_OR_MEMBER.findall(question)]
    identifiers += [name for name in written_as_code if len(name) >= 2 and name.lower() not in FILE_EXTENSIONS]
    terms = query_terms(question)
    terms += [t for t in (member.lower() for member in members) if t not in terms]
    # The extension of a path with a folder ("js" of lib/view.js) is not a topic word. A bare dotted
    # name keeps its last word: it is as often a method or property as a file (ctx.body, res.json,
    # app.param), and a file so named (package.json) matches that word anyway.
    extensions = {m.rsplit(".", 1)[1].lower() for m in paths if "/" in m and "." in m.rsplit("/", 1)[-1]}
    written = {w.lower() for w in re.findall(r"[A-Za-z0-9_$]+", _PATH_MENTION.sub(" ", question))}
    terms = [t for t in terms if t not in extensions or t in written]
    terms = list(dict.fromkeys(terms + version_terms(question)))[:MAX_QUERY_TERMS]
    intents = {name for name, pattern in _INTENTS.items()
               if any(not _NEGATED.search(question[max(0, m.start() - _NEGATION_WINDOW):m.start()])
                      for m in pattern.finditer(question))}
    return Query(
        text=question,
        terms=terms,
        identifiers=list(dict.fromkeys(identifiers)),
        paths=list(dict.fromkeys(paths)),
        modules=list(dict.fromkeys(modules)),
        intents=intents,
        stems={t: light_stem(t) for t in terms},
    )


def version_terms(question: str) -> list[str]:
    """The version numbers written in ``question`` as phrase terms: ``"the 4.0 release"`` →
    ``["4 0"]``, ``"v1.2.3"`` → ``["1 2 3"]``.

    The index splits ``4.0.0`` into the words ``4 0 0`` (:func:`rag.text.index_text`) and
    :func:`rag.text.query_terms` drops one-character words, so without this a version is lost
    from the question. The quoted FTS5 phrase ``"4 0"`` matches those words next to each other
    (``4.0`` and ``4.0.0``, not ``14.0``); :func:`version_pattern` matches it in a chunk's text.
    """
    return list(dict.fromkeys(" ".join(m.group(1).split(".")) for m in _VERSION.finditer(question)))


def version_pattern(term: str) -> re.Pattern[str] | None:
    """For a :func:`version_terms` term (``"4 0"``), the regex of that version written in text
    (``4.0``, ``v4.0``, ``4.0.0``; not ``14.0`` or ``4.01``); ``None`` for any other term."""
    parts = term.split(" ")
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        return None
    return re.compile(r"(?<![\w.])v?" + r"\.".join(parts) + r"(?![\d]|\.\d*[A-Za-z_])")


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_phrases(terms: list[str]) -> list[str]:
    """The quoted FTS5 phrases of ``terms``: every term and its synonyms, once each, in order.

    ``["db", "pool"]`` → ``['"database"', '"db"', '"pool"']``. Quoting makes FTS5
    syntax in user text (``NEAR``, ``*``, ``:``, ``-``, parentheses) inert.
    """
    seen: dict[str, None] = {}
    for term in terms:
        for t in sorted(synonyms_of(term)):
            seen.setdefault(t, None)
    return [_quote(t) for t in seen]


def fts_expression(terms: list[str]) -> str:
    """An FTS5 MATCH expression: :func:`fts_phrases` OR-ed.

    ``["db", "pool"]`` → ``"database" OR "db" OR "pool"``. Returns ``""`` for no terms.
    """
    return " OR ".join(fts_phrases(terms))
