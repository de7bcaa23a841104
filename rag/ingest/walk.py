"""Walk a repository and decide which files the engine may read.

Contract (DESIGN.md section 3, "Walk"):

* text files are chosen by extension (:data:`TEXT_EXTENSIONS`) or by a known
  extension-less name (``Dockerfile``, ``Makefile``, see :data:`TEXT_FILENAMES`);
  images (:data:`IMAGE_EXTENSIONS`) are collected separately, by path only;
* directories in :data:`SKIPPED_DIRS` are not entered (case-insensitive), nor is a
  Python virtual environment (a directory holding ``pyvenv.cfg``); an ignore-file
  negation re-includes inside them (``!vendor/patched-http/``: only what it names),
  except in :data:`NEVER_ENTERED_DIRS` (``.git``, ``.rag``, credential stores);
* a name that is not valid UTF-8 is skipped (``undecodable_name``), and so is a name holding a
  control or text-direction character (``control_character_name``: a newline would split a context
  header line, :data:`_CONTROL_IN_NAME`); ignore files are
  read only when they are regular files, a leading BOM dropped;
* build-output directories (:data:`OUTPUT_DIRS`: ``dist``, ``build``, ``out``)
  are read last, and only for code that exists nowhere else: a JS/TS file there (or a
  script a build copies as it is: Lua, SQL, GraphQL, Protocol Buffers, :data:`_OUTPUT_SCRIPT_TYPES`)
  is kept unless a file of the same module (:func:`_module_key`: ``dist/esm/core/index.js``
  of ``src/core/index.ts``) was found outside them, or another build of it stands for it better
  (one compiled copy, :func:`build_format_rank`: ``dist/x.js`` over ``dist/cjs/x.js``), it is a
  bundler's chunk of code found outside them (``resolveHTTPResponse-2fc435bb.mjs``
  of ``src/http/resolveHTTPResponse.ts``, :data:`_HASHED_CHUNK_RE`), it is typings of a module whose
  code is kept and says more than they do (:meth:`_Walker.choose_outputs`), or it is a single-file bundle
  (``*.umd.js``, ``bundles/``); other files there are skipped
  (``build_output``). An npm package that ships only ``dist/`` (uuid) or
  ``build/`` (yargs), or keeps real scripts in ``build/`` (fastify), is then
  searchable, while compiled copies of ``src/`` are not indexed twice
  (a deviation from DESIGN.md's list, which skips these directories outright);
* minified files (``*.min.js``, ``*.min.css`` …, and in build-output
  directories any file whose first 8 KB hold a line over 1,000 characters) are
  skipped (``minified``);
* secret files (``.env``, ``.env.*``, ``*.env``, ``id_rsa`` & co, ``*.pem``,
  ``*.key``, ``.npmrc``, ``.netrc``, ``.pypirc``, ``.git-credentials`` ...) are
  skipped wherever they are, except the example templates in
  :data:`ENV_TEMPLATE_NAMES` (their content still goes through
  :func:`rag.secrets.redact_secrets`);
* lock files (:data:`LOCK_FILES`) are skipped;
* every ``.gitignore`` and ``.szignore`` applies to its own directory with git's
  semantics (``pathspec.GitIgnoreSpec``): the deepest file with a matching
  pattern decides, the last matching pattern in it wins, ``!`` re-includes, and
  an excluded directory is never entered, so a negated file inside it stays
  excluded exactly as ``git check-ignore`` says. ``<root>/.git/info/exclude``
  is honoured below the root ``.gitignore`` as git does;
* symlinks (files and directories) are never followed: ``os.scandir`` entries
  are inspected with ``follow_symlinks=False``, so a symlink loop cannot hang;
* caps (:class:`WalkPolicy`) bound the per-file size, the total bytes, the file
  count and the directory depth.

Why not ``os.walk``/``Path.rglob``: ignore rules must be applied *before*
descending (git never enters an excluded directory), and ``DirEntry`` gives the
file type without an extra ``stat`` per entry. Binary detection is deferred to
:func:`read_text` so the walk itself never opens a file, except the head of a
candidate in a build-output directory (the minified check).

Everything skipped is counted by reason in ``WalkReport.skipped`` (reasons:
``symlink``, ``skipped_dir``, ``secret``, ``lockfile``, ``ignored``,
``unsupported_type``, ``too_large``, ``max_files``, ``max_total_bytes``,
``max_depth``, ``unreadable``, ``build_output``, ``minified``, ``virtualenv``,
``undecodable_name``, ``special_file`` for FIFOs, sockets and devices); the odd ones
are also listed by path in ``WalkReport.problems``. Output is sorted
by path and deterministic: entries are visited in name order, so caps always cut
at the same place.

Example::

    report = walk(Path("."), WalkPolicy(max_files=1000))
    for f in report.files:
        text = read_text(f.abs_path)   # None for binary files
"""
from __future__ import annotations

import codecs
import errno
import logging
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from rag.errors import RepoNotFoundError, UpdateCancelledError
from rag.text import CONTROL_CHARACTERS, DIRECTION_CONTROLS
from rag.types import MAX_PROBLEMS, WalkedFile, WalkReport

