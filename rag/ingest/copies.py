"""Copy detection: which indexed files are build output (or duplicates) of another indexed file.

Packages ship their sources next to what was built from them: ``src/x.ts`` with
``dist/x.js``, ``lib/x.cjs``, ``x.mjs`` and ``x.d.ts``; bundles with source maps; Python
sdists with ``PKG-INFO`` (a copy of the README); vendored duplicates. A copy matches a
question exactly as its source does and crowds it out of the answer. Decided at index time,
inside the update's transaction (:func:`update_copies`), and stored in the ``file_copies``
table (migration ``m008_file_copies``); retrieval then ranks each copy below its source and
never shows both (:mod:`rag.search.copies`).

Rules, in order (a file is a copy of the first rule's sources that apply; only files
whose source is itself indexed are recorded: **when the source is not indexed, the copy is
the best we have and stays**):

1. ``compiled`` — JavaScript or declarations (``.js .jsx .mjs .cjs .d.ts .d.mts .d.cts``)
   with the same module path as a TypeScript source (``.ts .tsx .mts .cts``, not a
   declaration) or a CoffeeScript one (``.coffee .litcoffee``), once leading build folders
   (:data:`OUTPUT_FOLDERS`: ``dist``, ``lib``, ``esm``, ``cjs``, ``types`` …) are dropped from the
   copy and one leading source folder (:data:`SOURCE_FOLDERS`: ``src`` …) from the source: ``dist/esm/a/b.js``,
   ``lib/a/b.cjs``, ``a/b.d.ts`` → ``src/a/b.ts``; also ``x.js`` beside ``x.ts`` (compiled
   in place). JavaScript sources under ``src/`` compiled to JavaScript under a build folder
   (Babel: ``lib/x.js`` → ``src/x.js``) count too. The walk already keeps at most one
   compiled copy in ``dist``/``build``/``out`` (:mod:`rag.ingest.walk`); this rule covers the
   layouts it cannot see (``lib/``, files beside their source, declarations, ``v4/x.js``
   beside ``src/v4/x.ts``).
1b. ``sibling_build`` — with no indexed source, one module built into several build folders or
   formats (fp-ts's ``lib/Option.js`` and ``es6/Option.js``; ``esm/x.mjs`` beside ``cjs/x.cjs``):
   JavaScript files under at least one build folder sharing their module path (build folders and
   the extension dropped), and likewise declarations; the one in a source folder (``lib/``), else
   the best format (an ES module build over an ES5 one over a CommonJS one), else the shortest path, stands for
   the module, and each other one sharing at least
   :data:`SIBLING_SHARE` of the smaller file's informative lines with it is its copy (two platforms'
   hand-written ``lib/node/index.js`` and ``lib/browser/index.js`` share a module path, not code); only
   :data:`FORMAT_SIBLING_SHARE` of their lines that are no boilerplate when only folders named by module format
   tell them apart (class-validator 0.14.1's ``cjs/``, ``esm5/`` and ``esm2015/``: ``esm2015/x.js`` stands for the
   module), or only their extensions in one folder (graphql 16.9.0's ``execution/execute.mjs`` beside its CommonJS
   ``execute.js``: the ``.mjs`` stands for the module, :data:`FORMAT_EXTENSIONS`).
2. ``source_map`` — a file ending in a ``sourceMappingURL`` comment whose map (a ``data:``
   URL, or the ``.map`` file it names, read from the working tree) lists indexed
   ``sources``: a bundle of several sources is a copy of each (best source first: the
   one sharing most normalised lines with it).
3. ``near_duplicate`` / ``contained`` — normalised-line fingerprints (computed at index
   time from the chunks and stored per file, ``file_fingerprints``; test files get none): of two files whose
   informative lines have a Jaccard similarity of at least :data:`NEAR_DUPLICATE_JACCARD`,
   the one that looks derived (of an ES module and its CommonJS twin, by their content, the CommonJS one;
   else :func:`derived_rank`: in a build folder,
   ``PKG-INFO``/``METADATA``, a declaration, a bundle or minified name) is a copy of the
   other; two near-identical files that look equally hand-written (``alpha.js`` and
   ``beta.js`` differing in one line) are both sources, since a question may be about
   the line where they differ. A derived-looking file that contains at least
   :data:`CONTAINED_SHARE` of another file's informative lines holds a copy of it
   (``PKG-INFO`` holding the README, a bundle holding a module).
3c. ``contained``, by content alone: a JavaScript file holding at least :data:`CONTAINED_SHARE` of the
   informative lines of :data:`BUNDLE_MIN_HELD` or more other, smaller JavaScript or TypeScript files, which
   between them hold :data:`BUNDLE_EXPLAINED_SHARE` of its lines, is their bundle whatever its name or folder
   (ejs 3.1.10 ships ``ejs.js``, lib/ browserified, at the package root
   beside ``lib/ejs.js``; it led two of ejs's questions of ``eval/heldout-7.jsonl``). One file holding another
   may be either's copy; holding several, it is the bundle. Documentation is never such a holder (a README
   quoting two examples in full is not their copy).
3b. ``bundle_twin`` — the near-duplicate source of a bundle (3) that holds other files
   (``contained`` or ``source_map``) holds them too, and is their copy when it looks derived itself
   (:func:`derived_rank`: in a build folder, a bundle's name; a hand-written twin stays a source): zod 3.23.8's ES module
   bundle ``lib/index.mjs``, near-identical to its UMD bundle ``lib/index.umd.js`` (the copy by rule 3),
   led 5 of its 16 questions of ``eval/heldout-3.jsonl`` while the UMD bundle was known to hold
   ``lib/types.js``; the ES module syntax (``export``, no ``exports.``) kept its own lines under
   :data:`CONTAINED_SHARE` of the CommonJS modules'.

Line normalisation: whitespace collapsed, lines with fewer than
:data:`MIN_LINE_CHARS` non-space characters or no letter dropped (braces, ``});``, blank
lines say nothing about origin), each kept line hashed (BLAKE2b, 64 bits). Lines shared by
more than :data:`MAX_POSTINGS` files (licence headers, ``'use strict'``) are ignored when
pairing files. This is exact shingling with single-line shingles, the usual
near-duplicate measure (Broder 1997, "On the resemblance and containment of documents"),
without MinHash sampling: repositories hold thousands of files, not millions, so the
exact inverted index is cheap.
"""
from __future__ import annotations

