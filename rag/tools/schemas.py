"""Tool definitions (OpenAI function-tool JSON schemas) and their validator.

:data:`TOOL_SPECS` are the live tools (runtime state, commands);
:data:`REPOSITORY_TOOL_SPECS` the repository tools (``searchCode``, ``readFile``,
``findSymbol``, ``listFiles``), served by :class:`rag.tools.repository.RepositoryTools`
and offered only by an adapter that has one.

The schemas are the single source of truth: :func:`tool_definitions` sends
them to the model and :func:`validate_arguments` checks the model's arguments
against the same dicts. The validator implements exactly the JSON Schema
keywords these schemas use (:data:`SUPPORTED_KEYWORDS`; a test pins that no
other keyword appears), so it is a closed subset rather than a general
JSON Schema engine.

Every schema is an object with ``additionalProperties: false``: a model that
invents a parameter gets a structured error, not silently ignored input.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TOOL_NAMES",
    "TOOL_ENDPOINTS",
    "MAX_COMMAND_TEXT_CHARS",
    "MAX_LOG_ENTRIES",
    "SUPPORTED_KEYWORDS",
    "ToolSpec",
    "TOOL_SPECS",
    "REPOSITORY_TOOL_SPECS",
    "REPOSITORY_TOOL_NAMES",
    "MAX_READ_LINES",
    "MAX_SEARCH_HITS",
    "MAX_LISTED_FILES",
    "CHUNK_KINDS",
    "tool_definitions",
    "validate_arguments",
]

MAX_COMMAND_TEXT_CHARS = 500
"""Longest ``runCommand`` text (the seed's limit)."""
MAX_LOG_ENTRIES = 10
"""Most entries ``getLogs``/``getErrors`` return."""
MAX_FILTER_CHARS = 200
LOG_LEVELS = ["debug", "info", "warning", "error", "critical"]

SUPPORTED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "description",
    "enum", "minLength", "maxLength", "minimum", "maximum", "pattern", "default",
})


def _text(description: str, max_length: int = MAX_FILTER_CHARS) -> dict:
    return {"type": "string", "description": description, "maxLength": max_length}


def _object(properties: dict | None = None, required: list[str] | None = None) -> dict:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


@dataclass(frozen=True)
class ToolSpec:
    """One live tool: its name, description, parameter schema and activity labels.

    ``call_type`` is ``api_request`` (reads runtime state, labelled by the HTTP
    endpoint that serves the same data), ``command_tool`` (runs a command) or
    ``repository`` (reads the index: :data:`REPOSITORY_TOOL_SPECS`, served by
    :class:`rag.tools.repository.RepositoryTools`).
    """

    name: str
    description: str
    parameters: dict
    endpoint: str
    call_type: str = "api_request"

    def definition(self) -> dict:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": copy.deepcopy(self.parameters)},
        }


TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("getStatus", "Live status of the running bot: version, uptime, commit, index generation and age, "
             "last reindex runs, next scheduled reindex.", _object(), "/api/status"),
    ToolSpec("getCommands", "The bot's registered /sz-* commands. Without filters returns only command ids; with "
             "filters (combined with AND, case-insensitive substrings; id is exact) returns full records "
             "{id, name, description, category, usage, admin_only, ai_safe}.",
             _object({
                 "id": _text("Exact command id, e.g. 'hash' (a leading /sz- is ignored).", 64),
                 "name": _text("Substring of the slash name."),
                 "description": _text("Substring of the description."),
                 "category": _text("Substring of the category."),
                 "usage": _text("Substring of the usage hint."),
                 "fuzzy": _text("Substring searched in every field."),
             }), "/api/commands"),
    ToolSpec("getReleaseInfo", "Release information: package version and the latest CHANGELOG section.",
             _object(), "/api/release"),
    ToolSpec("runCommand", "Run one registered command that is marked safe for the model and return its result. "
             "Never runs 'ask'.",
             _object({
                 "commandId": {"type": "string", "description": "Command id, e.g. 'hash' or 'uuid'.",
                               "minLength": 1, "maxLength": 64, "pattern": "^(/?sz-)?[A-Za-z0-9][A-Za-z0-9_-]*$"},
                 "text": {"type": "string", "description": "The command's argument text, as typed after the slash "
                          "command.", "maxLength": MAX_COMMAND_TEXT_CHARS, "default": ""},
             }, required=["commandId"]), "/api/commands/run", call_type="command_tool"),
    ToolSpec("getLogs", f"Recent log records of the running bot, newest first, at most {MAX_LOG_ENTRIES}.",
             _object({
                 "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LOG_ENTRIES, "default": MAX_LOG_ENTRIES,
                           "description": "How many records."},
                 "level": {"type": "string", "enum": LOG_LEVELS, "description": "Minimum level."},
                 "includeStack": {"type": "boolean", "default": False,
                                  "description": "Include stack traces (off unless needed)."},
             }), "/api/logs"),
    ToolSpec("getErrors", f"Recent captured errors (type, message, time, command), at most {MAX_LOG_ENTRIES}.",
             _object({
                 "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LOG_ENTRIES, "default": MAX_LOG_ENTRIES,
                           "description": "How many errors."},
                 "includeStack": {"type": "boolean", "default": False,
                                  "description": "Include stack traces (off unless needed)."},
             }), "/api/admin/errors"),
    ToolSpec("getMetrics", "Runtime metrics: per-command counts and latency percentiles, asks, tokens, "
             "reindex runs.", _object(), "/api/metrics"),
    ToolSpec("getRoutes", "HTTP routes found in the indexed repository (method, path, file, line).",
             _object({"path": _text("Only routes whose path contains this substring."),
                      "method": _text("Only routes with this HTTP method.", 16)}), "/api/routes"),
)}