__all__ = [
    "build_format_rank",
    "browser_build",
    "BROWSER_DIRS",
    "es_target_folder",
    "format_folder",
    "FORMAT_DIRS",
    "module_format",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "DEFAULT_WALK_POLICY",
    "IMAGE_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "WalkPolicy",
    "decode_text",
    "classify_kind",
    "KINDS_VERSION",
    "DOC_DIRS",
    "DECLARATIONS",
    "in_doc_folder",
    "is_secret_file",
    "read_regular_file",
    "read_text",
    "text_file_type",
    "walk",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 1024 * 1024          # 1 MiB: larger files are data, not code
DEFAULT_MAX_TOTAL_BYTES = 512 * 1024 * 1024   # 512 MiB of accepted text per walk
DEFAULT_MAX_FILES = 50_000
DEFAULT_MAX_DEPTH = 32                        # directories below the root


@dataclass(frozen=True)
class WalkPolicy:
    """Caps applied by :func:`walk`; all sizes in bytes.

    Attributes:
        max_file_bytes: a text file larger than this is skipped (``too_large``).
        max_total_bytes: once the accepted files reach this total, further files
            are skipped (``max_total_bytes``).
        max_files: at most this many text files are accepted (``max_files``).
        max_depth: directories more than this many levels below the root are not
            entered (``max_depth``); files directly in the root are at depth 0.

    Example: ``walk(root, WalkPolicy(max_file_bytes=256 * 1024))``.
    """

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_depth: int = DEFAULT_MAX_DEPTH


DEFAULT_WALK_POLICY = WalkPolicy()

# The seed's list (.js .jsx .mjs .json .md .css .html .yml .service .conf .example)
# plus DESIGN.md's additions and a few obvious text formats. ``.d.ts`` is ``.ts``.
TEXT_EXTENSIONS: frozenset[str] = frozenset({
    ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts",
    ".json", ".md", ".markdown", ".rst", ".txt",
    ".css", ".scss", ".html", ".htm",
    ".yml", ".yaml", ".toml", ".ini", ".cfg", ".conf", ".service",
    ".example", ".py", ".sh", ".bash",
    ".go", ".java", ".rs", ".rb",  # languages with a definitions-only parser (rag/parse/grammars.py)
    # read as text only (line windows, no structure): other languages, schemas, components, docs, stubs
    ".mdx", ".adoc", ".pyi",
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".php", ".swift", ".kt", ".kts", ".scala", ".dart",
    ".lua", ".ex", ".exs", ".erl", ".hrl", ".clj", ".hs", ".ml", ".pl", ".pm", ".r", ".jl", ".groovy", ".gradle",
    ".vue", ".svelte", ".astro", ".sql", ".graphql", ".graphqls", ".gql", ".proto", ".tf", ".hcl", ".nix",
    ".zsh", ".fish", ".ps1", ".cmake", ".less", ".sass", ".properties",
    ".coffee", ".litcoffee", ".elm", ".fs", ".fsx", ".vb", ".zig", ".nim", ".sol",
    # view templates: a web app's pages (Express views, Flask/Django/Jinja, Rails, Shopify/Jekyll, Symfony)
    ".ejs", ".hbs", ".handlebars", ".mustache", ".pug", ".njk", ".jinja", ".jinja2", ".j2", ".liquid", ".twig", ".erb",
})
IMAGE_EXTENSIONS: frozenset[str] = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg"})
# Extension-less files that are text; value = WalkedFile.file_type.
TEXT_FILENAMES: dict[str, str] = {"dockerfile": "dockerfile", "makefile": "makefile", "gemfile": "gemfile",
                                   "rakefile": "rakefile", "jenkinsfile": "jenkinsfile", "procfile": "procfile"}

SKIPPED_DIRS: frozenset[str] = frozenset({
    ".git", ".rag", "node_modules", "logs", "archive", ".vscode", "priv", "prompts",
    "coverage", "target", "vendor", "__pycache__", ".next", ".idea",
    ".svn", ".hg", ".ssh", ".aws", ".gnupg", ".kube", ".gradle",
    # Python virtual environments and installed packages: not the repository's code.
    "venv", ".venv", "site-packages", "dist-packages", "__pypackages__", ".tox", ".nox",
})
#: Skipped directories that an ignore-file negation can never re-include: version-control
#: internals, the index itself and credential stores.
NEVER_ENTERED_DIRS: frozenset[str] = frozenset({
    ".git", ".rag", ".svn", ".hg", ".ssh", ".aws", ".gnupg", ".kube",
})
#: A directory holding this file is a Python virtual environment (PEP 405), whatever its name.
VENV_MARKER = "pyvenv.cfg"
# Build output: read last, for code found nowhere else (see the module docstring).
OUTPUT_DIRS: frozenset[str] = frozenset({"dist", "build", "out"})
_OUTPUT_CODE_TYPES = frozenset({"js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts"})
_OUTPUT_SCRIPT_TYPES = frozenset({"lua", "sql", "graphql", "graphqls", "gql", "proto"})
"""Sources a build copies as they are (bullmq 5.34.0 ships its Redis Lua scripts only in ``dist/esm/commands/``
and ``dist/cjs/commands/``): read from build output as its code is, one copy per file name and type."""
_MINIFIED_RE = re.compile(r"[.-]min\.(?:js|mjs|cjs|css)$", re.I)
# Single-file bundles of the whole package (every module again, in one file).
_BUNDLE_RE = re.compile(r"(^|/)bundles?/|\.(umd|bundle|iife)\.[mc]?js$", re.I)
DECLARATIONS = (".d.ts", ".d.mts", ".d.cts")
"""TypeScript declaration files (their suffixes, lower-case): types, not the implementation."""
_HASHED_CHUNK_RE = re.compile(r"^(?P<base>.+?)-(?P<hash>[A-Za-z0-9_-]{8})$")
"""A bundler's chunk name ``[name]-[hash]`` (Rollup, Vite, tsup and esbuild name the chunks they split
out so: ``resolveHTTPResponse-2fc435bb.mjs``, ``index-BXcK2LqP.js``); the hash is 8 characters of
hex or base64url holding a digit or an upper-case letter, so a word (``-handlers``) is not one."""

# Example templates of secret files: safe to index (values are redacted anyway).
ENV_TEMPLATE_NAMES: frozenset[str] = frozenset({
    ".env.example", ".env.sample", ".env.template", ".env.dist",
})
_SECRET_NAMES = frozenset({
    ".env", ".npmrc", ".netrc", "_netrc", ".pypirc", ".git-credentials", ".htpasswd",
    ".pgpass", ".dockercfg",
    # Credential documents tools write under fixed names (Google OAuth/ADC, Rails-style and
    # dynaconf secrets files).
    "credentials.json", "secrets.json", "secrets.yml", "secrets.yaml", "secrets.toml", ".secrets.toml",
})
# Google OAuth client files: client_secret.json, client_secret_<id>.apps.googleusercontent.com.json.
_CLIENT_SECRET_RE = re.compile(r"client_secret[\w.-]*\.json\Z")
_SECRET_SUFFIXES = (".env", ".pem", ".key", ".p12", ".pfx", ".jks", ".keystore")
_SSH_KEY_RE = re.compile(r"id_(?:rsa|dsa|ecdsa|ed25519)(?:[._-].*)?\Z")

LOCK_FILES: frozenset[str] = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
    "bun.lock", "poetry.lock", "pipfile.lock", "pdm.lock", "uv.lock", "cargo.lock",
    "composer.lock", "gemfile.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock",
    "podfile.lock", "packages.lock.json", "deno.lock",
})

