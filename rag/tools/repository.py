"""Repository tools: the model's read-only, bounded window on the *index* of the repository.

Four tools (schemas in :data:`rag.tools.schemas.REPOSITORY_TOOL_SPECS`), served
by :class:`RepositoryTools` from an engine's public methods only:

- ``searchCode {query, limit?, type?, path_prefix?}`` → ``engine.retrieve``: per hit the
  path, chunk line range, enclosing symbol or Markdown heading and a short numbered snippet;
- ``readFile {path, start?, end?}`` → ``engine.read_lines``: at most
  :data:`~rag.tools.schemas.MAX_READ_LINES` numbered lines of an **indexed** file, from
  the index's redacted text (never the working tree);
- ``findSymbol {name}`` → ``engine.structures()``: definitions (path, kind, line range,
  signature line), call sites and the files importing the defining file;
- ``listFiles {path_prefix?, pattern?}`` → ``engine.indexed_paths()``, bounded.

Paths are repository-relative. An absolute path, a ``..`` segment, a NUL byte, a
secret file name (``.env``, ``*.pem`` … :func:`rag.ingest.walk.is_secret_file`), a
path through a symbolic link, or any path that is not in the index is refused with
a :class:`RepositoryToolError` **before anything is read**; the only file-system
access is ``os.path.islink`` on the components of an already-validated path. A
``readFile`` range longer than the limit is refused too (the error says which
range to ask for instead).

Each call returns a :class:`RepositoryOutput`: the JSON-able value for the model,
the ``(path, start, end)`` locations whose text it now holds (the citation check
accepts them), the tokens it costs (counted against the answer's read budget),
and a one-line summary for progress displays ("searching `retry backoff`… 6 hits",
"reading `lib/pool.js:80-140`"). The :class:`rag.tools.adapter.ToolAdapter` runs
these calls under its deadline, sanitises and caps the output like every tool.

Example::

    tools = ToolAdapter(handlers, repository=RepositoryTools(engine))
    result = await tools.call("readFile", '{"path": "lib/pool.js", "start": 80, "end": 140}')
    result.evidence     # (("lib/pool.js", 80, 140),)
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rag.ingest.walk import is_secret_file
from rag.parse.records import FileStructure
from rag.tokens import estimate_tokens
from rag.tools.schemas import MAX_LISTED_FILES, MAX_READ_LINES, REPOSITORY_TOOL_SPECS
from rag.types import Source

__all__ = ["RepositoryEngine", "RepositoryOutput", "RepositoryToolError", "RepositoryTools",
           "DEFAULT_READ_LINES", "DEFAULT_SEARCH_HITS", "SNIPPET_LINES"]

DEFAULT_READ_LINES = 200
"""Lines ``readFile`` returns when ``end`` is not given."""
DEFAULT_SEARCH_HITS = 6
SNIPPET_LINES = 6
"""Numbered lines per ``searchCode`` hit, around the line that best matches the query."""
MAX_LINE_CHARS = 400
"""A longer line is cut (with ``…``) in ``readFile`` output."""
MAX_SNIPPET_LINE_CHARS = 200
MAX_DEFINITIONS = 10
MAX_CALL_SITES = 30
CALL_SITES_WITH_TEXT = 15
MAX_IMPORTERS = 30
SEARCH_POOL = 50
"""Chunks retrieved when ``path_prefix`` filters them afterwards."""
DEFAULT_MAX_BYTES = 31 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


class RepositoryEngine(Protocol):
    """What :class:`RepositoryTools` needs from :class:`rag.engine.Engine` (public methods only)."""

    repo_root: Path

    def retrieve(self, question: str, *, limit: int = 8, kind: str | None = None) -> list[Source]: ...

    def read_lines(self, path: str, start: int, end: int) -> str: ...

    def indexed_paths(self) -> list[str]: ...

    def structures(self) -> dict[str, FileStructure]: ...


class RepositoryToolError(Exception):
    """A refusal or failure of a repository tool: ``code`` plus a one-line message for the model.

    Codes: ``invalid_path`` (absolute, traversal, NUL, a symlink), ``secret_file``,
    ``not_indexed``, ``range_too_large``, ``out_of_range``, ``not_found``, ``budget_exhausted``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class RepositoryOutput:
    """One successful repository tool call.

    Attributes:
        value: JSON-able result for the model.
        evidence: ``(path, start, end)`` locations whose text or position the model was shown.
        tokens: estimated tokens of ``value`` (counted against the read budget).
        summary: one line for a person, e.g. ``reading `lib/pool.js:80-140```.
    """

    value: Any
    evidence: list[tuple[str, int, int]] = field(default_factory=list)
    tokens: int = 0
    summary: str = ""