import base64
import functools
import json
import logging
import posixpath
import re
import sqlite3
import sys
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.ingest.walk import DECLARATIONS, browser_build, build_format_rank, es_target_folder, format_folder
from rag.ingest.walk import module_format as walk_module_format

Fingerprint = array
"""A file's line fingerprint: sorted unique 64-bit line hashes, an ``array('Q')`` (stored as its bytes)."""

__all__ = [
    "CopyRelation", "Fingerprint", "SharedLines", "update_copies", "detect_copies", "fingerprint_lines", "file_fingerprint", "derived_rank", "map_sources",
    "OUTPUT_FOLDERS", "SOURCE_FOLDERS", "FORMAT_EXTENSIONS", "TWIN_MAX_GROWTH", "COPY_RULES_VERSION", "SIBLING_SHARE",
    "FORMAT_SIBLING_SHARE",
    "output_folder",
    "COMPILED_MAX_GROWTH", "COMPILED_MIN_LINES", "NEAR_DUPLICATE_JACCARD", "CONTAINED_SHARE", "BUNDLE_MIN_HELD",
    "BUNDLE_EXPLAINED_SHARE", "MIN_LINE_CHARS",
    "MAX_POSTINGS", "MIN_INFORMATIVE_LINES",
]

log = logging.getLogger(__name__)

OUTPUT_FOLDERS = frozenset({
    "dist", "build", "out", "lib", "cjs", "commonjs", "umd", "amd", "system", "iife", "module", "modules", "mjs",
    "types", "typings", "declarations", "dts", "node", "browser", "legacy", "bundle", "bundles", "release", "compiled",
})
"""Folder names build tools write to (tsc ``outDir``, Rollup/tsup/Babel/webpack conventions), besides the
ECMAScript build folders (``es``, ``esm``, ``esm5``, ``es2015``, ``esm2015``, ``esnext``:
:func:`rag.ingest.walk.es_target_folder`); :func:`output_folder` tells both."""
SOURCE_FOLDERS = frozenset({"src", "source", "sources", "ts", "lib"})
"""Folder names sources live in (one is dropped from a TypeScript source's module path)."""
JS_SOURCE_FOLDERS = frozenset({"src", "source", "sources"})
"""For JavaScript compiled to JavaScript, the source must lie in one of these (``lib/`` is a source
folder of many plain JavaScript packages, e.g. express)."""
COMPILED_SOURCES = (".ts", ".tsx", ".mts", ".cts", ".coffee", ".litcoffee")
"""Sources of languages compiled to JavaScript: TypeScript (declarations aside), and CoffeeScript (bottleneck 2.19.5
compiles ``src/Bottleneck.coffee`` to ``lib/Bottleneck.js``)."""
JS_OUTPUTS = (".js", ".jsx", ".mjs", ".cjs")
TWIN_MAX_GROWTH = 3
"""Rule 1b, for scripts told apart only by their extensions: one has at most this many times the other's informative
lines (two builds of one module are about one size; a break-it review's 13-line ``parser.mjs`` holding a few lines of
a 301-line ``parser.js`` stood for it)."""
FORMAT_EXTENSIONS = (".mjs", ".js", ".cjs")
"""Extensions naming a script's module format (Node.js: ``.mjs`` an ES module, ``.cjs`` CommonJS, ``.js`` the
package's default), best first as rule 1b's stand-in: of ``x.mjs``, ``x.js`` and ``x.cjs`` in one folder (graphql
16.9.0's ``execution/execute.mjs`` beside its CommonJS ``execute.js``), the ES module stands for the module."""
COMPILED_MAX_GROWTH = 10
COMPILED_MIN_LINES = 20
"""Rule 1: a compiled copy has at most :data:`COMPILED_MAX_GROWTH` times its source's informative lines (at least
:data:`COMPILED_MIN_LINES` of them counted): compilers add helpers and rewrite syntax, roughly doubling a module at
most, while bottleneck 2.19.5's root ``es5.js``, the whole library in 2,382 informative lines, matched the module path
of its 3-line entry module ``src/es5.coffee`` and had its every chunk answered by that file."""
SIBLING_SHARE = 0.5
"""Rule 1b: two builds of one module share at least this share of the smaller one's informative lines
(a CommonJS and an ES module build differ in their import and export lines, not their bodies)."""
FORMAT_SIBLING_SHARE = 0.2
"""Rule 1b, for two builds told apart only by folders named by module format (``cjs/x.js``, ``esm5/x.js``,
``esm2015/x.js``: :func:`_formats_apart`), counting no boilerplate line (:func:`_boilerplate`): the folder names
say they are one module's builds. TypeScript's CommonJS output rewrites every call of an imported name
(``(0, storage_1.getStorage)()``): class-validator 0.14.1's ``cjs/`` modules share a median 46% of their informative
lines with ``esm2015/`` (129 modules, 75 under :data:`SIBLING_SHARE`; its barrels ``index.js`` 24%,
``decorators.js`` 7%). An ES module wrapper re-exporting a CommonJS implementation shares only its licence
header with it: no copy."""
COPY_RULES_VERSION = 11
"""The version of the rules above, stored with the index (``copy_rules``): an update recomputes the
copies of an index recorded by other rules, even when no file changed. 2: ``sibling_build``; 3: its
builds share code (:data:`SIBLING_SHARE`); 4: ``bundle_twin``; 5: rule 1b's stand-in by format; 6: rule 3c; 7: of
near-identical ES module and CommonJS scripts, the CommonJS one is the copy (by content); 8: ECMAScript target
folders (``esm5/``, ``esm2015/``) are build folders, and builds told apart by module-format folders need
:data:`FORMAT_SIBLING_SHARE` only; 9: so do twins told apart by their extensions (``x.mjs`` beside ``x.js``); 10:
CoffeeScript sources, and a compiled copy is at most :data:`COMPILED_MAX_GROWTH` times its source (rule 1); 11: a
build for Node stands for its module before one for browsers (rule 1b, :func:`rag.ingest.walk.browser_build`)."""

