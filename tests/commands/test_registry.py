"""The command registry: building, lookup, visibility, run() policy and the README table."""
from __future__ import annotations

import importlib
import logging
import sys
import textwrap

import pytest

import commands
from commands import (
    DEFAULT_COMMAND_MODULES,
    CommandError,
    CommandRequest,
    CommandResult,
    CommandServices,
    CommandSpec,
    Registry,
    build_registry,
)

BUILT_IN_IDS = {
    "8ball", "ask", "base64", "calc", "case", "count", "hash", "help", "ping",
    "random", "reindex", "repo", "roll", "rps", "status", "token", "unix", "uuid",
}
AI_SAFE_IDS = {"base64", "calc", "case", "count", "hash", "help", "ping", "random", "roll", "status", "unix", "uuid"}


def test_exported_members_are_pinned():
    assert commands.__all__ == [
        "DEFAULT_COMMAND_MODULES",
        "CommandError",
        "CommandRequest",
        "CommandResult",
        "CommandServices",
        "CommandSpec",
        "Registry",
        "build_registry",
    ]
    for name in commands.__all__:
        assert getattr(commands, name) is not None


def test_default_registry_has_every_built_in_command():
    registry = build_registry()
    assert {spec.id for spec in registry.all()} == BUILT_IN_IDS
    assert len(registry) == len(BUILT_IN_IDS) == len(DEFAULT_COMMAND_MODULES)
    assert [spec.id for spec in registry.all()] == sorted(BUILT_IN_IDS)
    assert all(spec.slash == "/sz-" + spec.id for spec in registry.all())


def test_admin_and_ai_safe_flags():
    registry = build_registry()
    assert {spec.id for spec in registry.all() if spec.admin_only} == {"reindex"}
    assert {spec.id for spec in registry.all() if spec.ai_safe} == AI_SAFE_IDS


def test_each_build_is_independent():
    first, second = build_registry(), build_registry()
    first.add(CommandSpec(id="extra", description="x", usage="", category="fun", handler=lambda r: CommandResult("x")))
    assert first.get("extra") is not None
    assert second.get("extra") is None


@pytest.mark.parametrize("name", ["hash", "HASH", "/sz-hash", "sz-hash", " /SZ-Hash "])
def test_get_accepts_slash_and_prefix_forms(name):
    assert build_registry().get(name).id == "hash"


def test_get_unknown_returns_none():
    assert build_registry().get("/sz-nothing") is None


def test_visible_to_hides_admin_commands_from_non_admins():
    registry = build_registry()
    assert "reindex" not in {spec.id for spec in registry.visible_to(is_admin=False)}
    assert {spec.id for spec in registry.visible_to(is_admin=True)} == BUILT_IN_IDS


def test_duplicate_id_is_rejected():
    with pytest.raises(ValueError, match="duplicate command id 'ping'"):
        build_registry(["commands.ping", "commands.help", "commands.ping"])


