"""Live tools: schemas, argument validation, deadlines, sanitising, caps, command safety."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from rag.tools.sanitize import REDACTED, cap_json, is_secret_key, redact_text, sanitize
from rag.tools.schemas import SUPPORTED_KEYWORDS, TOOL_NAMES, tool_definitions, validate_arguments
from rag.tools.adapter import ToolAdapter, ToolHandlers, normalize_command_id

COMMANDS = [
    {"id": "ask", "name": "/sz-ask", "description": "Ask about the code", "category": "ai",
     "usage": "/sz-ask <question>", "admin_only": False, "ai_safe": False},
    {"id": "hash", "name": "/sz-hash", "description": "Hash text with a digest", "category": "crypto",
     "usage": "/sz-hash <algorithm> <text>", "admin_only": False, "ai_safe": True},
    {"id": "uuid", "name": "/sz-uuid", "description": "Generate a UUID", "category": "utility",
     "usage": "/sz-uuid", "admin_only": False, "ai_safe": True},
    {"id": "reindex", "name": "/sz-reindex", "description": "Rebuild the index", "category": "admin",
     "usage": "/sz-reindex [full]", "admin_only": True, "ai_safe": False},
]


class Recorder:
    """Handlers backed by plain data; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.logs = [{"level": "error", "message": f"boom {i}", "stack": "Traceback ..."} for i in range(50)]

    def handlers(self, **overrides) -> ToolHandlers:
        def record(name, value):
            def handler(**kwargs):
                self.calls.append((name, kwargs))
                return value(**kwargs) if callable(value) else value
            return handler

        base = dict(
            get_status=record("get_status", {"version": "0.1.0", "uptime_s": 12}),
            get_commands=record("get_commands", COMMANDS),
            get_release_info=record("get_release_info", {"version": "0.1.0"}),
            run_command=record("run_command", lambda **kw: {"text": f"ran {kw['command_id']}"}),
            get_logs=record("get_logs", lambda **kw: self.logs),
            get_errors=record("get_errors", lambda **kw: self.logs),
            get_metrics=record("get_metrics", {"asks": 3, "tokens": {"prompt_tokens": 120, "total": 150}}),
            get_routes=record("get_routes", [{"method": "GET", "path": "/api/status", "file": "bot/http.py"},
                                             {"method": "POST", "path": "/api/ask", "file": "bot/http.py"}]),
        )
        base.update(overrides)
        return ToolHandlers(**base)


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


def called(rec: Recorder, name: str) -> list[dict]:
    return [kwargs for handler, kwargs in rec.calls if handler == name]


# -- definitions and validation ---------------------------------------------------------------