NEAR_DUPLICATE_JACCARD = 0.8
"""Two files sharing at least this Jaccard share of their informative lines are near-identical."""
CONTAINED_SHARE = 0.8
"""A derived-looking file holding this share of another file's informative lines holds a copy of it."""
BUNDLE_MIN_HELD = 2
"""Rule 3c: a script holding :data:`CONTAINED_SHARE` of this many other scripts is their bundle…"""
BUNDLE_EXPLAINED_SHARE = 0.6
"""… when they hold this share of its informative lines between them: a bundle is mostly its modules (ejs
3.1.10's ``ejs.js``: 0.67 by ``lib/ejs.js`` and ``lib/utils.js``; zod 3.23.8's ``lib/index.mjs``: 0.69 by
``lib/types.js`` and ``lib/ZodError.js``), while a module two snippets were cut from is mostly itself (a break-it
review hid a limiter whose two snippet files held 0.48 of it)."""
MIN_LINE_CHARS = 8
"""Normalised lines shorter than this (non-space characters) are not informative."""
MAX_POSTINGS = 8
"""A line found in more files than this is boilerplate and pairs nothing."""
MIN_INFORMATIVE_LINES = 5
"""Files with fewer informative lines are too small to call duplicates."""
MAX_KEPT_HASHES = 1_000_000
"""Most distinct line hashes :class:`SharedLines` keeps between updates (~100 MB; eslint has 41k): a larger
repository's counts are made afresh at each update instead of held by a long-lived process."""
MAX_MAP_BYTES = 8 * 1024 * 1024
"""Source maps larger than this are not read."""

_MAP_COMMENT = re.compile(r"[#@]\s*sourceMappingURL=([^\s*'\"]+)")
_LETTER = re.compile(r"[A-Za-z]")
_SCHEME = re.compile(r"^[A-Za-z][\w+.-]*://")


def output_folder(folder: str) -> bool:
    """Whether a folder name is a build tool's output folder (:data:`OUTPUT_FOLDERS`, or an ECMAScript build
    folder: :func:`rag.ingest.walk.es_target_folder`), case-insensitive."""
    folder = folder.lower()
    return folder in OUTPUT_FOLDERS or es_target_folder(folder) is not None


def _source_folder(folder: str) -> bool:
    """Whether a folder name is a source folder (:data:`SOURCE_FOLDERS`), case-insensitive."""
    return folder.lower() in SOURCE_FOLDERS


@dataclass(frozen=True, slots=True)
class CopyRelation:
    """``path`` is a copy of the indexed file ``source`` (``reason``: ``compiled``, ``source_map``,
    ``sibling_build``, ``near_duplicate``, ``contained``, ``bundle_twin``); ``rank`` orders several sources of one copy (0 = best);
    ``similarity`` is the line Jaccard or containment when measured, else ``None``."""

    path: str
    source: str
    reason: str
    rank: int = 0
    similarity: float | None = None


def fingerprint_lines(lines: Iterable[str]) -> Fingerprint:
    """Sorted unique 64-bit hashes (an ``array('Q')``) of the informative normalised lines (module docstring).

    A line's hash is its CRC-32 in the high half and its Adler-32 in the low half (both
    zlib, stable across processes, unlike ``hash()``; one fifth of BLAKE2b's cost here).
    Two different lines colliding on both is negligible at repository sizes, and a
    collision could only add one shared line to a pair of files.
    """
    return array("Q", sorted(_line_hashes(lines)))


def _line_hashes(lines: Iterable[str]) -> set[int]:
    """The hashes :func:`fingerprint_lines` sorts."""
    hashes = set()
    for line in set(lines):
        if len(line) < MIN_LINE_CHARS:  # fewer characters than the informative minimum of non-space ones
            continue
        norm = " ".join(line.split())
        if len(norm) - norm.count(" ") < MIN_LINE_CHARS or not _LETTER.search(norm):
            continue
        raw = norm.encode("utf-8", "surrogatepass")
        hashes.add((zlib.crc32(raw) << 32) | zlib.adler32(raw))
    return hashes


def file_fingerprint(update) -> bytes:
    """The stored fingerprint (``file_fingerprints.lines``) of a :class:`~rag.store.index.FileUpdate`:
    :func:`fingerprint_lines` of its chunks' lines, as ``uint64`` bytes; empty for a test file.

    Pure CPU, so an indexing worker computes it (``update.fingerprint``) beside the chunks' terms;
    the bytes of its :func:`fingerprint_lines`.
    """
    # Overlapping chunks repeat lines; fingerprints are sets, so the chunks' lines are taken as they come.
    # Tests are neither build output nor the sources of any (and they are most of the lines of many
    # repositories): their fingerprint is left empty, path rules still apply to them.
    lines = () if update.kind == "test" else (line for c in update.chunks for line in c.text.split("\n"))
    return fingerprint_lines(lines).tobytes()


def map_sources(path: str, tail: str, repo_root: Path | None) -> list[str]:
    """Repository paths a file's source map lists (``[]`` without one, or when it cannot be read).

    ``tail`` is the end of the file (the ``sourceMappingURL`` comment is its last line);
    a ``data:`` URL is decoded, a relative URL is read beside the file in ``repo_root``.
    Sources resolve against the map's folder and its ``sourceRoot``; ``webpack://pkg/./src/x``
    style URLs keep their path part. Paths outside the repository are dropped.
    """
    found = _MAP_COMMENT.findall(tail)
    if not found:
        return []
    url = found[-1]
    folder = posixpath.dirname(path)
    doc = None
    try:
        if url.startswith("data:"):
            header, _, payload = url.partition(",")
            raw = base64.b64decode(payload) if header.endswith(";base64") else payload.encode("utf-8")
            doc = json.loads(raw)
            map_folder = folder
        elif repo_root is not None and not _SCHEME.match(url):
            map_path = posixpath.normpath(posixpath.join(folder, url))
            if map_path.startswith("../"):
                return []
            file = repo_root / map_path
            if not file.is_file() or file.stat().st_size > MAX_MAP_BYTES:
                return []
            doc = json.loads(file.read_text(encoding="utf-8", errors="replace"))
            map_folder = posixpath.dirname(map_path)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested past the parser's limit
        log.debug("source map of %s unreadable: %s", path, type(exc).__name__)
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("sources"), list):
        return []
    root = doc.get("sourceRoot") if isinstance(doc.get("sourceRoot"), str) else ""
    out: list[str] = []
    for source in doc["sources"]:
        if not isinstance(source, str) or not source:
            continue
        candidates = []
        if _SCHEME.match(source):  # webpack://pkg/./src/x.ts → src/x.ts
            rest = _SCHEME.sub("", source)
            parts = rest.split("/")
            candidates += [posixpath.normpath("/".join(parts[i:])) for i in range(len(parts))]
        else:
            candidates.append(posixpath.normpath(posixpath.join(map_folder, root, source)))
        out += [c for c in candidates if c and not c.startswith("../") and not c.startswith("/") and c != "."]
    return list(dict.fromkeys(out))