IGNORE_FILES = (".gitignore", ".szignore")


def is_secret_file(name: str) -> bool:
    """Whether a file *name* (no directory) is a credentials file the walk must skip.

    ``.env``, ``.env.*`` (except :data:`ENV_TEMPLATE_NAMES`), ``*.env``, SSH keys
    (``id_rsa``, ``id_ed25519.pub``, ``id_rsa_work`` ...), key and certificate
    stores (``*.pem``, ``*.key``, ``*.p12`` ...), tool credential files
    (``.npmrc``, ``.netrc``, ``.pypirc``, ``.git-credentials`` ...) and credential documents
    (``credentials.json``, ``secrets.json``/``.yml``/``.toml``, ``client_secret*.json``).
    """
    lower = name.lower()
    if lower in ENV_TEMPLATE_NAMES:
        return False
    return (
        lower in _SECRET_NAMES
        or lower.startswith(".env.")
        or lower.endswith(_SECRET_SUFFIXES)
        or _SSH_KEY_RE.match(lower) is not None
        or _CLIENT_SECRET_RE.match(lower) is not None
    )


def text_file_type(name: str) -> str | None:
    """The ``WalkedFile.file_type`` of a text file *name*, or ``None`` if not a text type.

    Lower-case extension without the dot (``js``; ``d.ts`` gives ``ts``), or the
    lower-case name of a known extension-less file (``dockerfile``).
    """
    lower = name.lower()
    dot = lower.rfind(".")
    if dot > 0:
        ext = lower[dot:]
        if ext in TEXT_EXTENSIONS or lower in ENV_TEMPLATE_NAMES:
            return ext[1:]
        return None
    return TEXT_FILENAMES.get(lower)


def _load_ignore_spec(directory: str, names: set[str], extra: list[str] | None = None) -> GitIgnoreSpec | None:
    """Compile ``extra`` + ``.gitignore`` + ``.szignore`` lines of *directory* (later lines win)."""
    lines: list[str] = list(extra or ())
    for ignore_name in IGNORE_FILES:
        if ignore_name not in names:
            continue
        lines.extend(_read_ignore_lines(os.path.join(directory, ignore_name)))
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - pathspec's GitIgnorePatternError (a ValueError), re.error for a bad range
        return GitIgnoreSpec.from_lines(_patterns_that_compile(lines, directory))


def _patterns_that_compile(lines: list[str], directory: str) -> list[str]:
    """``lines`` without the patterns pathspec refuses (a lone ``!``, a trailing backslash, a reversed
    range such as ``[z-a]``), each logged with its directory. git reads such an ignore file and those
    patterns match nothing, so dropping them keeps git's result; refusing the file failed the whole
    index build."""
    kept: list[str] = []
    for line in lines:
        try:
            GitIgnoreSpec.from_lines([line])
        except Exception as exc:  # noqa: BLE001 - as above
            logger.warning("ignore rules in %r (.gitignore, .szignore or .git/info/exclude): pattern %r skipped, "
                           "it matches nothing (%s)", directory, line, exc)
            continue
        kept.append(line)
    return kept


def _read_info_exclude(root: str) -> list[str]:
    path = os.path.join(root, ".git", "info", "exclude")
    return _read_ignore_lines(path) if os.path.lexists(path) else []


MAX_IGNORE_FILE_BYTES = 1024 * 1024
"""An ignore file larger than this is read only this far (a pattern list, not data)."""


