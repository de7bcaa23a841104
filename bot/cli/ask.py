"""``slackzilla ask``: answer a question through the bot's one answer entry point (:class:`bot.asker.Asker`)."""
from __future__ import annotations

import asyncio
import sys

import click

from rag.tools.schemas import CHUNK_KINDS

from bot.cli.common import bot_core, check_question, emit, friendly_errors, index_option, json_option, open_engine, printable, repo_option

__all__ = ["ask_cmd"]


@click.command("ask")
@click.argument("question", required=False)
@repo_option
@index_option
@click.option("--no-ai", is_flag=True, help="Answer locally from the retrieved sources, without a model.")
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50), help="Sources to retrieve.")
@click.option("--type", "kind", type=click.Choice(CHUNK_KINDS),
              default=None, help="Only sources of this type.")
@json_option
@friendly_errors
def ask_cmd(question, repo, index_path, no_ai, limit, kind, as_json) -> None:
    """Answer a question about the repository, with sources.

    Uses the model when AI_API_KEY is set (tokens stream to the terminal),
    otherwise prints the retrieved sources with snippets.
    """
    check_question(question)
    from bot.cli.terminal import format_answer_for_terminal

    engine = open_engine(repo, index_path, quiet=as_json, allow_all=True)
    streamed = False

    def on_token(text: str) -> None:
        nonlocal streamed
        streamed = True
        sys.stdout.write(printable(text))
        sys.stdout.flush()

    async def ask():
        asker = bot_core(engine).asker
        try:
            return await asker.answer(question, with_ai=not no_ai, top_k=limit, kind=kind,
                                      on_token=None if as_json else on_token,
                                      repo="all" if hasattr(engine, "members") else None)
        finally:
            await asker.aclose()

    try:
        result = asyncio.run(ask())
    finally:
        engine.close()
    if as_json:
        emit(result.to_json())
        return
    if streamed:
        click.echo()
    click.echo(printable(format_answer_for_terminal(result, streamed=streamed)))