@pytest.fixture
def make_module(tmp_path, monkeypatch):
    """Write a real command module on a temporary sys.path entry; unload it afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    created: list[str] = []

    def make(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        created.append(name)
        return name

    yield make
    for name in created:
        sys.modules.pop(name, None)


def test_extension_module_uses_the_same_hook(make_module):
    name = make_module(
        "sz_test_ext_echo",
        '''
        from commands import CommandResult, CommandSpec

        def register(register):
            register(CommandSpec(id="echo", description="Echo.", usage="<text>", category="fun",
                                 handler=lambda request: CommandResult(text=request.text)))
        ''',
    )
    registry = build_registry([*DEFAULT_COMMAND_MODULES, name])
    assert registry.get("echo").usage == "<text>"
    assert len(registry) == len(BUILT_IN_IDS) + 1


def test_module_without_register_hook_is_rejected(make_module):
    name = make_module("sz_test_ext_nohook", "VALUE = 1\n")
    with pytest.raises(TypeError, match="no register"):
        build_registry([name])


def test_missing_module_raises():
    with pytest.raises(ModuleNotFoundError):
        build_registry(["commands.does_not_exist"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"id": "Bad Id"}, "invalid command id"),
        ({"id": "x" * 29}, "invalid command id"),
        ({"category": "misc"}, "invalid category"),
        ({"description": "  "}, "description"),
        ({"usage": "u" * 1001}, "usage hint"),
    ],
)
def test_spec_validation(kwargs, message):
    base = {"id": "ok", "description": "d", "usage": "", "category": "fun", "handler": lambda r: CommandResult("x")}
    with pytest.raises(ValueError, match=message):
        CommandSpec(**{**base, **kwargs})


def _registry_with(*specs: CommandSpec, **kwargs) -> Registry:
    registry = Registry(**kwargs)
    for spec in specs:
        registry.add(spec)
    return registry


def _spec(id: str, handler, **kwargs) -> CommandSpec:
    return CommandSpec(id=id, description=f"{id} command", usage="<thing>", category="utility", handler=handler, **kwargs)


async def test_unknown_command_lists_close_matches():
    result = await build_registry().run(CommandRequest(command_id="/sz-hsah", text="sha256 x"))
    assert not result.ok and result.ephemeral
    assert "Unknown command /sz-hsah" in result.text
    assert "/sz-hash" in result.text
    assert result.data["suggestions"] == ["/sz-hash"]


async def test_unknown_command_does_not_suggest_admin_commands_to_non_admins():
    registry = build_registry()
    as_user = await registry.run(CommandRequest(command_id="reindx", text=""))
    as_admin = await registry.run(CommandRequest(command_id="reindx", text="", is_admin=True))
    assert "/sz-reindex" not in as_user.text
    assert "/sz-reindex" in as_admin.text


async def test_admin_only_command_is_refused_for_non_admins():
    calls: list[str] = []
    registry = _registry_with(_spec("wipe", lambda r: calls.append(r.text) or CommandResult("done"), admin_only=True))
    refused = await registry.run(CommandRequest(command_id="wipe", text="all"))
    assert not refused.ok and refused.ephemeral
    assert refused.text == "/sz-wipe is restricted to admins."
    assert calls == []
    allowed = await registry.run(CommandRequest(command_id="wipe", text="all", is_admin=True))
    assert allowed.ok and calls == ["all"]


async def test_tool_source_runs_only_ai_safe_commands():
    registry = _registry_with(
        _spec("safe", lambda r: CommandResult("safe ran"), ai_safe=True),
        _spec("unsafe", lambda r: CommandResult("unsafe ran")),
    )
    assert (await registry.run(CommandRequest(command_id="safe", text="", source="tool"))).text == "safe ran"
    refused = await registry.run(CommandRequest(command_id="unsafe", text="", source="tool"))
    assert not refused.ok and "cannot be run by the assistant" in refused.text
    assert (await registry.run(CommandRequest(command_id="unsafe", text="", source="slack"))).ok


async def test_admin_check_comes_before_the_tool_check():
    registry = build_registry()
    result = await registry.run(CommandRequest(command_id="reindex", text="", source="tool"))
    assert result.text == "/sz-reindex is restricted to admins."


async def test_command_error_becomes_usage_result():
    def handler(request):
        raise CommandError("That thing is not valid.")

    result = await _registry_with(_spec("thing", handler)).run(CommandRequest(command_id="thing", text="x"))
    assert not result.ok and result.ephemeral
    assert result.text == "That thing is not valid.\nUsage: /sz-thing <thing>"
    assert result.data == {"error": "usage", "usage": "/sz-thing <thing>"}


async def test_crash_is_logged_without_input_and_reported(caplog):
    errors: list[tuple[str, str]] = []

    def handler(request):
        raise RuntimeError(f"boom with {request.text}")

    registry = _registry_with(_spec("crash", handler), on_error=lambda cid, exc: errors.append((cid, str(exc))))
    with caplog.at_level(logging.INFO, logger="commands.registry"):
        result = await registry.run(CommandRequest(command_id="crash", text="hunter2-secret"))
    assert not result.ok and result.ephemeral
    assert result.text == "Sorry, /sz-crash failed unexpectedly. The error has been logged."
    assert "hunter2-secret" not in result.text
    assert "RuntimeError" in caplog.text and "crash" in caplog.text
    assert "hunter2-secret" not in caplog.text
    assert errors == [("crash", "boom with hunter2-secret")]


async def test_failing_on_error_hook_does_not_escape():
    def hook(command_id, exc):
        raise ValueError("hook broke")

    registry = _registry_with(_spec("crash", lambda r: 1 / 0), on_error=hook)
    result = await registry.run(CommandRequest(command_id="crash", text=""))
    assert not result.ok and result.data["type"] == "ZeroDivisionError"


async def test_handler_returning_wrong_type_is_an_internal_error():
    result = await _registry_with(_spec("bad", lambda r: "plain string")).run(CommandRequest(command_id="bad", text=""))
    assert not result.ok and result.data == {"error": "internal", "type": "TypeError"}


async def test_async_handler_gets_stripped_text_and_the_registry():
    seen: list[CommandRequest] = []

    async def handler(request):
        seen.append(request)
        return CommandResult(text="ok")

    registry = _registry_with(_spec("probe", handler))
    await registry.run(CommandRequest(command_id="/SZ-PROBE", text="  padded  "))
    assert seen[0].text == "padded"
    assert seen[0].command_id == "probe"
    assert seen[0].services.registry is registry


async def test_injected_registry_is_kept():
    seen: list[CommandRequest] = []
    other = Registry()
    registry = _registry_with(_spec("probe", lambda r: seen.append(r) or CommandResult("ok")))
    await registry.run(CommandRequest(command_id="probe", text="", services=CommandServices(registry=other)))
    assert seen[0].services.registry is other


async def test_overlong_text_is_refused_before_the_handler():
    calls: list[str] = []
    registry = _registry_with(_spec("probe", lambda r: calls.append(r.text) or CommandResult("ok")), max_text_chars=10)
    result = await registry.run(CommandRequest(command_id="probe", text="x" * 11))
    assert not result.ok and "too long" in result.text
    assert calls == []


def test_result_to_json_shape():
    result = CommandResult(text="t", title="T", fields=[("a", "1")], code="c", data={"k": 1}, ephemeral=False)
    assert result.to_json() == {
        "ok": True,
        "text": "t",
        "ephemeral": False,
        "title": "T",
        "fields": [{"name": "a", "value": "1"}],
        "code": "c",
        "data": {"k": 1},
    }


def test_markdown_table_lists_every_command():
    registry = build_registry()
    table = registry.markdown_table()
    lines = table.strip().splitlines()
    assert lines[0] == "| command | usage | description |"
    assert lines[1] == "|---|---|---|"
    assert len(lines) == 2 + len(BUILT_IN_IDS)
    rows = {line.split("|")[1].strip(): line for line in lines[2:]}
    assert set(rows) == {f"`/sz-{cid}`" for cid in BUILT_IN_IDS}
    assert rows["`/sz-reindex`"].endswith("(admin only) |")
    assert sum("(admin only)" in line for line in lines) == 1
    # Pipes inside cells are escaped so every row keeps exactly four separators.
    assert "`encode\\|decode <text>`" in rows["`/sz-base64`"]
    assert all(line.replace("\\|", "").count("|") == 4 for line in lines)
    assert "| `/sz-ping` |  | Check that the bot is alive. |" in lines


# kinds and question hooks ------------------------------------------------------------------

def test_ask_is_the_one_spec_of_kind_ask():
    registry = build_registry()
    assert [spec.id for spec in registry.all() if spec.is_ask] == ["ask"]
    assert registry.ask_spec() is registry.get("ask")
    assert {spec.kind for spec in registry.all()} == {"command", "ask"}
    with pytest.raises(ValueError, match="invalid kind"):
        CommandSpec(id="x", description="d", usage="", category="info", handler=lambda r: None, kind="question")


def test_question_parsers_come_from_the_specs():
    from commands.hash import from_question

    assert build_registry().question_parsers() == {"hash": from_question}


async def test_a_question_is_not_refused_for_its_length():
    # Questions follow rag.answer.question's policy (cut at 4,000 characters with a note), not the
    # registry's command-text limit.
    seen: list[str] = []
    registry = _registry_with(CommandSpec(id="q", description="d", usage="", category="ai", kind="ask",
                                          handler=lambda r: seen.append(r.text) or CommandResult("ok")),
                              max_text_chars=10)
    result = await registry.run(CommandRequest(command_id="q", text="x" * 11))
    assert result.ok and seen == ["x" * 11]


def test_command_names_are_normalised_in_one_place():
    from rag.tools.command_names import normalize_command_id

    registry = build_registry()
    for name in ("hash", "HASH", "/sz-hash", "sz-Hash", "  /SZ-hash "):
        assert normalize_command_id(name) == "hash" and registry.get(name).id == "hash"
    assert normalize_command_id(None) == ""