def _read_ignore_lines(path: str) -> list[str]:
    """The lines of one ignore file, as git reads them; ``[]`` when it cannot be read.

    Only a regular file is opened (``O_NONBLOCK`` and an ``fstat`` check, so a FIFO or
    device named ``.gitignore`` can never block the walk), at most
    :data:`MAX_IGNORE_FILE_BYTES`, and a leading UTF-8 byte-order mark is dropped, as
    git's ``dir.c`` does (``skip_utf8_bom``), so it never sticks to the first pattern.
    Anything else is logged with the reason and ignored.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        logger.warning("cannot read ignore file %r: %s", path, exc.__class__.__name__)
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            logger.warning("ignore file %r is not a regular file; not read", path)
            return []
        data = os.read(fd, MAX_IGNORE_FILE_BYTES)
    except OSError as exc:
        logger.warning("cannot read ignore file %r: %s", path, exc.__class__.__name__)
        return []
    finally:
        os.close(fd)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    return data.decode("utf-8", errors="replace").splitlines()


def _ignore_verdict(levels: list[tuple[str, GitIgnoreSpec]], rel: str) -> bool | None:
    """Git precedence: the deepest level with a matching pattern decides.

    Returns ``True`` (ignored), ``False`` (re-included by a ``!`` pattern) or ``None`` (no
    pattern matches).
    """
    for base, spec in reversed(levels):
        result = spec.check_file(rel[len(base):])
        if result.include is not None:
            return result.include
    return None


def _is_ignored(levels: list[tuple[str, GitIgnoreSpec]], rel: str) -> bool:
    return bool(_ignore_verdict(levels, rel))


def _negations_below(levels: list[tuple[str, GitIgnoreSpec]], rel_dir: str) -> bool:
    """Whether some ``!`` pattern names ``rel_dir`` (ending in ``/``) or a path below it.

    Used to enter a directory of the built-in skip list only where the user re-included
    something inside it. A pattern counts when its text, read from its ignore file's
    directory, starts with the directory's path (``!vendor/patched-http/`` for ``vendor/``)
    or, for a pattern without a slash before its end, names the directory itself.
    """
    for base, spec in levels:
        if not rel_dir.startswith(base):
            continue
        local = rel_dir[len(base):]
        for pattern in spec.patterns:
            if pattern.include is not False:
                continue
            text = (getattr(pattern, "pattern", None) or "").lstrip("!").lstrip("/")
            if not text:
                continue
            anchored = "/" in text.rstrip("/")
            if anchored and (text.startswith(local) or local.startswith(text.rstrip("/") + "/")):
                return True
            if not anchored and text.rstrip("/") == local.rstrip("/").rsplit("/", 1)[-1]:
                return True
    return False


class _Walker:
    """One walk's mutable state; :func:`walk` is the public entry point."""

    def __init__(self, root: str, policy: WalkPolicy, should_stop=None) -> None:
        self.root = root
        self.policy = policy
        self.should_stop = should_stop
        self.files: list[WalkedFile] = []
        self.images: list[str] = []
        self.skipped: dict[str, int] = {}
        self.secret_files: list[str] = []
        self.problems: list[tuple[str, str]] = []
        self.total_bytes = 0
        self.deferred: list[tuple[str, str, int, list[tuple[str, GitIgnoreSpec]]]] = []
        self.output_keys: set[str] | None = None  # module keys (_module_key), set while reading build output
        self.output_choices: dict[str, list[tuple[os.DirEntry, str, str]]] = {}  # module key → its compiled copies
        self.source_stems: frozenset[str] = frozenset()  # stems of the code found outside them
        self.siblings: set[str] = set()  # lower-case names in the directory being read
        self.started_ns = time.time_ns()  # every file's seen_ns: its stat was taken after this

    def skip(self, reason: str, path: str | None = None) -> None:
        """Count one skipped entry; an odd one (``path`` given) is also listed by path."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if path is not None and len(self.problems) < MAX_PROBLEMS:
            self.problems.append((path, reason))

    def walk_dir(self, abs_dir: str, rel_dir: str, depth: int, levels: list[tuple[str, GitIgnoreSpec]],
                 *, only_reincluded: bool = False) -> None:
        """Visit one directory.

        ``only_reincluded``: the directory is on the built-in skip list but the user's
        ignore files re-include something inside it (``!vendor/patched-http/``); only
        entries a ``!`` pattern re-includes, or that lead to one, are taken.
        """
        if self.should_stop is not None and self.should_stop():
            raise UpdateCancelledError("the walk was stopped before it finished")
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            logger.warning("cannot list directory %r: %s", rel_dir or ".", exc.__class__.__name__)
            self.skip("unreadable", rel_dir or ".")
            return
        if depth > 0 and any(e.name == VENV_MARKER for e in entries):
            logger.info("skipping %r: a Python virtual environment (%s)", rel_dir, VENV_MARKER)
            self.skip("virtualenv")
            return
        self.siblings = {e.name.lower() for e in entries}
        # Like git (>= 2.32), a symlinked ignore file is not read; nor is anything but a regular file.
        ignore_names = {e.name for e in entries if e.name in IGNORE_FILES and not e.is_symlink()}
        extra = _read_info_exclude(abs_dir) if depth == 0 else None
        spec = _load_ignore_spec(abs_dir, ignore_names, extra) if (extra or ignore_names) else None
        if spec is not None:
            levels = [*levels, (rel_dir, spec)]
        subdirs: list[tuple[str, str, bool]] = []
        for entry in entries:
            rel = rel_dir + entry.name
            if not _utf8_name(rel):
                # Paths are stored as UTF-8 text; a name that is not valid UTF-8 (bytes
                # ``caf\xe9.js``, decoded by os.scandir with surrogate escapes) cannot be.
                logger.warning("skipping %s: its name is not valid UTF-8", os.fsencode(rel).decode("utf-8", "backslashreplace"))
                self.skip("undecodable_name", os.fsencode(rel).decode("utf-8", "backslashreplace"))
                continue
            if _CONTROL_IN_NAME.search(entry.name):
                # A name is one line of plain text in every listing, citation and context header: a newline in
                # it could forge a header line of the context given to the model.
                logger.warning("skipping %s: its name holds a control character",
                               rel.encode("unicode_escape").decode("ascii"))
                self.skip("control_character_name", rel)
                continue
            try:
                if entry.is_symlink():
                    self.skip("symlink")
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if only_reincluded:
                    verdict = _ignore_verdict(levels, rel + "/" if is_dir else rel)
                    if verdict is not False:
                        if is_dir and verdict is None and _negations_below(levels, rel + "/"):
                            subdirs.append((entry.path, rel + "/", True))
                        else:
                            self.skip("skipped_dir" if is_dir else "ignored")
                        continue
                if is_dir:
                    lower = entry.name.lower()
                    if lower in SKIPPED_DIRS and lower not in NEVER_ENTERED_DIRS and levels \
                            and _ignore_verdict(levels, rel + "/") is False:
                        subdirs.append((entry.path, rel + "/", False))  # the user re-included it
                    elif lower in SKIPPED_DIRS and lower not in NEVER_ENTERED_DIRS and levels \
                            and _negations_below(levels, rel + "/"):
                        subdirs.append((entry.path, rel + "/", True))
                    elif lower in SKIPPED_DIRS:
                        self.skip("skipped_dir")
                    elif levels and _is_ignored(levels, rel + "/"):
                        self.skip("ignored")
                    elif depth + 1 > self.policy.max_depth:
                        self.skip("max_depth")
                    elif entry.name.lower() in OUTPUT_DIRS and self.output_keys is None:
                        self.deferred.append((entry.path, rel + "/", depth + 1, levels))
                    else:
                        subdirs.append((entry.path, rel + "/", False))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    self.skip("special_file", rel)  # FIFOs, sockets, devices: never opened
                    continue
                self.visit_file(entry, rel, levels)
            except OSError as exc:
                logger.warning("cannot stat %r: %s", rel, exc.__class__.__name__)
                self.skip("unreadable", rel)
        for abs_sub, rel_sub, restricted in subdirs:
            self.walk_dir(abs_sub, rel_sub, depth + 1, levels, only_reincluded=restricted)

    def visit_file(self, entry: os.DirEntry, rel: str, levels: list[tuple[str, GitIgnoreSpec]]) -> None:
        name = entry.name
        lower = name.lower()
        if is_secret_file(name):
            self.skip("secret")
            if entry.is_file(follow_symlinks=False):
                self.secret_files.append(rel)
            return
        if lower in LOCK_FILES:
            self.skip("lockfile")
            return
        file_type = text_file_type(name)
        is_image = file_type is None and os.path.splitext(lower)[1] in IMAGE_EXTENSIONS
        if file_type is None and not is_image:
            self.skip("unsupported_type")
            return
        if levels and _is_ignored(levels, rel):
            self.skip("ignored")
            return
        if _MINIFIED_RE.search(lower):
            self.skip("minified")
            return
        if self.output_keys is not None:
            key = _output_key(rel, file_type, output=True)
            bundle = _BUNDLE_RE.search(rel) is not None
            chunk_of_source = _unhashed_stem(name) in self.source_stems  # dist/x-2fc435bb.mjs of src/x.ts
            if is_image or key is None or key in self.output_keys or bundle or chunk_of_source:
                self.skip("build_output")
                return
            if _looks_minified(entry.path):  # hashed bundles (out/_next/static/chunks/main-3f2a.js)
                self.skip("minified")
                return
            # one compiled copy per module, chosen when the build output has been read (output_choices)
            self.output_choices.setdefault(key, []).append((entry, rel, file_type))
            return
        self.take(entry, rel, file_type, is_image=is_image)

    def choose_outputs(self) -> None:
        """Keep one compiled copy of each module found only in build output: the one that best stands for
        it (a build for Node over one for browsers, :func:`browser_build`; then an ES module build by its content,
        :func:`module_format`, then :func:`build_format_rank`, then
        the shorter path: ``dist/x.js`` over ``dist/cjs/x.js``, ``dist/esm/x.js`` over a CommonJS
        ``dist/x.js``), the next one when that cannot be read or is too large; and its best declaration file
        too when that is larger than the code (it declares more than the code implements: interfaces and
        option types with their documentation, which compile to nothing — bullmq 5.34.0's
        ``interfaces/worker-options.js`` is ``export {};``, its ``.d.ts`` documents every option — or an
        esbuild build stripped the comments the declarations keep). The others are skipped as
        ``build_output``."""
        for candidates in self.output_choices.values():
            code = [c for c in candidates if not c[1].lower().endswith(DECLARATIONS)]
            declarations = [c for c in candidates if c[1].lower().endswith(DECLARATIONS)]
            formats = {c[1]: module_format(c[0].path) for c in code} if len(code) > 1 else {}
            code.sort(key=lambda c: (browser_build(c[1]), formats.get(c[1], 1), build_format_rank(c[1]), len(c[1]),
                                     c[1]))
            declarations.sort(key=lambda c: (browser_build(c[1]), build_format_rank(c[1]), len(c[1]), c[1]))
            kept = self._take_first(code)
            if declarations and (kept is None or _size(declarations[0][0]) > kept.size):
                self._take_first(declarations)
            else:
                for _ in declarations:
                    self.skip("build_output")
        self.output_choices.clear()

    def _take_first(self, candidates: list[tuple[os.DirEntry, str, str]]) -> WalkedFile | None:
        """Take the first of ``candidates`` (best first) the walk can keep; the others are ``build_output``."""
        kept = None
        for entry, rel, file_type in candidates:
            if kept is None:
                before = len(self.files)
                self.take(entry, rel, file_type, is_image=False)
                if len(self.files) > before:
                    kept = self.files[-1]
                    continue
                if len(self.files) >= self.policy.max_files:  # no room for any: the next ones would fail too
                    kept = False
                continue
            self.skip("build_output")
        return kept or None

    def take(self, entry: os.DirEntry, rel: str, file_type: str | None, *, is_image: bool) -> None:
        """List a file the walk keeps (or an image), within the policy's caps."""
        if is_image:
            self.images.append(rel)
            return
        policy = self.policy
        if len(self.files) >= policy.max_files:
            self.skip("max_files")
            return
        st = entry.stat(follow_symlinks=False)
        if st.st_size > policy.max_file_bytes:
            self.skip("too_large", rel)
            return
        if self.total_bytes + st.st_size > policy.max_total_bytes:
            self.skip("max_total_bytes")
            return
        self.total_bytes += st.st_size
        self.files.append(WalkedFile(
            path=rel,
            os_path=entry.path,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            file_type=file_type,  # type: ignore[arg-type]  # not None here
            ctime_ns=st.st_ctime_ns,
            ino=st.st_ino,
            seen_ns=self.started_ns,
        ))


