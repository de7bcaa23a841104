"""Text analysis shared by indexing and querying.

Both sides go through the same functions so that a word in a question and the
same word in the code meet in the index:

* ``identifier_parts("getUserById")`` → ``["get", "user", "by", "id"]``; the
  indexer writes the parts *and* the joined lower-case form (``getuserbyid``),
  so both ``get user by id`` and ``getUserById`` find it (DESIGN.md §3).
* Stemming is done by SQLite FTS5's ``porter`` tokenizer on both sides (the
  Porter 1980 algorithm); :func:`light_stem` is a lighter suffix stripper used
  only where we compare words outside FTS (path and heading matches).
* Stopwords: a small English list plus question words, so that "how does the
  app" does not match every file that contains "the".
* The coding-synonym table maps abbreviations to their long forms and back
  (``db`` ↔ ``database``); a query term expands to an OR-group of its synonyms.
"""
from __future__ import annotations

import functools
import re

__all__ = [
    "STOPWORDS",
    "SYNONYMS",
    "identifier_parts",
    "index_text",
    "query_terms",
    "light_stem",
    "synonyms_of",
    "words",
]

# A word: letters/digits/underscore/$ runs (identifiers and plain words alike).
_WORD = re.compile(r"[A-Za-z0-9_$]+")
# camelCase / PascalCase / ACRONYMWord / digit boundaries.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each else etc even ever every few for from further get gets got had hadn has hasn have
    haven having he her here hers herself him himself his how however i if in into is isn it its
    itself just let lets ll me might more most much must mustn my myself need no nor not now of off
    on once one only or other ought our ours ourselves out over own per please re same shall shan
    she should shouldn so some such than that the their theirs them themselves then there these they
    this those through thus to too under until up upon us use used uses using ve very via was wasn
    way we well were weren what whatever when whenever where wherever whether which while who whom
    whose why will with within without won would wouldn yes yet you your yours yourself yourselves
    s t d m o y
    does happen happens happened work works working make makes made thing things something anything
    actually really still tell show explain describe mean means find kind sort part piece
    """.split()
)

# Coding synonyms (issue 2): each group is a set of interchangeable words.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("db", "database"),
    ("auth", "authentication", "authorization", "authenticate", "authorize"),
    ("config", "configuration", "configure", "cfg", "conf"),
    ("env", "environment"),
    ("repo", "repository"),
    ("req", "request"),
    ("res", "response"),
    ("err", "error"),
    ("msg", "message"),
    ("fn", "function", "func"),
    ("param", "parameter", "params", "parameters"),
    ("impl", "implementation", "implement"),
    ("perf", "performance"),
    ("async", "asynchronous"),
    ("sync", "synchronous"),
    ("args", "arguments", "argv"),
    ("dir", "directory"),
    ("init", "initialize", "initialise", "initialization"),
    ("dev", "development"),
    ("prod", "production"),
    ("ctx", "context"),
    ("cb", "callback"),
    ("opts", "options"),
)
SYNONYMS: dict[str, frozenset[str]] = {}
for _group in _SYNONYM_GROUPS:
    for _w in _group:
        SYNONYMS[_w] = SYNONYMS.get(_w, frozenset()) | frozenset(_group)


def words(text: str) -> list[str]:
    """Raw word tokens (identifiers kept whole), in order."""
    return _WORD.findall(text)


def identifier_parts(token: str) -> list[str]:
    """Split one identifier into lower-case parts.

    ``getUserById`` → ``[get, user, by, id]``; ``handle_request`` →
    ``[handle, request]``; ``HTTPServer2`` → ``[http, server, 2]``;
    ``kRegisteredPlugins`` → ``[k, registered, plugins]``.
    """
    parts: list[str] = []
    for piece in re.split(r"[_$]+", token):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


@functools.lru_cache(maxsize=262_144)
def _expand(token: str) -> tuple[str, ...]:
    """Index terms of one word: its parts, plus the joined lower-case form for compounds (memoised)."""
    parts = identifier_parts(token)
    joined = re.sub(r"[_$]+", "", token.lower())
    if len(parts) > 1 and joined:
        return (joined, *parts)
    return tuple(parts) or ((joined,) if joined else ())


def index_text(text: str) -> str:
    """The FTS5 body for ``text``: every word, plus identifier parts and joined forms.

    ``const getUserById = x`` → ``"const getuserbyid get user by id x"``.
    Output is space-separated lower-case tokens; FTS5 then applies Porter stemming.
    """
    out: list[str] = []
    for token in _WORD.findall(text):
        out.extend(_expand(token))
    return " ".join(out)


def synonyms_of(term: str) -> frozenset[str]:
    """The synonym group of ``term`` (including itself); a singleton if none."""
    return SYNONYMS.get(term, frozenset((term,)))


def query_terms(question: str) -> list[str]:
    """Content terms of a question: identifier-split, lower-case, stopwords out, unique, in order.

    Identifiers also contribute their joined form (``parseUrl`` → ``parseurl``,
    ``parse``, ``url``). Single characters and pure punctuation never survive.
    """
    seen: dict[str, None] = {}
    for token in _WORD.findall(question):
        for term in _expand(token):
            if len(term) < 2 or term in STOPWORDS or term.isdigit() and len(term) < 2:
                continue
            seen.setdefault(term, None)
    return list(seen)


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "es", "ed", "ly", "s")


@functools.lru_cache(maxsize=262_144)
def light_stem(word: str) -> str:
    """A light English suffix stripper (S-stemmer-like, Harman 1991, extended).

    Used outside FTS5 for path and heading comparisons. ``routes`` → ``rout``,
    ``routing`` → ``rout``, ``parsers`` → ``pars``; words of ≤ 4 letters are kept.
    """
    if len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            if suffix == "ies" or suffix == "ied":
                stem += "y"
            return stem.rstrip("e") if len(stem) > 3 else stem
    return word.rstrip("e") if len(word) > 4 else word
