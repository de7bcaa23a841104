"""``/sz-ask <question>``: answer a question about the repository.

The spec declares ``kind="ask"``: the Slack app answers it with its question
flow (progress, streaming, sources), and every surface answers through the
bot's one answer entry point (``bot.asker.Asker``). Through the registry this
handler gives the usage line for an empty question (the check is
:func:`rag.answer.question.require_question`) and, when a host provides
``CommandServices.ask``, passes the question on. Not ``ai_safe``: the model
calling ``ask`` would recurse into itself.
"""
from __future__ import annotations

from typing import Callable

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec
from rag.answer.question import require_question
from rag.errors import EmptyQuestionError, ProviderError, UserError

NOT_CONFIGURED = "This bot is not configured to answer questions (no answer engine is connected)."
EMPTY_QUESTION = "Type a question after the command."


async def handle(request: CommandRequest) -> CommandResult:
    """Pass the question to ``services.ask``; empty → usage, engine ``UserError``/``ProviderError`` → ``ok=False``."""
    try:
        question = require_question(request.text)
    except EmptyQuestionError:
        raise CommandError(EMPTY_QUESTION) from None
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
            kind="ask",
        )
    )