_CONTROL_IN_NAME = re.compile(f"[{CONTROL_CHARACTERS}{DIRECTION_CONTROLS}]")
"""Characters a file or folder name may not hold to be read: the C0 and C1 controls and DEL (a newline would
split a context header in two) and the text-direction controls (``bidi\u202egnp.js`` shows as ``bidisj.png``;
Unicode TR 9, "Trojan Source", CVE-2021-42574)."""


def _utf8_name(rel: str) -> bool:
    """Whether a path from ``os.scandir`` is valid UTF-8 (no surrogate escapes)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _looks_minified(path: str, *, head_bytes: int = 8192, max_line: int = 1000) -> bool:
    """Whether the file's first ``head_bytes`` hold a line longer than ``max_line`` characters, an
    inline source map's comment (``//# sourceMappingURL=data:…``, :data:`_INLINE_MAP_LINE`) aside: a
    short compiled module ends in one, and the indexer elides its payload
    (:func:`rag.ingest.prepare.elide_inline_source_map`).

    Read only for candidates in build-output directories (rare), so the walk stays
    stat-only elsewhere. An unreadable file is not minified (the indexer reports it).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(head_bytes)
    except OSError:
        return False
    return any(len(line) > max_line and not _INLINE_MAP_LINE.match(line) for line in head.split(b"\n"))


