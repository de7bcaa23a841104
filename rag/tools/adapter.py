"""Live tools: the model's read-only window on the running bot, plus safe commands.

``rag`` must not import ``bot`` or ``commands``, so the data comes from
callables injected by ``bot/`` in a :class:`ToolHandlers`. The
:class:`ToolAdapter` turns a model's tool call (name + JSON argument text) into
a :class:`ToolResult` and never raises for bad input or handler failures:

    adapter = ToolAdapter(handlers)                       # 5 s deadline, 32 KiB cap
    result = await adapter.call("getLogs", '{"limit": 3}', identity=user)
    result.content    # JSON text for the model: {"tool", "ok", "result" | "error"}

Per call: arguments parsed and validated against the tool's schema (rag.tools.schemas);
the handler runs under ``deadline_s`` — async handlers are cancelled by
``asyncio.wait_for``; sync handlers run in a worker thread
(``asyncio.to_thread``) and the wait is abandoned at the deadline, but **a
Python thread cannot be killed**: a stuck sync handler keeps its thread until
it returns, so handlers that may block should be ``async`` or bound their own
I/O. Output is sanitised (rag.tools.sanitize) and capped at ``max_output_bytes``
with a valid-JSON truncation object; one :class:`rag.activities.Activity`
describes the call (``api_request`` with the matching ``/api/*`` endpoint, or
``command_tool`` with ``/sz-<id>``, or ``repository`` with a progress line such as
"reading `lib/pool.js:80-140`").

Repository tools (``searchCode``, ``readFile``, ``findSymbol``, ``listFiles``; see
rag.tools.repository) are offered only when the adapter is given an engine-backed
:class:`~rag.tools.repository.RepositoryTools`: ``ToolAdapter(handlers,
repository=RepositoryTools(engine))``. Without it the adapter is exactly the live-tool
adapter. Their results carry :attr:`ToolResult.evidence` (the locations the model was
shown, citable) and :attr:`ToolResult.tokens_read` (counted by the answer's budget).

``runCommand`` refuses the ids of :data:`rag.tools.command_names.NEVER_RUN` (``ask``: no
recursion into answering), unknown ids and,
when the model asks, any command whose ``ai_safe`` is false — checked here from
``get_commands`` metadata before ``run_command`` is called. Admin checks stay
with the registry's ``run_command``, which receives the caller's identity.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag.activities import Activity, new_activity
from rag.tools.command_names import NEVER_RUN, normalize_command_id, slash_name
from rag.secrets import LiteralRedactor
from rag.tools.repository import RepositoryOutput, RepositoryTools, RepositoryToolError
from rag.tools.sanitize import DEFAULT_MAX_OUTPUT_BYTES, cap_json, redact_text, sanitize
from rag.tools.schemas import (MAX_LOG_ENTRIES, REPOSITORY_TOOL_SPECS, TOOL_SPECS, ToolSpec, tool_definitions,
                               validate_arguments)

__all__ = ["DEFAULT_TOOL_DEADLINE_S", "ToolHandlers", "ToolResult", "ToolAdapter", "normalize_command_id"]

log = logging.getLogger(__name__)

DEFAULT_TOOL_DEADLINE_S = 5.0
"""Deadline for one tool call, handler and metadata lookups included (DESIGN.md section 3)."""
ENVELOPE_RESERVE_BYTES = 256
"""Room kept for the ``{"tool","ok","result"}`` envelope inside the output cap."""
STACK_KEYS = frozenset({"stack", "stack_trace", "stacktrace", "traceback", "exc_info", "exception"})
MAX_TOOL_NAME_CHARS = 64


@dataclass
class ToolHandlers:
    """Callables that read the running bot's state; each may be sync or ``async``.

    ``bot/`` fills these in; a handler left ``None`` makes its tool answer
    "not available here". They are called with keyword arguments:

    - ``get_status()``, ``get_release_info()``, ``get_metrics()``, ``get_routes()`` → JSON-able value
    - ``get_commands()`` → list of ``{id, name, description, category, usage, admin_only, ai_safe}``
    - ``run_command(command_id=str, text=str, identity=Any)`` → JSON-able result
      (the registry applies its admin checks to ``identity``)
    - ``get_logs(limit=int, level=str | None, include_stack=bool)`` → list of records
    - ``get_errors(limit=int, include_stack=bool)`` → list of records
    """

    get_status: Callable[..., Any] | None = None
    get_commands: Callable[..., Any] | None = None
    get_release_info: Callable[..., Any] | None = None
    run_command: Callable[..., Any] | None = None
    get_logs: Callable[..., Any] | None = None
    get_errors: Callable[..., Any] | None = None
    get_metrics: Callable[..., Any] | None = None
    get_routes: Callable[..., Any] | None = None


@dataclass
class ToolResult:
    """The outcome of one tool call.

    Attributes:
        name: tool name as requested.
        ok: True when the handler returned normally.
        content: JSON text given to the model (≤ the adapter's cap), always valid JSON.
        error_code: ``invalid_arguments``, ``unknown_tool``, ``unavailable``, ``refused``,
            ``unknown_command``, ``timeout`` or ``handler_error``; ``None`` when ok.
        error: one-line reason, ``None`` when ok.
        duration_ms: wall time of the call.
        redactions: values redacted from the output.
        truncated: the output was cut to the cap.
        activity: the activity describing the call.
        repository: a repository tool (``searchCode`` …), not live runtime state.
        evidence: ``(path, start, end)`` locations the model was shown by this call (repository
            tools only; empty when the output had to be truncated by the cap).
        tokens_read: estimated tokens of a repository tool's output (0 for the others).
    """

    name: str
    ok: bool
    content: str
    error_code: str | None
    error: str | None
    duration_ms: float
    redactions: int
    truncated: bool
    activity: Activity
    repository: bool = False
    evidence: tuple[tuple[str, int, int], ...] = ()
    tokens_read: int = 0

    def to_json(self) -> dict:
        """``{"tool", "ok", "error", "duration_ms", "redactions", "truncated", "output"}``; a repository
        tool's also ``"summary"`` (its progress line), ``"tokens_read"`` and ``"evidence"``
        (``[{"path", "start", "end"}]``)."""
        data = {
            "tool": self.name,
            "ok": self.ok,
            "error": self.error,
            "duration_ms": round(self.duration_ms, 1),
            "redactions": self.redactions,
            "truncated": self.truncated,
            "output": json.loads(self.content),
        }
        if self.repository:
            data.update(summary=self.activity.message, tokens_read=self.tokens_read,
                        evidence=[{"path": p, "start": a, "end": b} for p, a, b in self.evidence])
        return data


class ToolFailure(Exception):
    """Internal: a structured refusal or error (code + one-line message)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


MAX_ARGUMENT_PREVIEW_CHARS = 120
MAX_SCHEMA_SUMMARY_CHARS = 600


def _preview(text: str) -> str:
    """The first characters of what the model sent, quoted (secrets are redacted by the result's sanitiser)."""
    clipped = text[:MAX_ARGUMENT_PREVIEW_CHARS]
    return json.dumps(clipped + ("…" if len(text) > len(clipped) else ""), ensure_ascii=False)


def _schema_summary(schema: dict) -> str:
    """The tool's parameter schema as compact JSON, without descriptions, bounded."""
    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "description"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    text = json.dumps(strip(schema), separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= MAX_SCHEMA_SUMMARY_CHARS else text[:MAX_SCHEMA_SUMMARY_CHARS] + "…"


async def _invoke(handler: Callable[..., Any], **kwargs: Any) -> Any:
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None)):
        return await handler(**kwargs)
    result = await asyncio.to_thread(handler, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _entries(value: Any, limit: int, include_stack: bool) -> Any:
    """At most ``limit`` records; stack fields removed unless asked for."""
    def strip(record: Any) -> Any:
        if include_stack or not isinstance(record, dict):
            return record
        return {k: v for k, v in record.items() if str(k).lower() not in STACK_KEYS}

    if isinstance(value, list):
        return [strip(r) for r in value[:limit]]
    if isinstance(value, dict):
        return {k: _entries(v, limit, include_stack) if isinstance(v, list) else v for k, v in value.items()}
    return value


class ToolAdapter:
    """Runs live tools for the model (and for ``slackzilla tool NAME``).

    Args:
        handlers: the injected :class:`ToolHandlers` (``None`` → none: every live tool is unavailable).
        deadline_s: per-call deadline in seconds (default 5).
        max_output_bytes: cap on ``ToolResult.content`` in UTF-8 bytes (default 32 KiB).
        repository: engine-backed repository tools; ``None`` (default) → not offered.
        secret_values: returns the redactor of the repository's secret-file values
            (:meth:`rag.engine.Engine.secret_redactor`), applied to every output and error
            message, so a log line quoting a ``.env`` value never reaches the model, and to the
            repository tools' progress lines, which quote the model's query (shown in Slack and ``--json``).
    """

    def __init__(self, handlers: ToolHandlers | None, *, deadline_s: float = DEFAULT_TOOL_DEADLINE_S,
                 max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
                 repository: RepositoryTools | None = None,
                 secret_values: Callable[[], LiteralRedactor | None] | None = None) -> None:
        if deadline_s <= 0:
            raise ValueError(f"deadline_s must be positive, got {deadline_s}")
        self.handlers = handlers if handlers is not None else ToolHandlers()
        self.deadline_s = deadline_s
        self.max_output_bytes = max_output_bytes
        self.repository = repository
        self._secret_values = secret_values
        self._specs: dict[str, ToolSpec] = {**TOOL_SPECS, **(REPOSITORY_TOOL_SPECS if repository else {})}

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the tools this adapter offers (live tools, then repository tools when configured)."""
        return tuple(self._specs)

    def is_repository_tool(self, name: str) -> bool:
        """Whether ``name`` is a repository tool this adapter serves."""
        return self.repository is not None and name in REPOSITORY_TOOL_SPECS

    def definitions(self) -> list[dict]:
        """OpenAI tool definitions for every live tool, and the repository tools when configured
        (``additionalProperties: false``)."""
        return tool_definitions(repository=self.repository is not None)

    def describe(self, name: str) -> str:
        """Help text for one tool (``slackzilla tool NAME --help``).

        Raises:
            KeyError: unknown tool name (the message lists the known ones).
        """
        spec = self._specs.get(name)
        if spec is None:
            raise KeyError(f"unknown tool {name!r}; known tools: {', '.join(self.names)}")
        lines = [f"{spec.name} — {spec.description}", f"endpoint: {spec.endpoint}"]
        for param, schema in spec.parameters["properties"].items():
            required = " (required)" if param in spec.parameters.get("required", []) else ""
            lines.append(f"  {param}: {schema['type']}{required} — {schema.get('description', '')}")
        return "\n".join(lines)

    async def command_ids(self) -> list[str]:
        """Registered command ids (for command inference); ``[]`` when unavailable or failing."""
        if self.handlers.get_commands is None:
            return []
        try:
            commands = await asyncio.wait_for(_invoke(self.handlers.get_commands), self.deadline_s)
        except Exception:  # inference is best effort; the answer goes on without it
            log.warning("get_commands failed during command inference", exc_info=True)
            return []
        return [str(c.get("id")) for c in commands or [] if isinstance(c, dict) and c.get("id")]

    async def call(self, name: str, arguments_json: str | None, *, identity: Any = None,
                   max_read_tokens: int | None = None) -> ToolResult:
        """Run tool ``name`` with the model's raw argument text. Never raises for bad input.

        Args:
            name: tool name (see :attr:`names`).
            arguments_json: JSON object text; empty or ``None`` means ``{}``.
            identity: the asking user, passed to ``run_command`` only.
            max_read_tokens: tokens a repository tool may still return (its output is trimmed to
                fit; ``0`` → refused as ``budget_exhausted``); ``None`` → unbounded. Live tools ignore it.
        """
        if self.is_repository_tool(str(name)[:MAX_TOOL_NAME_CHARS]):
            return await self._run_repository(str(name), arguments_json, max_read_tokens)
        return await self._run(name, arguments_json, identity=identity, requested_by="model")

    async def _run_repository(self, name: str, arguments_json: str | None, max_tokens: int | None) -> ToolResult:
        """A repository tool call: validated, run in a thread under the deadline, summarised."""
        started = time.perf_counter()
        spec = REPOSITORY_TOOL_SPECS[name]
        output: RepositoryOutput | None = None
        args: dict | None = None
        code = message = None
        try:
            args = self._parse(name, arguments_json)
            if self.repository is None:
                raise ToolFailure("unavailable", f"{name} needs an engine; none is configured here")
            output = await asyncio.wait_for(asyncio.to_thread(
                self.repository.run, name, args, max_tokens=max_tokens,
                max_bytes=self.max_output_bytes - ENVELOPE_RESERVE_BYTES - 512), self.deadline_s)
        except ToolFailure as failure:
            code, message = failure.code, str(failure)
        except RepositoryToolError as failure:
            code, message = failure.code, str(failure)
        except (asyncio.TimeoutError, TimeoutError):
            code, message = "timeout", f"{name} did not finish within {self.deadline_s:g} s and was cancelled"
        except Exception as exc:  # an index problem must reach the model as data, not crash the answer
            log.warning("repository tool %s failed", name, exc_info=True)
            code, message = "handler_error", f"{name} failed: {type(exc).__name__}"
        summary = output.summary if output is not None else RepositoryTools.summary(name, args, code)
        summary, _ = redact_text(summary, literals=self._literals())  # it quotes what the model asked for
        result = self._result(name, output.value if output is not None else None, code, message, started,
                              spec.endpoint, spec.call_type, summary=summary,
                              extra={"tokens_read": output.tokens if output is not None else 0})
        result.repository = True
        if output is not None:
            result.tokens_read = output.tokens
            result.evidence = () if result.truncated else tuple(output.evidence)
        return result

    async def run_command(self, command_id: str, text: str, *, identity: Any = None,
                          requested_by: str = "user") -> ToolResult:
        """Run a command the user named in the question (``/sz-hash …``).

        Same path and checks as the model's ``runCommand`` except that
        ``ai_safe`` is not required when ``requested_by == "user"``: the person
        asked for it. ``ask`` and unknown ids are always refused.
        """
        arguments = json.dumps({"commandId": command_id, "text": text})
        return await self._run("runCommand", arguments, identity=identity, requested_by=requested_by)

    async def _run(self, name: str, arguments_json: str | None, *, identity: Any, requested_by: str) -> ToolResult:
        started = time.perf_counter()
        name = str(name)[:MAX_TOOL_NAME_CHARS]
        spec = TOOL_SPECS.get(name)
        if spec is None and self.is_repository_tool(name):
            return await self._run_repository(name, arguments_json, None)
        endpoint = spec.endpoint if spec else "-"
        call_type = spec.call_type if spec else "api_request"
        value: Any = None
        code = message = None
        try:
            if spec is None:
                raise ToolFailure("unknown_tool", f"unknown tool {name!r}; available: {', '.join(self.names)}")
            args = self._parse(spec.name, arguments_json)
            if name == "runCommand":
                endpoint = slash_name(normalize_command_id(args['commandId']))
            value = await asyncio.wait_for(self._dispatch(name, args, identity, requested_by), self.deadline_s)
        except ToolFailure as failure:
            code, message = failure.code, str(failure)
        except (asyncio.TimeoutError, TimeoutError):
            code, message = "timeout", f"{name} did not finish within {self.deadline_s:g} s and was cancelled"
        except Exception as exc:  # a handler bug must reach the model as data, not crash the answer
            log.warning("tool %s failed", name, exc_info=True)
            code, message = "handler_error", f"{name} failed: {type(exc).__name__}"
        return self._result(name, value, code, message, started, endpoint, call_type)

    def _parse(self, name: str, arguments_json: str | None) -> dict:
        """The validated arguments; a :class:`ToolFailure` that shows the model what it sent and
        what the schema wants (so the next call can be right) otherwise."""
        text = (arguments_json or "").strip() or "{}"
        expected = f"expected arguments (JSON schema): {_schema_summary(self._specs[name].parameters)}"
        try:
            args = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolFailure("invalid_arguments", f"arguments are not valid JSON ({exc.msg} at character "
                                                   f"{exc.pos}); send a JSON object. Received: "
                                                   f"{_preview(text)}; {expected}") from None
        except RecursionError:
            raise ToolFailure("invalid_arguments", "arguments are nested too deeply to parse; send a flat JSON "
                                                   f"object. Received: {_preview(text)}; {expected}") from None
        errors = validate_arguments(self._specs[name].parameters, args)
        if errors:
            raise ToolFailure("invalid_arguments", "; ".join(errors[:5]) + f". Received: {_preview(text)}; {expected}")
        return args

    def _literals(self) -> LiteralRedactor | None:
        """The repository's secret-file values, or ``None`` (failures to read them are logged)."""
        if self._secret_values is None:
            return None
        try:
            return self._secret_values()
        except Exception:  # noqa: BLE001 - sanitising must not fail a tool call; patterns still apply
            log.warning("secret-file values unavailable for tool output", exc_info=True)
            return None

    def refuse(self, name: str, code: str, message: str, *, arguments_json: str | None = None) -> ToolResult:
        """A failed :class:`ToolResult` for a call that is not run at all (e.g. over a per-round cap
        or the read budget); ``arguments_json`` only labels a repository call's progress line."""
        name = str(name)[:MAX_TOOL_NAME_CHARS]
        spec = self._specs.get(name)
        summary = None
        if self.is_repository_tool(name):
            try:
                args = json.loads(arguments_json or "{}")
            except json.JSONDecodeError:
                args = None
            summary, _ = redact_text(RepositoryTools.summary(name, args, code), literals=self._literals())
        result = self._result(name, None, code, message, time.perf_counter(),
                              spec.endpoint if spec else "-", spec.call_type if spec else "api_request",
                              summary=summary)
        result.repository = self.is_repository_tool(name)
        return result

    def _handler(self, attribute: str) -> Callable[..., Any]:
        handler = getattr(self.handlers, attribute)
        if handler is None:
            raise ToolFailure("unavailable", f"{attribute} is not available in this context")
        return handler

    async def _dispatch(self, name: str, args: dict, identity: Any, requested_by: str) -> Any:
        if name == "getCommands":
            return self._filter_commands(await _invoke(self._handler("get_commands")), args)
        if name == "runCommand":
            return await self._run_command(args, identity, requested_by)
        if name == "getLogs":
            limit, include_stack = int(args.get("limit", MAX_LOG_ENTRIES)), bool(args.get("includeStack", False))
            raw = await _invoke(self._handler("get_logs"), limit=limit, level=args.get("level"),
                                include_stack=include_stack)
            return _entries(raw, limit, include_stack)
        if name == "getErrors":
            limit, include_stack = int(args.get("limit", MAX_LOG_ENTRIES)), bool(args.get("includeStack", False))
            raw = await _invoke(self._handler("get_errors"), limit=limit, include_stack=include_stack)
            return _entries(raw, limit, include_stack)
        if name == "getRoutes":
            routes = await _invoke(self._handler("get_routes"))
            return self._filter_routes(routes, args)
        attribute = {"getStatus": "get_status", "getReleaseInfo": "get_release_info",
                     "getMetrics": "get_metrics"}[name]
        return await _invoke(self._handler(attribute))

    @staticmethod
    def _filter_commands(commands: Any, args: dict) -> dict:
        records = [c for c in commands or [] if isinstance(c, dict)]
        if not any(args.get(k) for k in ("id", "name", "description", "category", "usage", "fuzzy")):
            return {"count": len(records), "ids": [c.get("id") for c in records],
                    "hint": "Filter by id, name, description, category, usage or fuzzy for full records."}

        def has(record: dict, field: str, needle: str) -> bool:
            return needle.lower() in str(record.get(field) or "").lower()

        matches = []
        for record in records:
            if args.get("id") and normalize_command_id(str(record.get("id", ""))) != normalize_command_id(args["id"]):
                continue
            if not all(has(record, f, args[f]) for f in ("name", "description", "category", "usage") if args.get(f)):
                continue
            if args.get("fuzzy") and not any(has(record, f, args["fuzzy"]) for f in
                                             ("id", "name", "description", "category", "usage")):
                continue
            matches.append(record)
        return {"count": len(matches), "commands": matches}

    @staticmethod
    def _filter_routes(routes: Any, args: dict) -> Any:
        if not isinstance(routes, list) or not (args.get("path") or args.get("method")):
            return routes
        path, method = str(args.get("path") or "").lower(), str(args.get("method") or "").lower()
        return [r for r in routes if isinstance(r, dict)
                and path in str(r.get("path") or r.get("route") or "").lower()
                and (not method or str(r.get("method") or "").lower() == method)]

    async def _run_command(self, args: dict, identity: Any, requested_by: str) -> Any:
        command_id = normalize_command_id(args["commandId"])
        if command_id in NEVER_RUN:
            raise ToolFailure("refused", f"runCommand never runs '{command_id}'")
        commands = await _invoke(self._handler("get_commands"))
        record = next((c for c in commands or [] if isinstance(c, dict)
                       and normalize_command_id(str(c.get("id", ""))) == command_id), None)
        if record is None:
            safe = sorted(str(c.get("id")) for c in commands or [] if isinstance(c, dict) and c.get("ai_safe"))
            raise ToolFailure("unknown_command", f"no command with id '{command_id}'; commands the model may run: "
                                                 f"{', '.join(safe) or 'none'}")
        if requested_by == "model" and not record.get("ai_safe"):
            raise ToolFailure("refused", f"command '{command_id}' is not marked safe for the model")
        return await _invoke(self._handler("run_command"), command_id=str(record.get("id")),
                             text=str(args.get("text") or ""), identity=identity)

    def _result(self, name: str, value: Any, code: str | None, message: str | None, started: float,
                endpoint: str, call_type: str, *, summary: str | None = None,
                extra: dict | None = None) -> ToolResult:
        redactions = 0
        truncated = False
        if code is None:
            clean, redactions = sanitize(value, literals=self._literals())
            inner, truncated = cap_json(clean, max_bytes=self.max_output_bytes - ENVELOPE_RESERVE_BYTES)
            content = f'{{"tool":{json.dumps(name)},"ok":true,"result":{inner}}}'
        else:
            clean_message, redactions = sanitize(message, literals=self._literals())
            content = json.dumps({"tool": name, "ok": False, "error": {"code": code, "message": clean_message}},
                                 ensure_ascii=False)
            message = clean_message
        duration_ms = (time.perf_counter() - started) * 1000
        status = "completed" if code is None else "failed"
        if summary is None:
            summary = f"{name} → {endpoint} ({duration_ms:.0f} ms)" + ("" if code is None else f": {code}")
        activity = new_activity("tool", status, summary, {
            "tool": name, "type": call_type, "endpoint": endpoint, "status": "ok" if code is None else "error",
            "duration_ms": round(duration_ms, 1), "error_code": code, "truncated": truncated,
            "redactions": redactions, **(extra or {}),
        })
        return ToolResult(name, code is None, content, code, message, duration_ms, redactions, truncated, activity)