def derived_rank(path: str) -> tuple:
    """A sort key: larger means more likely to be derived (built, generated, packaged) output."""
    parts = path.split("/")
    name = parts[-1].lower()
    score = 0
    if any(output_folder(p) for p in parts[:-1]):
        score += 2
    if name in ("pkg-info", "metadata"):
        score += 3
    if name.endswith(DECLARATIONS) or re.search(r"\.(min|bundle|umd|iife|prod|production|development)\.", name):
        score += 1
    return (score, len(parts), len(path), path)


def _module_key(path: str, suffixes: Sequence[str]) -> str | None:
    """``path`` without the longest of ``suffixes`` it ends with (case-insensitive), else ``None``."""
    lower = path.lower()
    for suffix in _LONGEST_FIRST.get(suffixes) or sorted(suffixes, key=len, reverse=True):
        if lower.endswith(suffix):
            return path[: -len(suffix)]
    return None


_LONGEST_FIRST = {group: tuple(sorted(group, key=len, reverse=True))
                  for group in (COMPILED_SOURCES, JS_OUTPUTS, (*DECLARATIONS, *JS_OUTPUTS))}


def _stripped(key: str, folder: Callable[[str], bool], *, repeat: bool) -> list[str]:
    """``key`` and the keys left after dropping its leading folders for which ``folder(name)`` holds (all of them,
    or one)."""
    keys = [key]
    parts = key.split("/")
    while len(parts) > 1 and folder(parts[0]):
        parts = parts[1:]
        keys.append("/".join(parts))
        if not repeat:
            break
    return keys


@functools.lru_cache(maxsize=4)
def _compiled(paths: tuple[str, ...]) -> dict[str, list[str]]:
    """Rule 1: copy path → TypeScript (or ``src/`` JavaScript) sources with its module path.

    Depends on the paths alone, so an update that changed no path reuses the last answer (kept per
    tuple of paths; callers do not change what it returns)."""
    ts_keys: dict[str, list[str]] = defaultdict(list)
    js_keys: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path.lower().endswith(DECLARATIONS):
            continue
        key = _module_key(path, COMPILED_SOURCES)
        if key is not None:
            for k in _stripped(key, _source_folder, repeat=False):
                ts_keys[k].append(path)
            continue
        key = _module_key(path, JS_OUTPUTS)
        if key is not None and "/" in key and key.split("/", 1)[0].lower() in JS_SOURCE_FOLDERS:
            js_keys[key.split("/", 1)[1]].append(path)
    out: dict[str, list[str]] = {}
    for path in paths:
        key = _module_key(path, (*DECLARATIONS, *JS_OUTPUTS))
        if key is None:
            continue
        sources: list[str] = []
        keys = _stripped(key, output_folder, repeat=True)
        for k in keys:
            sources += [s for s in ts_keys.get(k, []) if s != path]
        if not path.lower().endswith(DECLARATIONS) and len(keys) > 1:
            first = path.split("/", 1)[0].lower()
            if first not in JS_SOURCE_FOLDERS:
                for k in keys[1:]:
                    sources += [s for s in js_keys.get(k, []) if s != path]
        if sources:
            out[path] = list(dict.fromkeys(sorted(sources, key=lambda s: (len(s), s))))
    return out