_INLINE_MAP_LINE = re.compile(rb"\s*(?://|/\*)\s*[#@]\s*sourceMappingURL=data:")
"""The start of an inline source map's comment line (bytes)."""


def _stem(name: str) -> str:
    """A file name up to its first dot, lower-case: ``Observable.d.ts`` → ``observable``."""
    return name.split(".", 1)[0].lower()


_SOURCE_DIRS = frozenset({"src", "source", "sources", "lib"})
"""Folders a package keeps its code under, cut from a module key (:func:`_module_key`)."""
FORMAT_DIRS = frozenset({"cjs", "commonjs", "mjs", "umd", "amd", "system", "iife"})
"""Build folders named by a module format, besides the ECMAScript target folders (:func:`format_folder`)."""
_VARIANT_DIRS = frozenset({*FORMAT_DIRS, "module", "modules", "node", "browser", "types", "typings", "legacy", "modern",
                           *_SOURCE_DIRS, *OUTPUT_DIRS})
"""Folders that name a build's format or target (``dist/cjs/``, ``dist/query/esm/``, ``build/legacy/``) rather than
a module: they are dropped from a module key, so two formats of one module share it; so are the ECMAScript target
folders :func:`es_target_folder` recognises (``esm5/``, ``esm2015/``, ``fesm2022/``)."""
_ES_TARGET_FOLDER = re.compile(r"f?esm?(?P<target>5|6|20\d\d|next)?")
"""An ECMAScript build folder named by its module format and target: ``es``, ``esm``, ``es5``, ``esm5``, ``es2015``,
``esm2015``, ``fesm2022`` (Angular's flattened ES modules), ``esnext``."""


def es_target_folder(folder: str) -> str | None:
    """``"es5"`` for a folder of an ES5 build (``es5``, ``esm5``, ``fesm5``), ``"esm"`` for one of a newer
    ECMAScript build (``es``, ``esm``, ``es6``, ``esm2015``, ``fesm2022``, ``esnext``), else ``None``
    (case-insensitive; :data:`_ES_TARGET_FOLDER`). TypeScript and Angular's package format name their build
    folders so: class-validator 0.14.1 ships ``cjs/``, ``esm5/`` and ``esm2015/`` at the package root."""
    match = _ES_TARGET_FOLDER.fullmatch(folder.lower())
    if match is None:
        return None
    return "es5" if match["target"] == "5" else "esm"


BROWSER_DIRS = frozenset({"browser", "browsers", "web", "deno", "worker", "workers", "edge"})
"""Build folders for a platform other than Node (yaml 2.6.1 ships its Node build in ``dist/`` and an ES module
build for browsers in ``browser/dist/``)."""


def browser_build(path: str) -> bool:
    """Whether a build output's folders say it is built for a browser or another non-Node platform
    (:data:`BROWSER_DIRS`, case-insensitive): ``browser/dist/errors.js``, ``dist/browser/index.js``. Of a module's
    builds, one for Node stands for it first (the walk's one-compiled-copy rule, copy rule 1b): it is what the
    package's ``main`` names, where a reader of the package looks and what a question naming a path names."""
    return any(folder in BROWSER_DIRS for folder in path.lower().split("/")[:-1])


def format_folder(folder: str) -> bool:
    """Whether a folder name says which module format its build is in (:data:`FORMAT_DIRS`, or an ECMAScript
    target folder: :func:`es_target_folder`), case-insensitive."""
    folder = folder.lower()
    return folder in FORMAT_DIRS or es_target_folder(folder) is not None


def _variant_folder(folder: str) -> bool:
    """Whether a (lower-case) folder names a build's format or target (:data:`_VARIANT_DIRS`)."""
    return folder in _VARIANT_DIRS or es_target_folder(folder) is not None


def _module_key(rel: str, *, output: bool) -> str:
    """The module a code file stands for, for the walker's one-compiled-copy rule: its path, lower-case,
    without extensions, cut after the build-output folder (``output``) or after its last source folder
    (:data:`_SOURCE_DIRS`), then without format folders (:func:`_variant_folder`, wherever they sit):
    ``dist/esm/core/index.js`` → ``core/index``, ``dist/query/cjs/index.js`` → ``query/index``,
    ``src/core/index.ts`` → ``core/index``, ``index.js`` → ``index``.

    Before, the key was the file's stem alone, so in got 14.4.5 ``dist/source/index.js`` claimed ``index`` and
    ``dist/source/core/index.js`` (its request class) and ``dist/source/as-promise/index.js`` were skipped as its
    copies: every ``folder/index.js`` of a compiled-only package after the first."""
    parts = rel.lower().split("/")
    folders = parts[:-1]
    marks = [i for i, folder in enumerate(folders) if folder in (OUTPUT_DIRS if output else _SOURCE_DIRS)]
    if marks:  # after the first build-output folder, or after the last source folder
        folders = folders[(marks[0] if output else marks[-1]) + 1:]
    return "/".join([*(f for f in folders if not _variant_folder(f)), _stem(parts[-1])])


_ES_MODULE_DIRS = frozenset({"mjs", "module", "modules", "modern"})
"""ES module build folders besides the ECMAScript target folders (:func:`es_target_folder`)."""
_COMMONJS_DIRS = frozenset({"cjs", "commonjs"})


