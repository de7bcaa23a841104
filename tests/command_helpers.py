"""Helpers shared by the command tests (run a command through the real registry, check usage replies)."""
from __future__ import annotations

from commands import CommandRequest, CommandResult


async def run(registry, command_id: str, text: str = "", **kwargs) -> CommandResult:
    """Run ``command_id`` with ``text`` through ``registry`` as a Slack user would."""
    return await registry.run(CommandRequest(command_id=command_id, text=text, **kwargs))


def assert_usage(result: CommandResult, command_id: str, message: str | None = None) -> None:
    """``result`` is an ephemeral usage reply for ``command_id`` (containing ``message`` if given)."""
    assert not result.ok and result.ephemeral
    assert f"\nUsage: /sz-{command_id}" in result.text
    if message:
        assert message in result.text
