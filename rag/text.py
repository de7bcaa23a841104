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

import re
from collections.abc import Callable

__all__ = [
    "CONTROL_CHARACTERS",
    "DIRECTION_CONTROLS",
    "TAG_CHARACTERS",
    "STOPWORDS",
    "SYNONYMS",
    "identifier_parts",
    "index_text",
    "query_terms",
    "light_stem",
    "light_stems",
    "stem_set",
    "synonyms_of",
    "words",
]

CONTROL_CHARACTERS = "\x00-\x1f\x7f-\x9f"
"""The C0 and C1 controls and DEL, as a regular-expression class body (a terminal obeys escape sequences;
a newline splits a one-line name)."""
DIRECTION_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""The text-direction controls, as a class body (a right-to-left override makes ``gnp.exe`` read ``exe.png``;
Unicode TR 9, the "Trojan Source" attacks, CVE-2021-42574)."""
TAG_CHARACTERS = "\U000e0000-\U000e007f"
"""The tag characters, as a class body: invisible text a model still reads ("ASCII smuggling")."""

# A word: letters/digits/underscore/$ runs (identifiers and plain words alike).
_WORD = re.compile(r"[A-Za-z0-9_$]+")
# camelCase / PascalCase / ACRONYMWord / digit boundaries; a plural acronym (UUIDs, URLs, parseURLsFrom) is one word.
_CAMEL = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

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
    # a line ending's names: code writes "\r\n" and says "newline" where a question says CRLF
    ("crlf", "eol", "newline", "newlines", "linebreak", "linebreaks"),
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
    ``kRegisteredPlugins`` → ``[k, registered, plugins]``; ``parseURLsFrom`` → ``[parse, urls, from]``
    (a plural acronym is one word, not ``UR`` + ``Ls``).
    """
    parts: list[str] = []
    for piece in re.split(r"[_$]+", token):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


MEMO_MAX_WORDS = 262_144
"""Distinct words a tokeniser memo holds before it starts afresh (bounds its memory to a few tens
of MB; eslint 9.39.5's 2,785 chunks have 11,239 distinct words in 428,220)."""


class _Memo(dict):
    """``word → compute(word)``, computed on a miss (``dict.__missing__``) and remembered, so a hit is
    one C-level dict lookup with no Python frame; emptied once it holds :data:`MEMO_MAX_WORDS`.

    Per process, like the ``functools.lru_cache`` it replaces (which cost a Python call, a lock
    and a linked-list update per word)."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, word):
        if len(self) >= MEMO_MAX_WORDS:
            self.clear()
        value = self[word] = self.compute(word)
        return value


def _expand_uncached(token: str) -> tuple[str, ...]:
    """Index terms of one word: its parts, plus the joined lower-case form for compounds."""
    if token.isdigit() or (token.isalpha() and token.islower()):
        return (token,)  # one part, equal to the word (the common case: 3/4 of the words of code)
    parts = identifier_parts(token)
    joined = re.sub(r"[_$]+", "", token.lower())
    if len(parts) > 1 and joined:
        return (joined, *parts)
    return tuple(parts) or ((joined,) if joined else ())


_EXPANSIONS = _Memo(_expand_uncached)
# ASCII bytes of one word (``_WORD``'s alphabet) → its terms, space-joined ("" for ``$``, ``__``).
_EXPANDED_BYTES = _Memo(lambda word: " ".join(_expand_uncached(word.decode("ascii"))))
# bytes.translate table: ``_WORD``'s characters stay, every other byte becomes a space.
_NON_WORD_TO_SPACE = bytes(b if chr(b) in "_$" or (chr(b).isascii() and chr(b).isalnum()) else 0x20
                           for b in range(256))


def _expand(token: str) -> tuple[str, ...]:
    """Index terms of one word (:func:`_expand_uncached`, memoised)."""
    return _EXPANSIONS[token]


def index_text(text: str) -> str:
    """The FTS5 body for ``text``: every word, plus identifier parts and joined forms.

    ``const getUserById = x`` → ``"const getuserbyid get user by id x"``.
    Output is space-separated lower-case tokens; FTS5 then applies Porter stemming.

    This is the hot loop of indexing (every chunk, heading, path and symbol list), so the words
    are found without a regex: the text is encoded as UTF-8 and ``bytes.translate`` turns every
    byte outside ``[A-Za-z0-9_$]`` into a space before ``bytes.split()``. That gives exactly the
    words of ``_WORD.findall(text)``: ``_WORD`` matches ASCII only, and in UTF-8 every byte of a
    non-ASCII character is ≥ 0x80. Each word's space-joined terms are memoised (:class:`_Memo`),
    so a repeated word costs one dict lookup inside ``map``; words without terms (``$``, ``__``)
    give ``""`` and are dropped, so spaces are never doubled. Measured on eslint 9.39.5's 2,785
    chunks (4.3 MB, one core, best of 9): 0.21 s → 0.12 s on first sight of the words, 0.16 s →
    0.07 s once they are known; ``tests/rag/test_text.py`` checks the output against the
    word-by-word definition over real files.
    """
    words_ = text.encode("utf-8", "surrogatepass").translate(_NON_WORD_TO_SPACE).split()
    return " ".join(filter(None, map(_EXPANDED_BYTES.__getitem__, words_)))


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


def light_stem(word: str) -> str:
    """A light English suffix stripper (S-stemmer-like, Harman 1991, extended).

    Used outside FTS5 for path and heading comparisons. ``routes`` → ``rout``,
    ``routing`` → ``rout``, ``parsers`` → ``pars``; words of ≤ 4 letters are kept.
    Memoised per word (:data:`_STEMS`).
    """
    return _STEMS[word]


def _light_stem_uncached(word: str) -> str:
    if len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            if suffix == "ies" or suffix == "ied":
                stem += "y"
            return stem.rstrip("e") if len(stem) > 3 else stem
    return word.rstrip("e") if len(word) > 4 else word


_STEMS = _Memo(_light_stem_uncached)


def light_stems(text: str) -> set[str]:
    """The distinct :func:`light_stem` of the space-separated words of ``text`` (one memo lookup per word,
    no Python call: for the hot loops of retrieval)."""
    return set(map(_STEMS.__getitem__, text.split()))


def stem_set(text: str) -> str:
    """The sorted, space-joined distinct :func:`light_stem` of the space-separated words of ``text``
    (the index's per-chunk ``stems`` column, used for coverage scoring)."""
    return " ".join(sorted(set(map(_STEMS.__getitem__, set(text.split())))))