def build_format_rank(path: str) -> int:
    """How well a compiled file stands for its module among its other builds (smaller is better): 0 in the
    build's own layout (``dist/x.js``, ``dist/source/x.js``), 1 in an ES module folder (``dist/esm/``,
    ``esm2015/``), 2 in another format or target folder (``dist/browser/``, ``dist/types/``, ``lib/umd/``, an ES5
    build's ``esm5/``), 3 CommonJS (a ``cjs``/``commonjs`` folder, or ``.cjs``/``.cts``); the worst of its folders and
    extension counts.

    An ES module build keeps the source's ``import``/``export`` lines and none of the CommonJS interop
    (``Object.defineProperty(exports, "__esModule", …)``, ``__toCommonJS``), so it reads like the source and its
    lines are where a reader of the package looks (hono 4.6.14 ships ``dist/x.js`` and ``dist/cjs/x.js``; the walk
    kept the CommonJS copy, the first in name order); an ES5 build has its classes rewritten as functions
    (class-validator 0.14.1's ``esm5/`` beside ``esm2015/``). Used by the walk's one-compiled-copy rule and by
    :mod:`rag.ingest.copies` (rule 1b), so both keep the same file."""
    parts = path.lower().split("/")
    rank = 3 if parts[-1].endswith((".cjs", ".cts")) else 0
    for folder in parts[:-1]:
        target = es_target_folder(folder)
        if folder in _COMMONJS_DIRS:
            rank = 3
        elif target == "esm" or folder in _ES_MODULE_DIRS:
            rank = max(rank, 1)
        elif _variant_folder(folder) and folder not in _SOURCE_DIRS and folder not in OUTPUT_DIRS:
            rank = max(rank, 2)
    return rank


def _output_key(rel: str, file_type: str | None, *, output: bool) -> str | None:
    """The key of the one-compiled-copy rule: JavaScript-family code by its module (:func:`_module_key`), a
    script a build copies (:data:`_OUTPUT_SCRIPT_TYPES`) by its file name and type (``addjob-9.lua``, so
    ``x.sql`` and ``x.js`` are two, and Gradle's ``build/resources/main/db/V1__init.sql`` is a copy of
    ``src/main/resources/db/V1__init.sql``); ``None`` for other files (build output keeps none of them)."""
    if file_type in _OUTPUT_CODE_TYPES:
        return _module_key(rel, output=output)
    if file_type in _OUTPUT_SCRIPT_TYPES:  # by name: resources are copied into folders of other names
        return f"{_stem(rel.rsplit('/', 1)[-1])}.{file_type}"  # (src/main/resources/ → build/resources/main/)
    return None


_ES_MODULE_SYNTAX = re.compile(rb"^[ \t]*(?:export[ \t]+(?:default\b|\{|\*|const\b|let\b|var\b|function\b|class\b|async\b)"
                               rb"|import[ \t]+[\w{*'\"])", re.M)
_COMMONJS_SYNTAX = re.compile(rb"\bmodule\.exports\b|\bexports\.[\w$]+[ \t]*=|\brequire\([ \t]*['\"]|__esModule")


def module_format(path: str, *, head_bytes: int = 8192) -> int:
    """0 for an ES module (``export``/``import`` statements and no CommonJS), 2 for CommonJS (``exports.x =``,
    ``module.exports``, ``require('…')``, ``__esModule`` and no ES module syntax), 1 when its first and last
    ``head_bytes`` say neither or both (or it cannot be read): a package's folder names may lie (``dist/`` for
    CommonJS beside ``dist/esm/``). The last bytes count because a bundle exports at its end (Rollup's
    ``export { … }``, a UMD bundle's ``exports.List = List``): immutable 5.0.3's two 160 KB bundles begin with a
    licence and code only."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(head_bytes)
            if len(head) == head_bytes:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(head_bytes, fh.tell() - head_bytes))
                head += b"\n" + fh.read(head_bytes)
    except OSError:
        return 1
    esm, cjs = _ES_MODULE_SYNTAX.search(head) is not None, _COMMONJS_SYNTAX.search(head) is not None
    return 0 if esm and not cjs else 2 if cjs and not esm else 1


def _size(entry: os.DirEntry) -> int:
    """``entry``'s size in bytes (0 when it cannot be read)."""
    try:
        return entry.stat(follow_symlinks=False).st_size
    except OSError:
        return 0


def _unhashed_stem(name: str) -> str | None:
    """The stem of a bundler's chunk name without its hash (:data:`_HASHED_CHUNK_RE`):
    ``resolveHTTPResponse-2fc435bb.mjs`` → ``resolvehttpresponse``; ``None`` for other names.

    Only compared with the stems of code found outside the build-output directories: two chunks
    of one name (``chunk-5ZQYJ3KL.js``, ``chunk-QX2B7R4D.js``) are different code when the
    package ships nothing else, so they are not each other's copies."""
    match = _HASHED_CHUNK_RE.match(name.split(".", 1)[0])
    if match is None:
        return None
    digest = match["hash"]
    if not any(ch.isdigit() or ch.isupper() for ch in digest):
        return None
    return match["base"].lower()


def walk(root: Path, policy: WalkPolicy = DEFAULT_WALK_POLICY, *, should_stop=None) -> WalkReport:
    """List the text files and images of the repository at *root*.

    Args:
        root: repository root directory (may itself be a symlink; nothing below
            it is followed).
        policy: caps, see :class:`WalkPolicy`.
        should_stop: polled before each directory; when it returns true the walk raises
            :class:`~rag.errors.UpdateCancelledError` (a deadline or shutdown).

    Returns:
        ``WalkReport`` with ``files`` (``WalkedFile``, sorted by repository-relative
        POSIX path), ``images`` (sorted relative paths) and ``skipped``
        (reason -> count). An empty directory gives an empty report.

    Raises:
        RepoNotFoundError: *root* does not exist or is not a directory.
    """
    root_str = os.fspath(root)
    if not os.path.isdir(root_str):
        raise RepoNotFoundError(f"Repository path does not exist or is not a directory: {root_str}")
    walker = _Walker(os.path.abspath(root_str), policy, should_stop)
    walker.walk_dir(walker.root, "", 0, [])
    # Build output last: only code whose module (_module_key) appears nowhere outside it.
    code = [f.path for f in walker.files if f.file_type in _OUTPUT_CODE_TYPES]
    walker.output_keys = {_output_key(f.path, f.file_type, output=False) for f in walker.files} - {None}
    walker.source_stems = frozenset(_stem(path.rsplit("/", 1)[-1]) for path in code)
    for abs_dir, rel_dir, depth, levels in walker.deferred:
        walker.walk_dir(abs_dir, rel_dir, depth, levels)
    walker.choose_outputs()
    walker.files.sort(key=lambda f: f.path)
    walker.images.sort()
    logger.debug("walked %s: %d files, %d images, skipped %s",
                 root_str, len(walker.files), len(walker.images), walker.skipped)
    return WalkReport(files=walker.files, images=walker.images, skipped=dict(sorted(walker.skipped.items())),
                      secret_files=sorted(walker.secret_files), problems=walker.problems)


