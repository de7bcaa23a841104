"""``/sz-ask <question>``: answer a question about the repository.

The answering itself lives in ``rag/`` and is wired by ``bot/`` as
``CommandServices.ask``; this module only validates the question and maps the
engine's user-facing errors to a result. Not ``ai_safe``: the model calling
``ask`` would recurse into itself.
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec
from rag.errors import ProviderError, UserError

NOT_CONFIGURED = "This bot is not configured to answer questions (no answer engine is connected)."


async def handle(request: CommandRequest) -> CommandResult:
    """Pass the question to ``services.ask``; engine ``UserError``/``ProviderError`` → ``ok=False``."""
    question = request.text
    if not question:
        raise CommandError("Type a question after the command.")
    ask = request.services.ask
    if ask is None:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    try:
        return await ask(question)
    except (UserError, ProviderError) as err:
        return CommandResult(text=str(err), ok=False, data={"error": type(err).__name__})


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-ask``."""
    register(
        CommandSpec(
            id="ask",
            description="Ask a question about the repository; the answer cites files and lines.",
            usage="<question>",
            category="ai",
            handler=handle,
        )
    )