@functools.lru_cache(maxsize=4)
def _build_groups(paths: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Rule 1b's candidates: the build outputs of ``paths`` (JavaScript, or declarations, under a build folder)
    grouped by module path, each group of two or more in the order its stand-in is chosen (the one in a
    source folder, else a build for Node over one for browsers (:func:`rag.ingest.walk.browser_build`), else the
    best format, :func:`rag.ingest.walk.build_format_rank`: an ES module build over a
    CommonJS one, as the walk chooses, else the shortest path); then the scripts under no build folder whose
    paths differ only in their :data:`FORMAT_EXTENSIONS`, in that order. Depends on the paths alone (kept per
    tuple of paths)."""
    groups: dict[tuple[bool, str], list[str]] = defaultdict(list)
    twins: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        declaration = path.lower().endswith(DECLARATIONS)
        key = _module_key(path, (*DECLARATIONS, *JS_OUTPUTS))
        if key is None:
            continue
        keys = _stripped(key, output_folder, repeat=True)
        if len(keys) > 1:  # under a build folder
            groups[(declaration, keys[-1].lower())].append(path)
        elif path.lower().endswith(FORMAT_EXTENSIONS):
            twins[key.lower()].append(path)
    ordered = [sorted(members, key=lambda p: (p.split("/", 1)[0].lower() not in SOURCE_FOLDERS, browser_build(p),
                                              build_format_rank(p), len(p), p))
               for members in groups.values() if len(members) > 1]
    ordered += [sorted(members, key=lambda p: (FORMAT_EXTENSIONS.index(_extension(p)), p))
                for members in twins.values() if len(members) > 1]
    return tuple(tuple(members) for members in ordered)


def _extension(path: str) -> str:
    """``path``'s last extension, lower-case, with its dot (``""`` without one)."""
    return posixpath.splitext(path)[1].lower()


def _sibling_builds(fingerprints: dict[str, Sequence[int]], copies: set[str]) -> dict[str, str]:
    """Rule 1b: copy path → the file standing for its module, among the build outputs not in ``copies``
    (module docstring); ``fingerprints``: every indexed path → its line fingerprint."""
    out: dict[str, str] = {}
    boilerplate: set[int] | None = None
    for group in _build_groups(tuple(sorted(fingerprints))):
        members = [p for p in group if p not in copies]
        if len(members) < 2:
            continue
        first = set(fingerprints[members[0]])
        for copy in members[1:]:
            lines: Iterable[int] = fingerprints[copy]
            if posixpath.dirname(copy) == posixpath.dirname(members[0]) and \
                    max(len(first), len(lines)) > TWIN_MAX_GROWTH * min(len(first), len(lines)):
                continue   # x.mjs beside x.js, one far larger: not one module's two builds
            share, kept = SIBLING_SHARE, first
            if _formats_apart(members[0], copy):   # cjs/x.js beside esm2015/x.js: boilerplate lines say nothing
                if boilerplate is None:
                    boilerplate = _boilerplate(fingerprints)
                share, kept, lines = FORMAT_SIBLING_SHARE, first - boilerplate, set(lines) - boilerplate
            smaller = min(len(kept), len(lines))
            if smaller >= MIN_INFORMATIVE_LINES and len(kept.intersection(lines)) >= share * smaller:
                out[copy] = members[0]
    return out


def _formats_apart(a: str, b: str) -> bool:
    """Whether the folders telling ``a`` and ``b`` apart all name module formats
    (:func:`rag.ingest.walk.format_folder`): ``cjs/x.js`` and ``esm2015/x.js``, not ``esm/node/x.js`` and
    ``esm/browser/x.js`` (two platforms); or, in one folder, only their extensions do (:data:`FORMAT_EXTENSIONS`:
    ``x.mjs`` and ``x.js``)."""
    apart = set(a.lower().split("/")[:-1]) ^ set(b.lower().split("/")[:-1])
    if not apart:
        return posixpath.dirname(a) == posixpath.dirname(b) and _extension(a) != _extension(b) and \
            a.lower().endswith(FORMAT_EXTENSIONS) and b.lower().endswith(FORMAT_EXTENSIONS)
    return all(format_folder(folder) for folder in apart)


def _boilerplate(fingerprints: dict[str, Sequence[int]]) -> set[int]:
    """The line hashes held by more than :data:`MAX_POSTINGS` files (licence headers, ``'use strict'``, a
    ``sourceMappingURL`` comment): they pair nothing."""
    return {h for h, held in _line_holders(fingerprints.items()).items()
            if held.__class__ is list and len(held) > MAX_POSTINGS}


def detect_copies(fingerprints: dict[str, Sequence[int]], maps: dict[str, list[str]], *,
                  shared: Counter | None = None,
                  module_format: Callable[[str], int] | None = None) -> list[CopyRelation]:
    """Every copy relation among the indexed files (rules in the module docstring).

    Args:
        fingerprints: every indexed path → its line fingerprint (:func:`fingerprint_lines`).
        maps: path → the repository paths its source map lists (:func:`map_sources`).
        shared: ``_shared_lines(fingerprints, involving=maps)`` when the caller has it
            (:class:`SharedLines`); counted here otherwise.

    Returns:
        Relations sorted by copy path, then rank; a copy's sources are indexed files,
        never the copy itself, and no file is recorded as both a copy and, through a
        copy relation, its own source.
    """
    paths = sorted(fingerprints)
    known = set(paths)
    relations: dict[str, list[CopyRelation]] = {}
    for path, sources in _compiled(tuple(paths)).items():
        # a whole-library bundle named as one entry module (bottleneck's es5.js beside its src/es5.coffee) is no
        # compiled copy of that module: far larger than it (the later rules judge it by content)
        sources = [s for s in sources if len(fingerprints[path]) <= COMPILED_MAX_GROWTH * max(
            len(fingerprints.get(s, ())), COMPILED_MIN_LINES)]
        if sources:
            relations[path] = [CopyRelation(path, s, "compiled", i) for i, s in enumerate(sources)]
    if shared is None:
        shared = _shared_lines(fingerprints, involving=maps)
    for path, listed in sorted(maps.items()):
        if path in relations:
            continue
        sources = [s for s in listed if s in known and s != path]
        if sources:
            sources.sort(key=lambda s: (-shared.get(_pair(path, s), 0), s))
            relations[path] = [CopyRelation(path, s, "source_map", i) for i, s in enumerate(sources)]
    for path, source in _sibling_builds(fingerprints, set(relations)).items():
        relations[path] = [CopyRelation(path, source, "sibling_build", 0)]
    sizes = {p: len(f) for p, f in fingerprints.items()}
    near: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    holds: dict[str, list[tuple[float, float, str, str]]] = defaultdict(list)  # rule 3c's candidates
    for (a, b), common in shared.items():
        na, nb = sizes[a], sizes[b]
        if min(na, nb) < MIN_INFORMATIVE_LINES:
            continue
        jaccard = common / (na + nb - common)
        if jaccard >= NEAR_DUPLICATE_JACCARD:
            copy, source = (a, b) if derived_rank(a) > derived_rank(b) else (b, a)
            by_format = _by_module_format(a, b, module_format)
            if by_format is not None:  # an ES module and its CommonJS build: the CommonJS one is the copy
                copy, source = by_format
            if by_format is not None or derived_rank(copy)[0] > derived_rank(source)[0]:  # else hand-written
                near[copy].append((common / sizes[copy], jaccard, source, "near_duplicate"))  # siblings: sources
            continue
        for holder, held, n_held in ((a, b, nb), (b, a, na)):
            if common / n_held < CONTAINED_SHARE:
                continue
            if derived_rank(holder)[0] > derived_rank(held)[0] and not _derived_by_source_folder_only(holder):
                near[holder].append((common / sizes[holder], common / n_held, held, "contained"))
            elif (sizes[holder] > n_held and holder.lower().endswith(JS_OUTPUTS)
                  and held.lower().endswith((*JS_OUTPUTS, *COMPILED_SOURCES))):
                holds[holder].append((common / sizes[holder], common / n_held, held, "contained"))
    # 3c. A script holding most of the lines of two or more others is their bundle, whatever its name
    # (ejs 3.1.10's browserified ejs.js, beside lib/ejs.js and lib/utils.js).
    for holder, held in holds.items():
        explained = _explained_share(fingerprints, holder, [h[2] for h in held]) if len(held) >= BUNDLE_MIN_HELD else 0
        if explained >= BUNDLE_EXPLAINED_SHARE:
            near[holder].extend(held)
    copy_of = {(r.path, r.source) for rs in relations.values() for r in rs}
    for path in sorted(near):
        if path in relations:
            continue
        near[path] = [x for x in near[path] if (x[2], path) not in copy_of]  # never the source of its own copy
        if not near[path]:
            continue
        # Best source first: the one explaining the largest share of the copy's lines.
        found = sorted(near[path], key=lambda x: (-x[0], x[2]))
        relations[path] = [CopyRelation(path, s, reason, i, round(sim, 4))
                           for i, (_explained, sim, s, reason) in enumerate(found)]
    # 3b. The near-identical twin of a bundle is a bundle: it holds what the bundle holds (rule 3b).
    for path, found in sorted(relations.items()):
        twins = [r.source for r in found if r.reason == "near_duplicate"]
        held = [r for r in found if r.reason in ("contained", "source_map")]
        for twin in twins:
            if not held or derived_rank(twin)[0] == 0:  # a hand-written twin stays a source
                continue
            own = relations.get(twin, [])
            if any(r.reason != "contained" for r in own):  # compiled, source-mapped …: its sources are known
                continue
            have = {r.source for r in own}  # a bundle by its own content (3, 3c) also holds what its twin holds
            inherited = [r for r in held
                         if r.source != twin and r.source not in have and (r.source, twin) not in copy_of]
            if inherited:
                relations[twin] = [*own, *(CopyRelation(twin, r.source, "bundle_twin", len(own) + i, r.similarity)
                                           for i, r in enumerate(inherited))]
    # A source that is itself a copy of the file it would stand for (a cycle of near-duplicates) loses:
    # the more derived one stays the copy.
    for path in list(relations):
        relations[path] = [r for r in relations[path]
                           if not (r.source in relations and any(x.source == path for x in relations[r.source])
                                   and derived_rank(path) < derived_rank(r.source))]
        if not relations[path]:
            del relations[path]
    return [r for path in sorted(relations) for r in relations[path]]


def _by_module_format(a: str, b: str, module_format: Callable[[str], int] | None) -> tuple[str, str] | None:
    """``(copy, source)`` of two near-identical scripts when one is an ES module and the other CommonJS
    (:func:`rag.ingest.walk.module_format`: 0 and 2), the CommonJS one the copy, as the walk chooses among
    builds (chokidar 4.0.3 ships CommonJS at its root and ES modules in ``esm/``); ``None`` otherwise."""
    if module_format is None or not (a.lower().endswith(JS_OUTPUTS) and b.lower().endswith(JS_OUTPUTS)):
        return None
    formats = module_format(a), module_format(b)
    if formats == (0, 2):
        return b, a
    if formats == (2, 0):
        return a, b
    return None


def _derived_by_source_folder_only(path: str) -> bool:
    """Whether ``path`` looks derived (:func:`derived_rank`) only for a folder that is a source folder too
    (``lib/``: express's sources, zod's build): holding another file is no sign of a copy then; rule 3c's test
    (several held files explaining most of it) decides."""
    parts = path.lower().split("/")
    if any(output_folder(p) and p not in SOURCE_FOLDERS for p in parts[:-1]):
        return False
    return derived_rank(path)[0] == 2 and any(p in SOURCE_FOLDERS for p in parts[:-1])


def _explained_share(fingerprints: dict[str, Sequence[int]], holder: str, held: Sequence[str]) -> float:
    """The share of ``holder``'s informative lines that one of ``held`` holds too."""
    own = set(fingerprints[holder])
    if not own:
        return 0.0
    covered: set[int] = set()
    for path in held:
        covered |= own.intersection(fingerprints[path])
    return len(covered) / len(own)


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _shared_lines(fingerprints: dict[str, Sequence[int]], *, involving: Iterable[str] | None = None) -> Counter:
    """``(a, b)`` (sorted pair) → informative lines both hold (lines in more than MAX_POSTINGS files skipped).

    In plain Python (:func:`_shared_lines_python`) unless numpy is imported already, then vectorised
    (:func:`_shared_lines_numpy`); the same counts either way. On eslint (425 files, 54k hashes) the
    Python form takes ~15-35 ms and numpy's ~5-15 ms, after an import of ~130 ms that a cold
    ``slackzilla index`` (no vectors) otherwise never pays; a long-lived process that has numpy for
    its vectors keeps the faster one for its incremental updates.
    """
    pair = _shared_lines_numpy if "numpy" in sys.modules else _shared_lines_python
    return pair(fingerprints, involving=involving)


def _line_holders(owners: Iterable[tuple]) -> dict:
    """hash → its one holder, or the list of its holders once there are two, from ``(holder, hashes)``
    pairs (a holder is an index or a path, never a list; a fingerprint holds each hash once). One dict
    entry per distinct hash: the single holder is stored bare, since most lines are in one file."""
    holders: dict = {}
    get = holders.get
    for owner, hashes in owners:
        for h in hashes:
            held = get(h)
            if held is None:
                holders[h] = owner
            elif held.__class__ is list:
                held.append(owner)
            else:
                holders[h] = [held, owner]
    return holders


def _shared_lines_python(fingerprints: dict[str, Sequence[int]], *,
                         involving: Iterable[str] | None = None) -> Counter:
    """:func:`_shared_lines` in plain Python: one pass over every file's hashes builds each hash's holders
    (a file's fingerprint holds a hash once); a hash held by ``s`` files (2 ≤ s ≤ :data:`MAX_POSTINGS`)
    gives its ``s(s-1)/2`` pairs.

    With ``involving``, only the pairs :func:`detect_copies` can use are returned: those with a
    path of ``involving`` (the source-mapped files), and those near enough to be a near-duplicate
    or containment (both files of at least :data:`MIN_INFORMATIVE_LINES`, line Jaccard or a
    containment share within a hair of its threshold); the others would be looked at and dropped.
    """
    paths = sorted(fingerprints)
    n = len(paths)
    holders = _line_holders((i, fingerprints[path]) for i, path in enumerate(paths))
    codes: Counter = Counter()  # pair code i * n + j (i < j: holders are appended in path order)
    for held in holders.values():
        if held.__class__ is not list or len(held) > MAX_POSTINGS:
            continue
        for x, a in enumerate(held):
            base = a * n
            for b in held[x + 1:]:
                codes[base + b] += 1
    counts: Counter = Counter()
    lengths = [len(fingerprints[p]) for p in paths]
    mapped = set(involving) if involving is not None else set()
    for code, common in codes.items():
        a, b = divmod(code, n)
        if (involving is not None and paths[a] not in mapped and paths[b] not in mapped
                and not _near_enough(common, lengths[a], lengths[b])):
            continue
        counts[(paths[a], paths[b])] = common
    return counts


def _near_enough(common: int, na: int, nb: int) -> bool:
    """Whether two files of ``na`` and ``nb`` informative lines sharing ``common`` can be a near-duplicate or
    a containment (:func:`detect_copies`): both large enough, and line Jaccard or a containment share within
    a hair (1e-9: :func:`detect_copies` decides with the same floats) of its threshold."""
    slack = 1e-9
    return min(na, nb) >= MIN_INFORMATIVE_LINES and (
        common / (na + nb - common) >= NEAR_DUPLICATE_JACCARD - slack
        or common / na >= CONTAINED_SHARE - slack or common / nb >= CONTAINED_SHARE - slack)


def _shared_lines_numpy(fingerprints: dict[str, Sequence[int]], *, involving: Iterable[str] | None = None) -> Counter:
    """:func:`_shared_lines`, vectorised: the files' hashes are sorted together; each run of one hash held
    by ``s`` files (2 ≤ s ≤ :data:`MAX_POSTINGS`) gives its ``s(s-1)/2`` file pairs, all runs of one size
    at once, and ``np.unique`` counts the pairs. Used when numpy is imported already."""
    import numpy as np

    fingerprints = {p: np.asarray(f, dtype=np.uint64) for p, f in fingerprints.items()}
    paths = sorted(fingerprints)
    counts: Counter = Counter()
    if not paths:
        return counts
    arrays = [fingerprints[p] for p in paths]
    hashes = np.concatenate(arrays)
    if len(hashes) == 0:
        return counts
    owners = np.repeat(np.arange(len(paths), dtype=np.int64), [len(a) for a in arrays])
    order = np.argsort(hashes)  # the holders' order inside a run does not matter: not a stable sort (5× faster)
    hashes, owners = hashes[order], owners[order]
    boundaries = np.flatnonzero(np.diff(hashes)) + 1
    starts = np.concatenate(([0], boundaries))
    sizes = np.diff(np.concatenate((starts, [len(hashes)])))
    n = len(paths)
    codes = []
    for size in range(2, MAX_POSTINGS + 1):
        first = starts[sizes == size]
        if not len(first):
            continue
        group = owners[first[:, None] + np.arange(size)]  # one row per line, its holders
        for x in range(size):
            for y in range(x + 1, size):
                a, b = group[:, x], group[:, y]
                codes.append(np.minimum(a, b) * n + np.maximum(a, b))
    if not codes:
        return counts
    pairs, hits = np.unique(np.concatenate(codes), return_counts=True)
    if involving is not None:
        lengths = np.array([len(a) for a in arrays], dtype=np.float64)
        na, nb, common = lengths[pairs // n], lengths[pairs % n], hits.astype(np.float64)
        slack = 1e-9  # the loop in detect_copies decides with Python floats
        useful = (np.minimum(na, nb) >= MIN_INFORMATIVE_LINES) & (
            (common / (na + nb - common) >= NEAR_DUPLICATE_JACCARD - slack)
            | (common / na >= CONTAINED_SHARE - slack) | (common / nb >= CONTAINED_SHARE - slack))
        mapped = set(involving)
        wanted = [i for i, p in enumerate(paths) if p in mapped]
        if wanted:
            useful |= np.isin(pairs // n, wanted) | np.isin(pairs % n, wanted)
        pairs, hits = pairs[useful], hits[useful]
    for code, hit in zip(pairs.tolist(), hits.tolist()):
        counts[(paths[code // n], paths[code % n])] = hit
    return counts


class SharedLines:
    """The pair counts of :func:`_shared_lines`, kept between updates and brought up to date by difference.

    A long-lived process (the bot, ``slackzilla bench``) changes a few files per update; counting every
    pair again costs ~12 ms in Python on eslint (54k line hashes), redoing the same work for the 424
    files that did not change. This keeps each hash's holders and every pair's count, and
    :meth:`counts` first moves them to the fingerprints it is given: only the hashes a changed, added or
    removed file gained or lost are looked at (for each, the pairs of its holders before and after,
    so a line crossing :data:`MAX_POSTINGS` holders is handled like the full count does). It compares
    itself with the fingerprints it is given each time (bytes equality per path), so it is never stale
    with respect to the index it is handed, whatever wrote that index, and a rolled-back transaction
    only costs a larger difference next time. The result equals :func:`_shared_lines_python`'s
    (checked by a property test).

    Memory: one dict entry per distinct line hash (~100 bytes; ~5 MB on eslint) and one per pair of files
    sharing a line, what one fresh count holds while it runs; past :data:`MAX_KEPT_HASHES` distinct
    hashes nothing is kept between updates (each is counted afresh, as without this class).
    """

    def __init__(self) -> None:
        self._prints: dict[str, bytes] = {}
        self._holders: dict[int, str | list[str]] = {}  # hash → its one holder, or its holders once there are two
        self._pairs: dict[tuple[str, str], int] = {}
        self._partners: dict[str, set[str]] = defaultdict(set)
        self._useful: dict[tuple[str, str], int] = {}
        self._mapped: frozenset[str] = frozenset()

    def counts(self, blobs: dict[str, bytes], *, involving: Iterable[str]) -> Counter:
        """:func:`_shared_lines` of the fingerprints ``blobs`` (every indexed path → its fingerprint's bytes,
        as stored) with ``involving`` (the source-mapped paths), after bringing the kept counts to them.

        When more than a quarter of the files differ from the kept ones (the first call, a full
        rebuild), everything is counted again in one pass, as fast as :func:`_shared_lines_python`.
        """
        mapped = frozenset(involving)
        width = Fingerprint("Q").itemsize
        lengths = {p: len(blob) // width for p, blob in blobs.items()}
        gone = [p for p in self._prints if p not in blobs]
        differ = [p for p, blob in blobs.items() if self._prints.get(p) != blob]
        if 4 * (len(gone) + len(differ)) > len(blobs):
            self._rebuild(blobs)
            touched: Iterable[tuple[str, str]] = list(self._pairs)
            self._useful = {}
        else:
            touched = set()
            for path in gone:
                self._move(path, self._prints.pop(path), b"", touched)
            for path in differ:
                self._move(path, self._prints.get(path, b""), blobs[path], touched)
                self._prints[path] = blobs[path]
            for path in {*gone, *differ, *(mapped ^ self._mapped)}:
                touched.update(_pair(path, other) for other in self._partners.get(path, ()))
        self._mapped = mapped
        for pair in touched:
            common = self._pairs.get(pair)
            if common is not None and _useful(pair, common, lengths, mapped):
                self._useful[pair] = common
            else:
                self._useful.pop(pair, None)
        useful = Counter(self._useful)
        if len(self._holders) > MAX_KEPT_HASHES:  # too large to keep between updates: counted afresh each time
            self.__init__()
        return useful

    def _rebuild(self, blobs: dict[str, bytes]) -> None:
        """Count every pair of ``blobs`` afresh (the one pass of :func:`_shared_lines_python`)."""
        holders = _line_holders((path, Fingerprint("Q", blob)) for path, blob in blobs.items())
        pairs: Counter = Counter()
        for held in holders.values():
            if held.__class__ is not list or len(held) > MAX_POSTINGS:
                continue
            for x, a in enumerate(held):
                for b in held[x + 1:]:
                    pairs[(a, b) if a < b else (b, a)] += 1
        partners: dict[str, set[str]] = defaultdict(set)
        for a, b in pairs:
            partners[a].add(b)
            partners[b].add(a)
        self._prints, self._holders, self._pairs, self._partners = dict(blobs), holders, dict(pairs), partners

    def _move(self, path: str, old: bytes, new: bytes, touched: set[tuple[str, str]]) -> None:
        """Move ``path`` from fingerprint bytes ``old`` to ``new``, recording every pair whose count changed."""
        before, after = set(Fingerprint("Q", old)), set(Fingerprint("Q", new))
        holders = self._holders
        for h in before - after:
            held = holders[h]
            if held.__class__ is str:  # its one holder was path
                del holders[h]
                continue
            self._credit(held, -1, touched)
            held.remove(path)
            if len(held) == 1:
                holders[h] = held[0]
            else:
                self._credit(held, 1, touched)
        for h in after - before:
            held = holders.get(h)
            if held is None:
                holders[h] = path
                continue
            if held.__class__ is str:
                held = holders[h] = [held]
            self._credit(held, -1, touched)
            held.append(path)
            self._credit(held, 1, touched)

    def _credit(self, held: list[str], sign: int, touched: set[tuple[str, str]]) -> None:
        """Add ``sign`` to the count of every pair of ``held`` when the line pairs them (2 to MAX_POSTINGS holders)."""
        if not 2 <= len(held) <= MAX_POSTINGS:
            return
        pairs = self._pairs
        for x, a in enumerate(held):
            for b in held[x + 1:]:
                pair = _pair(a, b)
                common = pairs.get(pair, 0) + sign
                touched.add(pair)
                if common:
                    pairs[pair] = common
                    if common == 1 and sign == 1:  # a new pair
                        self._partners[a].add(b)
                        self._partners[b].add(a)
                else:
                    del pairs[pair]
                    for one, other in ((a, b), (b, a)):
                        partners = self._partners[one]
                        partners.discard(other)
                        if not partners:
                            del self._partners[one]


def _useful(pair: tuple[str, str], common: int, lengths: dict[str, int], mapped: frozenset[str]) -> bool:
    """Whether :func:`detect_copies` can use a pair sharing ``common`` lines (see :func:`_shared_lines_python`)."""
    a, b = pair
    return a in mapped or b in mapped or _near_enough(common, lengths.get(a, 0), lengths.get(b, 0))


def update_copies(conn: sqlite3.Connection, *, repo_root: Path | None, updates: Sequence, removed: Sequence[str],
                  full: bool, shared_lines: SharedLines | None = None) -> int:
    """Refresh the fingerprints of the files this update wrote and recompute ``file_copies``.

    Runs inside the update's write transaction (:meth:`rag.store.index.Index.apply`), so
    readers see the copies of the generation they read. Fingerprints of unchanged files are
    read back from ``file_fingerprints``; those of new or changed files are computed from
    their chunks (``updates``: :class:`~rag.store.index.FileUpdate`). ``shared_lines``: the
    caller's :class:`SharedLines`, kept between its updates (the shared lines are counted afresh
    without one).

    Returns:
        The number of files recorded as copies.
    """
    if full:
        conn.execute("DELETE FROM file_fingerprints")
    for path in [*removed, *(u.path for u in updates)]:
        conn.execute("DELETE FROM file_fingerprints WHERE path=?", (path,))
    for u in updates:
        last = max(u.chunks, key=lambda c: (c.end, c.start), default=None)
        tail = "\n".join(last.text.split("\n")[-5:]) if last is not None else ""
        inline = getattr(u, "map_sources", None)  # an inline map, read before its payload was elided
        listed = inline if inline is not None else (
            map_sources(u.path, tail, repo_root) if "sourceMappingURL" in tail else [])
        blob = u.fingerprint if getattr(u, "fingerprint", None) is not None else file_fingerprint(u)
        conn.execute("INSERT INTO file_fingerprints (path, lines, map_sources) VALUES (?,?,?)",
                     (u.path, blob, json.dumps(listed) if listed else None))
    conn.execute("DELETE FROM file_fingerprints WHERE path NOT IN (SELECT path FROM files)")
    fingerprints: dict[str, Fingerprint] = {}
    blobs: dict[str, bytes] = {}
    maps: dict[str, list[str]] = {}
    for path, blob, listed in conn.execute("SELECT path, lines, map_sources FROM file_fingerprints"):
        fingerprints[path] = Fingerprint("Q", blob)
        blobs[path] = blob
        if listed:
            maps[path] = json.loads(listed)
    for (path,) in conn.execute("SELECT path FROM files WHERE path NOT IN (SELECT path FROM file_fingerprints)"):
        fingerprints[path] = Fingerprint("Q")  # written before m008: path rules only
        blobs[path] = b""
    shared = shared_lines.counts(blobs, involving=maps) if shared_lines is not None else None
    formats: dict[str, int] = {}

    def module_format(path: str) -> int:  # read from the working tree, only for near-identical scripts
        if path not in formats:
            formats[path] = walk_module_format(str(repo_root / path)) if repo_root is not None else 1
        return formats[path]

    relations = detect_copies(fingerprints, maps, shared=shared, module_format=module_format)
    conn.execute("DELETE FROM file_copies")
    conn.executemany("INSERT INTO file_copies (path, source, reason, rank, similarity) VALUES (?,?,?,?,?)",
                     [(r.path, r.source, r.reason, r.rank, r.similarity) for r in relations])
    return len({r.path for r in relations})