def read_regular_file(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``), only if it is still a regular file, not a link.

    The walk checked each file with ``lstat``, but the tree may change before it is read: a
    file replaced by a FIFO would block ``open`` forever (the index build hung), one replaced by
    a symbolic link would be read through it (a file outside the repository indexed). Opened with
    ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``, as the ignore files are.

    Raises:
        OSError: it cannot be opened (gone, a link: ``ELOOP``) or is not a regular file (``EINVAL``).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return fh.read() if limit is None else fh.read(limit)


def read_text(path: Path) -> str | None:
    """Read a walked file as text.

    Returns ``None`` for a binary file (one containing a NUL byte, git's own
    heuristic). Otherwise the text as :func:`decode_text` decodes it (UTF-8, a BOM removed,
    a legacy Latin-1/Windows-1252 file recognised); line endings are left as they are.

    Raises:
        OSError: the file cannot be read (the indexer counts it as ``unreadable``).
    """
    return decode_text(read_regular_file(path))


_UNICODE_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_text(data: bytes) -> str | None:
    """Decode file bytes as :func:`read_text` does (``None`` for binary data).

    A UTF-16 or UTF-32 file with its byte-order mark (Windows editors and PowerShell
    write them) is decoded by it; without a mark, a NUL byte means binary (git's
    heuristic). Otherwise UTF-8, a leading UTF-8 BOM dropped; a file that is not valid
    UTF-8 and holds no valid multi-byte UTF-8 sequence at all is a legacy single-byte
    file, decoded as Windows-1252 (a superset of Latin-1 for text); otherwise its
    undecodable bytes are replaced by U+FFFD.
    """
    for bom, encoding in _UNICODE_BOMS:
        if data.startswith(bom):
            text = data[len(bom):].decode(encoding, errors="replace")
            return None if "\x00" in text else text
    if b"\x00" in data:
        return None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    if any(ch > "\x7f" and ch != "\ufffd" for ch in text):
        return text  # UTF-8 with a few stray bytes
    # Not one valid multi-byte sequence: a single-byte legacy encoding. Windows-1252 is ISO-8859-1
    # (Latin-1) plus letters and punctuation in 0x80-0x9F (WHATWG's Encoding Standard decodes
    # "latin1"/"iso-8859-1" labels as windows-1252 for this reason); its five unassigned bytes are
    # replaced.
    return data.decode("cp1252", errors="replace")


_DOC_TYPES = frozenset({"md", "markdown", "mdx", "rst", "txt", "adoc"})
_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "__mocks__"})
_TEST_NAME_RE = re.compile(r"(?:\.(?:test|spec)\.[^/.]+|_test\.[^/.]+|^test_[^/]+\.py)\Z")
_EXAMPLE_DIRS = frozenset({"example", "examples"})
DOC_DIRS = frozenset({"doc", "docs", "doc_src", "docs_src", "docs-src", "documentation"})
"""Documentation folders at the top of a repository: the code in them is sample code for the
documentation (FastAPI's ``docs_src/``, Sphinx's ``docs/conf.py``), not the implementation. Deeper
down such a name is the package's own (yaml's ``src/doc/Document.ts`` is its document model)."""
KINDS_VERSION = 4
"""The version of the rules that file each file (:func:`classify_kind`, and
:func:`rag.ingest.prepare.file_kind` from its structure), stored with the index (``kinds``): an index
whose files were classified by other rules is rebuilt. 2: code in documentation folders is
``example``; 3: TypeScript declarations, and sources declaring only types, are ``types``; 4: only
top-level documentation folders, and only files where nothing outside the type definitions runs."""
_CONFIG_TYPES = frozenset({"json", "yml", "yaml", "toml", "conf", "service", "ini", "cfg", "properties", "gradle"})


def in_doc_folder(path: str) -> bool:
    """Whether ``path`` lies in a top-level documentation folder (:data:`DOC_DIRS`)."""
    top, sep, _rest = path.partition("/")
    return bool(sep) and top.lower() in DOC_DIRS


def classify_kind(path: str) -> str:
    """Classify a repository-relative path as one of ``documentation``,
    ``source``, ``config``, ``example``, ``test`` or ``types``.

    Checked in this order: documentation by extension (``md rst txt``); test by
    a ``test``/``tests``/``__tests__``/``spec`` directory or a ``*.test.*``,
    ``*.spec.*``, ``*_test.*``, ``test_*.py`` name; ``.env.example``-style
    templates are ``config``; ``example``/``examples`` directories and
    ``*.example`` files are ``example``; ``json yml yaml toml conf service ini cfg properties gradle``
    are ``config``; TypeScript declarations (``.d.ts``, ``.d.mts``, ``.d.cts``) and Python stubs (``.pyi``)
    are ``types``;
    other files in a top-level documentation folder (:func:`in_doc_folder`: ``docs/``,
    ``docs_src/`` …) are ``example``; everything else is ``source``.
    """
    parts = path.lower().split("/")
    name = parts[-1]
    ext = name.rsplit(".", 1)[-1] if "." in name.lstrip(".") else ""
    if ext in _DOC_TYPES:
        return "documentation"
    if not _TEST_DIRS.isdisjoint(parts[:-1]) or _TEST_NAME_RE.search(name):
        return "test"
    if name in ENV_TEMPLATE_NAMES:
        return "config"
    if ext == "example" or not _EXAMPLE_DIRS.isdisjoint(parts[:-1]):
        return "example"
    if ext in _CONFIG_TYPES:
        return "config"
    if name.endswith(DECLARATIONS) or ext == "pyi":  # TypeScript declarations, Python stubs
        return "types"
    if in_doc_folder(path):
        return "example"
    return "source"