TOOL_NAMES = tuple(TOOL_SPECS)
TOOL_ENDPOINTS = {name: spec.endpoint for name, spec in TOOL_SPECS.items()}

MAX_READ_LINES = 400
"""Most lines one ``readFile`` call returns; a longer range is refused (nothing is read)."""
MAX_SEARCH_HITS = 20
"""Most hits one ``searchCode`` call returns."""
MAX_LISTED_FILES = 200
"""Most paths one ``listFiles`` call returns (the total is still counted)."""
MAX_PATH_CHARS = 300
MAX_LINE_NUMBER = 10_000_000
CHUNK_KINDS = ["documentation", "source", "config", "example", "test", "types", "issue", "pull_request"]

_PATH_NOTE = "Repository-relative (e.g. 'lib/pool.js'); no absolute paths, no '..'."

REPOSITORY_TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("searchCode", "Search the indexed repository (the same retrieval that chose the excerpts) with your "
             "own words or identifiers. Use it when the excerpts you were given do not answer the question: try "
             "the names, error messages or concepts you expect in the code. Returns per hit the path, line range, "
             "symbol or heading and a short numbered snippet; open a hit with readFile before relying on it.",
             _object({
                 "query": {"type": "string", "minLength": 1, "maxLength": MAX_FILTER_CHARS,
                           "description": "What to look for: words, identifiers, an error message."},
                 "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_HITS, "default": 6,
                           "description": "How many hits."},
                 "type": {"type": "string", "enum": CHUNK_KINDS, "description": "Only this kind of file (issue, pull_request: GitHub issues and pull requests)."},
                 "path_prefix": _text("Only files under this folder, e.g. 'lib/'. " + _PATH_NOTE, MAX_PATH_CHARS),
             }, required=["query"]), "repository:search", call_type="repository"),
    ToolSpec("readFile", f"Read lines of one indexed file (secrets redacted), at most {MAX_READ_LINES} lines per "
             "call, each line prefixed with its number. Cite what you use as path:start-end.",
             _object({
                 "path": {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS,
                          "description": "The file. " + _PATH_NOTE},
                 "start": {"type": "integer", "minimum": 1, "maximum": MAX_LINE_NUMBER, "default": 1,
                           "description": "First line (1-based)."},
                 "end": {"type": "integer", "minimum": 1, "maximum": MAX_LINE_NUMBER,
                         "description": f"Last line, inclusive (default start+199; at most start+"
                                        f"{MAX_READ_LINES - 1})."},
             }, required=["path"]), "repository:read", call_type="repository"),
    ToolSpec("findSymbol", "Where a function, class or method is defined (JavaScript, TypeScript, Python, Go, Java, Rust, Ruby): path, "
             "line range and signature line, plus the call sites and the files that import it.",
             _object({
                 "name": {"type": "string", "minLength": 1, "maxLength": 128,
                          "description": "The symbol's name, e.g. 'createPool' or 'Pool.acquire'."},
             }, required=["name"]), "repository:symbol", call_type="repository"),
    ToolSpec("listFiles", f"Indexed file paths, sorted, at most {MAX_LISTED_FILES} (the total is given).",
             _object({
                 "path_prefix": _text("Only files under this folder, e.g. 'lib/'. " + _PATH_NOTE, MAX_PATH_CHARS),
                 "pattern": _text("Glob on the path or file name, e.g. '*.test.js' or 'lib/*/index.js'.", 100),
             }), "repository:list", call_type="repository"),
)}

REPOSITORY_TOOL_NAMES = tuple(REPOSITORY_TOOL_SPECS)


def tool_definitions(*, repository: bool = False) -> list[dict]:
    """All live tool definitions (and the repository tools' when ``repository``), ready for
    ``chat.completions.create(tools=...)``."""
    specs = list(TOOL_SPECS.values()) + (list(REPOSITORY_TOOL_SPECS.values()) if repository else [])
    return [spec.definition() for spec in specs]


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "string": (str,), "integer": (int,), "boolean": (bool,), "number": (int, float),
    "array": (list,),
}


def _type_ok(value: Any, expected: str) -> bool:
    if expected in ("integer", "number") and isinstance(value, bool):
        return False
    if expected == "integer" and isinstance(value, float) and value.is_integer():
        return True
    return isinstance(value, _JSON_TYPES[expected])


def validate_arguments(schema: dict, value: Any, *, path: str = "arguments") -> list[str]:
    """Check ``value`` against ``schema`` (the :data:`SUPPORTED_KEYWORDS` subset).

    Returns:
        Human-readable violations, e.g. ``["arguments.limit: 50 is above the maximum 10"]``;
        empty when valid.
    """
    errors: list[str] = []
    expected = schema.get("type")
    if expected and not _type_ok(value, expected):
        return [f"{path}: expected {expected}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: must not be empty" if schema.get("minLength") == 1
                          else f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: {len(value)} characters, the maximum is {schema['maxLength']}")
        if "pattern" in schema and value and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value[:40]!r} does not match {schema['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}.{name}: required")
        for name, sub in value.items():
            if name in properties:
                errors.extend(validate_arguments(properties[name], sub, path=f"{path}.{name}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}.{name}: unknown parameter (allowed: {', '.join(properties) or 'none'})")
    return errors