def test_definitions_cover_every_tool_with_closed_schemas():
    definitions = tool_definitions()
    assert [d["function"]["name"] for d in definitions] == [
        "getStatus", "getCommands", "getReleaseInfo", "runCommand", "getLogs", "getErrors", "getMetrics",
        "getRoutes"]
    for definition in definitions:
        assert definition["type"] == "function"
        params = definition["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False

        def keywords(schema):
            for key, value in schema.items():
                yield key
                if key == "properties":
                    for sub in value.values():
                        yield from keywords(sub)
        assert set(keywords(params)) <= SUPPORTED_KEYWORDS


def test_validator_reports_each_violation():
    schema = tool_definitions()[4]["function"]["parameters"]  # getLogs
    assert validate_arguments(schema, {"limit": 3, "level": "error", "includeStack": True}) == []
    errors = validate_arguments(schema, {"limit": 50, "level": "loud", "includeStack": "yes", "x": 1})
    assert any("above the maximum 10" in e for e in errors)
    assert any("'loud' is not one of" in e for e in errors)
    assert any("includeStack: expected boolean" in e for e in errors)
    assert any("x: unknown parameter" in e for e in errors)
    assert validate_arguments(schema, {"limit": True}) == ["arguments.limit: expected integer, got bool"]
    assert validate_arguments(schema, []) == ["arguments: expected object, got list"]


@pytest.mark.parametrize("raw, code", [
    ('{"limit": ', "invalid_arguments"),
    ("[1, 2]", "invalid_arguments"),
    ('{"limit": 11}', "invalid_arguments"),
    ('{"verbose": true}', "invalid_arguments"),
])
async def test_bad_arguments_become_structured_errors(rec, raw, code):
    result = await ToolAdapter(rec.handlers()).call("getLogs", raw, identity=None)
    assert not result.ok and result.error_code == code
    body = json.loads(result.content)
    assert body == {"tool": "getLogs", "ok": False, "error": {"code": code, "message": result.error}}
    assert called(rec, "get_logs") == []


async def test_unknown_tool_and_missing_handler(rec):
    adapter = ToolAdapter(rec.handlers(get_metrics=None))
    unknown = await adapter.call("dropTables", "{}", identity=None)
    assert unknown.error_code == "unknown_tool" and "getStatus" in unknown.error
    missing = await adapter.call("getMetrics", "", identity=None)
    assert missing.error_code == "unavailable"


async def test_handler_exception_is_a_structured_failure_without_its_message(rec):
    def broken():
        raise RuntimeError("db password=hunter2 leaked")
    result = await ToolAdapter(rec.handlers(get_status=broken)).call("getStatus", "{}", identity=None)
    assert result.error_code == "handler_error" and "RuntimeError" in result.error
    assert "hunter2" not in result.content


# -- getCommands ------------------------------------------------------------------------------

async def test_get_commands_unfiltered_returns_ids_only(rec):
    result = await ToolAdapter(rec.handlers()).call("getCommands", "{}", identity=None)
    output = json.loads(result.content)["result"]
    assert output["ids"] == ["ask", "hash", "uuid", "reindex"] and "commands" not in output


@pytest.mark.parametrize("args, ids", [
    ({"id": "/sz-HASH"}, ["hash"]),
    ({"category": "util"}, ["uuid"]),
    ({"fuzzy": "index"}, ["reindex"]),
    ({"fuzzy": "a", "category": "crypto"}, ["hash"]),
    ({"description": "hash", "usage": "<question>"}, []),
    ({"name": "sz-", "usage": "[full]"}, ["reindex"]),
])
async def test_get_commands_filters_combine(rec, args, ids):
    result = await ToolAdapter(rec.handlers()).call("getCommands", json.dumps(args), identity=None)
    output = json.loads(result.content)["result"]
    assert [c["id"] for c in output["commands"]] == ids
    if ids:
        assert set(output["commands"][0]) >= {"id", "name", "description", "category", "usage", "ai_safe"}


# -- runCommand -------------------------------------------------------------------------------

async def test_run_command_runs_safe_commands_with_identity(rec):
    user = {"user_id": "U1"}
    result = await ToolAdapter(rec.handlers()).call("runCommand", '{"commandId": "hash", "text": "sha256 x"}',
                                                    identity=user)
    assert result.ok and json.loads(result.content)["result"] == {"text": "ran hash"}
    assert called(rec, "run_command") == [{"command_id": "hash", "text": "sha256 x", "identity": user}]
    assert result.activity.metadata["type"] == "command_tool"
    assert result.activity.metadata["endpoint"] == "/sz-hash"


@pytest.mark.parametrize("command, code", [
    ("ask", "refused"), ("/sz-ask", "refused"), ("reindex", "refused"), ("nope", "unknown_command"),
])
async def test_run_command_refusals_never_reach_the_handler(rec, command, code):
    result = await ToolAdapter(rec.handlers()).call("runCommand", json.dumps({"commandId": command}),
                                                    identity=None)
    assert result.error_code == code
    assert called(rec, "run_command") == []
    if code == "unknown_command":
        assert "hash, uuid" in result.error  # tells the model what it may run


async def test_run_command_text_is_capped_at_500_chars(rec):
    args = json.dumps({"commandId": "hash", "text": "x" * 501})
    result = await ToolAdapter(rec.handlers()).call("runCommand", args, identity=None)
    assert result.error_code == "invalid_arguments" and "maximum is 500" in result.error


async def test_user_requested_command_skips_only_the_ai_safe_check(rec):
    adapter = ToolAdapter(rec.handlers())
    assert (await adapter.run_command("reindex", "full", identity="U1")).ok
    assert (await adapter.run_command("ask", "q", identity="U1")).error_code == "refused"
    assert [c["command_id"] for c in called(rec, "run_command")] == ["reindex"]


def test_normalize_command_id():
    assert normalize_command_id(" /SZ-Hash ") == "hash"
    assert normalize_command_id("uuid") == "uuid"


# -- logs, errors, routes -----------------------------------------------------------------------

async def test_logs_at_most_ten_and_stacks_only_on_request(rec):
    adapter = ToolAdapter(rec.handlers())
    result = await adapter.call("getLogs", '{"level": "error"}', identity=None)
    entries = json.loads(result.content)["result"]
    assert len(entries) == 10 and all("stack" not in e for e in entries)
    assert called(rec, "get_logs") == [{"limit": 10, "level": "error", "include_stack": False}]
    result = await adapter.call("getErrors", '{"limit": 2, "includeStack": true}', identity=None)
    entries = json.loads(result.content)["result"]
    assert len(entries) == 2 and entries[0]["stack"] == "Traceback ..."


async def test_routes_filter(rec):
    result = await ToolAdapter(rec.handlers()).call("getRoutes", '{"method": "post"}', identity=None)
    assert json.loads(result.content)["result"] == [{"method": "POST", "path": "/api/ask", "file": "bot/http.py"}]


# -- deadline ---------------------------------------------------------------------------------

async def test_async_handler_is_cancelled_at_the_deadline(rec):
    cancelled = asyncio.Event()

    async def stuck():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
    adapter = ToolAdapter(rec.handlers(get_status=stuck), deadline_s=0.2)
    t0 = time.perf_counter()
    result = await adapter.call("getStatus", "{}", identity=None)
    assert time.perf_counter() - t0 < 1.0
    assert result.error_code == "timeout" and "0.2 s" in result.error
    assert cancelled.is_set()
    assert result.activity.status == "failed"


async def test_sync_handler_wait_is_abandoned_at_the_deadline(rec):
    release = threading.Event()
    adapter = ToolAdapter(rec.handlers(get_metrics=lambda: release.wait(10)), deadline_s=0.2)
    t0 = time.perf_counter()
    result = await adapter.call("getMetrics", "{}", identity=None)
    release.set()  # the worker thread cannot be killed; let it finish
    assert time.perf_counter() - t0 < 1.0 and result.error_code == "timeout"


def test_default_deadline_and_cap():
    adapter = ToolAdapter(ToolHandlers())
    assert adapter.deadline_s == 5.0 and adapter.max_output_bytes == 32 * 1024
    with pytest.raises(ValueError):
        ToolAdapter(ToolHandlers(), deadline_s=0)


# -- output cap -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["list", "dict", "string"])
async def test_200_kib_output_is_capped_with_a_valid_truncation_object(rec, shape):
    row = {"path": "lib/" + "x" * 180, "line": 1}
    big = {"list": [row] * 1100, "dict": {"rows": [row] * 1100}, "string": "é" * 110_000}[shape]
    assert len(json.dumps(big, ensure_ascii=False).encode()) > 200 * 1024
    result = await ToolAdapter(rec.handlers(get_routes=lambda: big)).call("getRoutes", "{}", identity=None)
    assert len(result.content.encode()) <= 32 * 1024
    body = json.loads(result.content)
    assert result.truncated and body["ok"] is True
    capped = body["result"]
    assert capped["truncated"] is True and capped["original_bytes"] > 200 * 1024
    if shape == "list":
        assert 0 < len(capped["items"]) < 1100 and capped["total_items"] == 1100 and capped["items"][0] == row
    else:
        assert capped["preview"]


def test_cap_json_keeps_small_values_and_rejects_tiny_caps():
    assert cap_json({"a": 1}) == ('{"a":1}', False)
    with pytest.raises(ValueError):
        cap_json([1], max_bytes=10)


# -- sanitising -------------------------------------------------------------------------------

SECRET_OUTPUT = {
    "headers": {"Authorization": "Bearer abcdef1234567890", "Cookie": "sid=s3cr3t", "X-Api-Key": "k-123456789"},
    "config": {"password": "hunter2", "apiKey": "AKIA0000", "private_key": "-----BEGIN...", "port": 3000,
               "credentials": {"user": "bot", "pass": "pw"}},
    "env": {"SLACK_BOT_TOKEN": "xoxb-1", "PATH": "/usr/bin"},
    "telemetryHistory": [{"t": 1}] * 100,
    "message": "login failed for url=https://bot:pa55word@db.local/x with Authorization: Bearer eyJhbGciOi.x.y "
               "and password: hunter3, slack xoxb-123456789012-123456789012-abcdefghijklmnopqrstuvwx",
    "metrics": {"tokens": 1234, "prompt_tokens": 20, "token": None, "tokenCount": 7},
}


def test_sanitize_redacts_keys_values_and_omits_telemetry():
    clean, count = sanitize(SECRET_OUTPUT)
    text = json.dumps(clean)
    for secret in ("abcdef1234567890", "s3cr3t", "k-123456789", "hunter2", "AKIA0000", "BEGIN", "xoxb-1",
                   "/usr/bin", "pa55word", "eyJhbGciOi", "hunter3", "abcdefghijklmnopqrstuvwx", '"pw"', '"bot"'):
        assert secret not in text, secret
    assert "telemetryHistory" not in clean
    assert clean["env"] == REDACTED
    assert clean["config"]["port"] == 3000
    assert clean["metrics"] == {"tokens": 1234, "prompt_tokens": 20, "token": None, "tokenCount": 7}
    assert "login failed for url=https://bot:" in clean["message"]
    assert count >= 12


def test_sanitize_depth_limit_and_non_json_values():
    deep: dict = {}
    node = deep
    for _ in range(20):
        node["child"] = {}
        node = node["child"]
    clean, _ = sanitize({"deep": deep, "when": (1, 2), "raw": b"bytes", "obj": object()}, max_depth=4)
    assert json.dumps(clean).count("child") == 3
    assert "[depth limit reached]" in json.dumps(clean)
    assert clean["when"] == [1, 2] and clean["raw"] == "bytes" and clean["obj"].startswith("<object")


@pytest.mark.parametrize("key, secret", [
    ("authorization", True), ("Set-Cookie", True), ("DB_PASSWORD", True), ("clientSecret", True),
    ("apiKey", True), ("private_key", True), ("ADMIN_API_TOKEN", True), ("sessionId", True),
    ("prompt_tokens", False), ("tokens", False), ("keyboard", False), ("path", False), ("author", False),
])
def test_is_secret_key(key, secret):
    assert is_secret_key(key) is secret


def test_redact_text_keeps_ordinary_text():
    text = "GET /api/status took 12 ms; max_tokens=100; the token count is 5"
    assert redact_text(text) == (text, 0)
    assert redact_text("api_key=abc123 next")[0] == "api_key=[REDACTED] next"


async def test_secrets_never_leave_the_adapter(rec):
    result = await ToolAdapter(rec.handlers(get_status=lambda: SECRET_OUTPUT)).call("getStatus", "{}",
                                                                                   identity=None)
    assert "hunter2" not in result.content and result.redactions >= 12
    assert result.activity.metadata["redactions"] == result.redactions


# -- activities and help ----------------------------------------------------------------------

async def test_every_call_has_an_activity(rec):
    adapter = ToolAdapter(rec.handlers())
    result = await adapter.call("getStatus", None, identity=None)
    meta = result.activity.metadata
    assert result.activity.stage == "tool" and result.activity.status == "completed"
    assert meta["type"] == "api_request" and meta["endpoint"] == "/api/status" and meta["status"] == "ok"
    assert meta["duration_ms"] >= 0 and "/api/status" in result.activity.message


def test_describe():
    text = ToolAdapter(ToolHandlers()).describe("runCommand")
    assert "commandId: string (required)" in text
    with pytest.raises(KeyError, match="getStatus"):
        ToolAdapter(ToolHandlers()).describe("nope")
    assert len(TOOL_NAMES) == 8
