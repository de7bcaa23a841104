"""The words that name the languages and formats of a repository's indexed files.

"Where is the kotlin config object?" names the kind of file it asks about, not a topic the code must
mention: a Kotlin file rarely says "kotlin". Such words are treated like the repository's own package name
(``meta_terms`` of :func:`rag.search.lexical.rank_chunks` and :func:`rag.search.lexical.absent_terms`): no
evidence that the repository answers, and never "absent" while a file of that type is indexed (a break-it
review got "No indexed file mentions kotlin." beside an indexed ``Config.kt``). A language the repository
does not hold stays an ordinary word ("where is the haskell config?" in a Kotlin repository).
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["LANGUAGE_WORDS", "language_words"]

LANGUAGE_WORDS: dict[str, tuple[str, ...]] = {
    "py": ("python",), "pyi": ("python",),
    "js": ("javascript",), "mjs": ("javascript",), "cjs": ("javascript",), "jsx": ("javascript", "jsx"),
    "ts": ("typescript",), "mts": ("typescript",), "cts": ("typescript",), "tsx": ("typescript", "tsx"),
    "go": ("golang",), "rs": ("rust",), "rb": ("ruby",), "java": ("java",), "kt": ("kotlin",), "kts": ("kotlin",),
    "swift": ("swift",), "cs": ("csharp",), "php": ("php",), "scala": ("scala",), "dart": ("dart",),
    "lua": ("lua",), "ex": ("elixir",), "exs": ("elixir",), "erl": ("erlang",), "hrl": ("erlang",),
    "clj": ("clojure",), "hs": ("haskell",), "ml": ("ocaml",), "pl": ("perl",), "pm": ("perl",),
    "jl": ("julia",), "groovy": ("groovy",), "gradle": ("gradle",), "vue": ("vue",), "svelte": ("svelte",),
    "astro": ("astro",), "sql": ("sql",), "graphql": ("graphql",), "graphqls": ("graphql",), "gql": ("graphql",),
    "proto": ("protobuf", "proto"), "tf": ("terraform",), "hcl": ("terraform", "hcl"), "nix": ("nix",),
    "sh": ("shell", "bash"), "bash": ("shell", "bash"), "zsh": ("shell", "zsh"), "fish": ("shell", "fish"),
    "ps1": ("powershell",), "css": ("css",), "scss": ("scss", "sass"), "sass": ("sass",), "less": ("less",),
    "html": ("html",), "htm": ("html",), "md": ("markdown",), "mdx": ("mdx", "markdown"),
    "rst": ("restructuredtext",), "adoc": ("asciidoc",), "yml": ("yaml",), "yaml": ("yaml",), "toml": ("toml",),
    "json": ("json",), "cmake": ("cmake",), "coffee": ("coffeescript", "coffee"), "litcoffee": ("coffeescript",),
    "elm": ("elm",), "fs": ("fsharp",), "fsx": ("fsharp",), "vb": ("vb",), "zig": ("zig",), "nim": ("nim",),
    "sol": ("solidity",), "ejs": ("ejs",), "hbs": ("handlebars", "hbs"), "handlebars": ("handlebars",),
    "mustache": ("mustache",), "pug": ("pug",), "njk": ("nunjucks",), "jinja": ("jinja",), "jinja2": ("jinja",),
    "j2": ("jinja",), "liquid": ("liquid",), "twig": ("twig",), "erb": ("erb",),
}
"""File extension (lower case, no dot) → the words naming its language or format, as a question writes
them (the index's tokens: "c++", "c#" and one-letter names are left out, they are no index terms)."""


def language_words(paths: Iterable[str]) -> frozenset[str]:
    """The :data:`LANGUAGE_WORDS` of the extensions among ``paths`` (repository-relative; any order)."""
    found: set[str] = set()
    seen: set[str] = set()
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        ext = name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""
        if ext and ext not in seen:
            seen.add(ext)
            found.update(LANGUAGE_WORDS.get(ext, ()))
    return frozenset(found)