def _budget_error(max_tokens: int | None) -> RepositoryToolError:
    left = max(0, max_tokens or 0)
    return RepositoryToolError("budget_exhausted", f"the repository read budget of this answer is spent ({left} "
                                                   "tokens left, too few for this call); answer now from what you "
                                                   "have already read, citing it")


def _tokens(value: Any) -> int:
    return estimate_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def _quote(text: str, limit: int = 80) -> str:
    """``text`` for a progress line inside backticks: one line, no backticks, at most ``limit`` chars."""
    clean = " ".join(str(text).split()).replace("`", "'")
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


class RepositoryTools:
    """Serves the repository tools from one engine; safe to share between answers (no per-answer state).

    Args:
        engine: an :class:`rag.engine.Engine` (or anything with the :class:`RepositoryEngine` methods).
        max_read_lines: most lines per ``readFile`` (default and ceiling :data:`MAX_READ_LINES`).
    """

    def __init__(self, engine: RepositoryEngine, *, max_read_lines: int = MAX_READ_LINES) -> None:
        if not 1 <= max_read_lines <= MAX_READ_LINES:
            raise ValueError(f"max_read_lines must be within 1..{MAX_READ_LINES}, got {max_read_lines}")
        self.engine = engine
        self.max_read_lines = max_read_lines

    @staticmethod
    def names() -> tuple[str, ...]:
        return tuple(REPOSITORY_TOOL_SPECS)

    def run(self, name: str, args: dict, *, max_tokens: int | None = None,
            max_bytes: int = DEFAULT_MAX_BYTES) -> RepositoryOutput:
        """Run tool ``name`` with already validated ``args`` (blocking; the adapter runs it in a thread).

        Args:
            max_tokens: tokens the answer may still read; output is trimmed to fit, and a call
                that cannot return anything within it is refused (``budget_exhausted``).
            max_bytes: UTF-8 bytes the JSON value should stay under (the adapter's cap minus its envelope).

        Raises:
            RepositoryToolError: a refused path or range, an unknown symbol, the budget spent.
            KeyError: ``name`` is not a repository tool.
        """
        method: Callable[..., RepositoryOutput] = {
            "searchCode": self.search_code, "readFile": self.read_file,
            "findSymbol": self.find_symbol, "listFiles": self.list_files,
        }[name]
        if max_tokens is not None and max_tokens <= 0:
            raise _budget_error(max_tokens)
        output = method(**args, max_tokens=max_tokens, max_bytes=max_bytes)
        output.tokens = _tokens(output.value)
        return output

    @staticmethod
    def summary(name: str, args: dict | None, error_code: str | None = None) -> str:
        """The progress line of a call that did not succeed: ``reading `../x` refused: invalid_path``,
        ``finding `foo`… not found``, ``searching `x` failed: timeout``."""
        args = args if isinstance(args, dict) else {}
        verb = {
            "searchCode": f"searching `{_quote(args.get('query', ''))}`",
            "readFile": f"reading `{_quote(args.get('path', ''), 120)}`",
            "findSymbol": f"finding `{_quote(args.get('name', ''))}`",
            "listFiles": f"listing files under `{_quote(args.get('path_prefix') or '.', 120)}`",
        }.get(name, f"{name}")
        if not error_code:
            return verb
        if error_code in ("not_found", "out_of_range"):
            return f"{verb}… {error_code.replace('_', ' ')}"
        if error_code in ("timeout", "handler_error", "unavailable"):
            return f"{verb} failed: {error_code}"
        return f"{verb} refused: {error_code}"

    # -- paths ----------------------------------------------------------------------------------

    def _clean(self, raw: str, *, what: str = "path") -> str:
        """A validated repository-relative POSIX path (``./`` and trailing ``/`` dropped); nothing is read."""
        text = str(raw).strip()
        if "\x00" in text:
            raise RepositoryToolError("invalid_path", f"{what} contains a NUL byte")
        if text.startswith(("/", "\\", "~")) or _DRIVE.match(text):
            raise RepositoryToolError("invalid_path", f"{what} {_quote(text)!r} is absolute; use a path relative to "
                                                      "the repository root, e.g. 'lib/pool.js'")
        parts = [p for p in text.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            raise RepositoryToolError("invalid_path", f"{what} {_quote(text)!r} leaves its folder ('..'); only "
                                                      "files inside the repository can be read")
        return "/".join(parts)

    def _check_links(self, path: str) -> None:
        """Refuse a path any component of which is a symbolic link (lstat only, inside the root)."""
        root = self.engine.repo_root
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            if os.path.islink(os.path.join(root, *parts[:depth])):
                raise RepositoryToolError("invalid_path", f"{'/'.join(parts[:depth])!r} is a symbolic link; "
                                                          "links are never followed or read")

    def _indexed_file(self, raw: str) -> str:
        path = self._clean(raw)
        if not path:
            raise RepositoryToolError("invalid_path", "path is empty; name a file, e.g. 'lib/pool.js'")
        if any(is_secret_file(part) for part in path.split("/")):
            raise RepositoryToolError("secret_file", f"{_quote(path)!r} is a secret file (credentials); it is never "
                                                     "indexed or shown")
        self._check_links(path)
        if path not in set(self.engine.indexed_paths()):
            raise RepositoryToolError("not_indexed", f"{_quote(path)!r} is not an indexed file (it does not exist, "
                                                     "or the index skipped it); find paths with listFiles or "
                                                     "searchCode")
        return path

    def _prefix(self, raw: str | None) -> str:
        prefix = self._clean(raw or "", what="path_prefix")
        if prefix:
            self._check_links(prefix)
        return prefix

    @staticmethod
    def _under(path: str, prefix: str) -> bool:
        return not prefix or path == prefix or path.startswith(prefix + "/")

    # -- tools ----------------------------------------------------------------------------------

    def read_file(self, path: str, start: int = 1, end: int | None = None, *, max_tokens: int | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> RepositoryOutput:
        """``readFile``: numbered lines ``start..end`` of an indexed file (see the module docstring)."""
        path = self._indexed_file(path)
        start = int(start)
        end = int(end) if end is not None else start + min(DEFAULT_READ_LINES, self.max_read_lines) - 1
        if end < start:
            raise RepositoryToolError("invalid_arguments", f"end ({end}) is before start ({start})")
        try:  # a start past the end is said first: advice for a shorter range would not help
            # lines start-1 and start joined hold a newline exactly when line ``start`` exists (blank or not)
            past_end = start > 1 and "\n" not in self.engine.read_lines(path, start - 1, start)
        except KeyError:
            raise RepositoryToolError("not_indexed", f"{_quote(path)!r} is no longer indexed") from None
        if past_end:
            raise RepositoryToolError("out_of_range", f"{path} has fewer than {start} lines; start lower")
        if end - start + 1 > self.max_read_lines:
            raise RepositoryToolError(
                "range_too_large", f"lines {start}-{end} are {end - start + 1} lines; readFile returns at most "
                                   f"{self.max_read_lines} lines per call: ask for start={start}, "
                                   f"end={start + self.max_read_lines - 1}, then continue from there")
        try:
            text = self.engine.read_lines(path, start, end + 1)  # one more line: is there more after?
        except KeyError:
            raise RepositoryToolError("not_indexed", f"{_quote(path)!r} is no longer indexed") from None
        lines = text.split("\n") if text else []
        more = len(lines) > end - start + 1
        lines = lines[: end - start + 1]
        if not lines:
            raise RepositoryToolError("out_of_range", f"{path} has fewer than {start} lines; start lower")
        numbered: list[str] = []
        used_bytes, used_tokens = 256, 40
        for number, line in enumerate(lines, start):
            entry = f"{number}: {_clip(line, MAX_LINE_CHARS)}"
            cost_bytes, cost_tokens = _json_bytes(entry + "\n") - 2, estimate_tokens(entry) + 1
            if numbered and (used_bytes + cost_bytes > max_bytes
                             or (max_tokens is not None and used_tokens + cost_tokens > max_tokens)):
                break
            if not numbered and max_tokens is not None and used_tokens + cost_tokens > max_tokens:
                raise _budget_error(max_tokens)
            numbered.append(entry)
            used_bytes += cost_bytes
            used_tokens += cost_tokens
        last = start + len(numbered) - 1
        value: dict[str, Any] = {"path": path, "start": start, "end": last, "text": "\n".join(numbered)}
        if last < start + len(lines) - 1:
            value["cut"] = (f"output limit reached after line {last}; call again with start={last + 1}")
            more = True
        value["more"] = more
        if more:
            value["next_start"] = last + 1
        return RepositoryOutput(value, [(path, start, last)], summary=f"reading `{_quote(path, 120)}:{start}-{last}`")

    def search_code(self, query: str, limit: int = DEFAULT_SEARCH_HITS, type: str | None = None,  # noqa: A002
                    path_prefix: str | None = None, *, max_tokens: int | None = None,
                    max_bytes: int = DEFAULT_MAX_BYTES) -> RepositoryOutput:
        """``searchCode``: the engine's retrieval, one numbered snippet per hit."""
        prefix = self._prefix(path_prefix)
        limit = int(limit)
        found = self.engine.retrieve(query, limit=SEARCH_POOL if prefix else limit, kind=type)
        found = [s for s in found if self._under(s.path, prefix)][:limit]
        symbols = self._enclosing_symbols({s.path for s in found})
        hits: list[dict] = []
        evidence: list[tuple[str, int, int]] = []
        used_bytes, used_tokens = 256, 40
        for source in found:
            first, snippet = self._snippet(source)
            hit: dict[str, Any] = {"path": source.path, "start": source.start, "end": source.end}
            symbol = self._symbol_at(symbols.get(source.path, ()), source.focus or source.start)
            if symbol:
                hit["symbol"] = symbol
            if source.heading:
                hit["heading"] = source.heading
            hit["snippet"] = "\n".join(f"{n}: {line}" for n, line in enumerate(snippet, first))
            cost = len(json.dumps(hit, ensure_ascii=False).encode("utf-8")) + 1
            tokens = _tokens(hit)
            if used_bytes + cost > max_bytes or (max_tokens is not None and used_tokens + tokens > max_tokens):
                if not hits and max_tokens is not None and used_tokens + tokens > max_tokens:
                    raise _budget_error(max_tokens)
                break
            used_bytes += cost
            used_tokens += tokens
            hits.append(hit)
            if snippet:
                evidence.append((source.path, first, first + len(snippet) - 1))
        value: dict[str, Any] = {"query": query, "count": len(hits), "hits": hits}
        if len(hits) < len(found):
            value["cut"] = f"{len(found) - len(hits)} more hit(s) left out (output or read budget)"
        if not hits:
            value["hint"] = "Nothing matched; try other words, an identifier, or listFiles to see the layout."
        noun = "hit" if len(hits) == 1 else "hits"
        return RepositoryOutput(value, evidence, summary=f"searching `{_quote(query)}`… {len(hits)} {noun}")

    @staticmethod
    def _snippet(source: Source) -> tuple[int, list[str]]:
        """``(first line number, lines)``: :data:`SNIPPET_LINES` lines of the chunk around its focus line."""
        lines = source.text.split("\n")
        focus = (source.focus or source.start) - source.start
        first = max(0, min(focus - 1, len(lines) - SNIPPET_LINES))
        window = [_clip(line.rstrip(), MAX_SNIPPET_LINE_CHARS) for line in lines[first: first + SNIPPET_LINES]]
        while window and not window[-1].strip():
            window.pop()
        return source.start + first, window

    def _enclosing_symbols(self, paths: set[str]) -> dict[str, list]:
        if not paths:
            return {}
        try:
            structures = self.engine.structures()
        except Exception:  # symbols are an extra on search hits
            return {}
        return {p: structures[p].definitions for p in paths if p in structures}

    @staticmethod
    def _symbol_at(definitions, line: int) -> str | None:
        inside = [d for d in definitions if d.name and d.start <= line <= d.end]
        if not inside:
            return None
        best = min(inside, key=lambda d: d.end - d.start)
        return f"{best.parent}.{best.name}" if best.parent else best.name

    def find_symbol(self, name: str, *, max_tokens: int | None = None,
                    max_bytes: int = DEFAULT_MAX_BYTES) -> RepositoryOutput:
        """``findSymbol``: definitions, call sites and importers of ``name`` (``Parent.name`` narrows)."""
        wanted = name.strip()
        parent, _, bare = wanted.rpartition(".")
        structures = self.engine.structures()

        def matches(definition, fold: bool) -> bool:
            same = (lambda a, b: (a or "").lower() == (b or "").lower()) if fold else (lambda a, b: a == b)
            return same(definition.name, bare) and (not parent or same(definition.parent, parent))

        found = []
        for fold in (False, True):
            found = [(path, d) for path, s in sorted(structures.items()) for d in s.definitions if matches(d, fold)]
            if found:
                break
        if not found:
            close = sorted({d.name for s in structures.values() for d in s.definitions
                            if d.name and bare.lower() in d.name.lower()})[:10]
            hint = f"; similar names: {', '.join(close)}" if close else "; try searchCode"
            raise RepositoryToolError("not_found", f"no definition named {_quote(wanted)!r} in the indexed "
                                                   f"parsed files (JavaScript, TypeScript, Python, Go, Java, Rust, Ruby){hint}")
        evidence: list[tuple[str, int, int]] = []
        definitions = []
        for path, d in found[:MAX_DEFINITIONS]:
            signature = self._line(path, d.start)
            definitions.append({"path": path, "name": d.name, "kind": d.kind, "parent": d.parent,
                                "start": d.start, "end": d.end, "signature": signature})
            evidence.append((path, d.start, d.start))
        names = {bare} | {f"{d.parent}.{d.name}" for _, d in found if d.parent}
        calls = [(path, c) for path, s in sorted(structures.items()) for c in s.calls
                 if c.callee in names or c.callee.rsplit(".", 1)[-1] == found[0][1].name]
        call_sites = []
        for position, (path, c) in enumerate(calls[:MAX_CALL_SITES]):
            site: dict[str, Any] = {"path": path, "line": c.line, "in": c.enclosing}
            if position < CALL_SITES_WITH_TEXT:
                site["text"] = self._line(path, c.line)
                evidence.append((path, c.line, c.line))
            call_sites.append(site)
        defining = {path for path, _ in found}
        importers = [{"path": path, "line": i.line, "spec": i.spec,
                      "names": i.names[:10], "imports_name": bare in i.names or "*" in i.names}
                     for path, s in sorted(structures.items()) for i in s.imports if i.resolved in defining]
        value = {"name": wanted, "definitions": definitions, "total_definitions": len(found),
                 "call_sites": call_sites, "total_call_sites": len(calls),
                 "imported_by": importers[:MAX_IMPORTERS], "total_importers": len(importers)}
        if max_tokens is not None and _tokens(value) > max_tokens:
            value = {**value, "call_sites": [], "imported_by": [], "cut": "call sites and importers left out "
                                                                       "(read budget)"}
            evidence = evidence[: len(definitions)]
            if _tokens(value) > max_tokens:
                raise _budget_error(max_tokens)
        noun = "definition" if len(found) == 1 else "definitions"
        return RepositoryOutput(value, evidence, summary=f"finding `{_quote(wanted)}`… {len(found)} {noun}, "
                                                         f"{len(calls)} call site(s)")

    def _line(self, path: str, number: int) -> str:
        try:
            text = self.engine.read_lines(path, number, number)
        except KeyError:
            return ""
        return _clip(text.split("\n")[0].strip(), MAX_SNIPPET_LINE_CHARS)

    def list_files(self, path_prefix: str | None = None, pattern: str | None = None, *,
                   max_tokens: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> RepositoryOutput:
        """``listFiles``: indexed paths under ``path_prefix`` matching ``pattern`` (glob), at most
        :data:`~rag.tools.schemas.MAX_LISTED_FILES`."""
        prefix = self._prefix(path_prefix)
        glob = re.sub(r"\*{2,}", "*", pattern or "")
        paths = [p for p in self.engine.indexed_paths() if self._under(p, prefix)
                 and (not glob or fnmatch.fnmatchcase(p, glob) or fnmatch.fnmatchcase(p.rsplit("/", 1)[-1], glob))]
        shown = paths[:MAX_LISTED_FILES]
        if max_tokens is not None:
            while shown and _tokens(shown) > max_tokens:
                shown = shown[: len(shown) // 2]
            if not shown and paths:
                raise _budget_error(max_tokens)
        value: dict[str, Any] = {"path_prefix": prefix, "count": len(paths), "paths": shown}
        if len(shown) < len(paths):
            value["cut"] = f"{len(paths) - len(shown)} more; narrow path_prefix or pattern"
        where = f"`{_quote(prefix or '.', 120)}`" + (f" matching `{_quote(pattern)}`" if pattern else "")
        return RepositoryOutput(value, [], summary=f"listing files under {where}… {len(paths)} files")
