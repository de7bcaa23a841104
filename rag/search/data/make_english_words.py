"""Rebuild ``english-words.txt.gz``: the common English words of :mod:`rag.search.english`.

Run offline, with the ``wordfreq`` package installed in a scratch environment (it is not a
dependency of the product: its data for 40 languages is 58 MB and its English list takes
~52 MB resident, for a set the product keeps in ~4 MB)::

    pip install --target /tmp/wf wordfreq==3.1.1
    PYTHONPATH=/tmp/wf python -m rag.search.data.make_english_words

Writes every word of wordfreq's ``large`` English list (R. Speer, *wordfreq*, 2022,
doi:10.5281/zenodo.7199437) made of ASCII letters only with a Zipf frequency of at least
:data:`rag.search.english.COMMON_ZIPF` (2.4: about one occurrence in four million words), one
per line, sorted, gzip-compressed. With wordfreq 3.1.1: 57,032 words, 157 KB. The data is
wordfreq's, under CC BY-SA 4.0 (``english-words.NOTICE.md``).
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

from rag.search.english import COMMON_ZIPF, WORDS_FILE


def main() -> None:
    """Write :data:`rag.search.english.WORDS_FILE` from the installed ``wordfreq``."""
    from wordfreq import iter_wordlist, zipf_frequency  # a build-time tool only

    words = []
    for word in iter_wordlist("en", "large"):  # most frequent first
        if zipf_frequency(word, "en") < COMMON_ZIPF:
            break
        if re.fullmatch("[a-z]+", word):
            words.append(word)
    data = "\n".join(sorted(set(words))).encode("ascii") + b"\n"
    Path(WORDS_FILE).write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{len(set(words))} words → {WORDS_FILE} ({Path(WORDS_FILE).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
