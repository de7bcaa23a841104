"""``slackzilla tool NAME``: run one live tool (the model's window on the bot) from a terminal."""
from __future__ import annotations

import asyncio
import sys

import click

from bot.cli.common import (EXIT_FAILURE, EXIT_USAGE, bot_core, fail, friendly_errors, index_option, json_text,
                            open_engine, repo_option)

__all__ = ["tool_cmd"]


@click.command("tool")
@click.argument("name")
@click.option("--args", "args_json", default="{}", show_default=True, help="Tool arguments as a JSON object.")
@click.option("--describe", is_flag=True, help="Describe the tool and its arguments instead of running it.")
@repo_option
@index_option
@friendly_errors
def tool_cmd(name, args_json, describe, repo, index_path) -> None:
    """Run one tool the model can call (getStatus, runCommand, getLogs, searchCode, readFile, ...) and print its output."""
    engine = open_engine(repo, index_path, quiet=True)
    try:
        context = bot_core(engine)
        if describe:
            try:
                click.echo(context.tools.describe(name))
            except KeyError as exc:
                fail(str(exc.args[0]) if exc.args else str(exc), EXIT_USAGE)
            return
        result = asyncio.run(context.tools.call(name, args_json, identity=None))
    finally:
        engine.close()
    click.echo(json_text(result.to_json(), indent=2))
    if not result.ok:
        sys.exit(EXIT_FAILURE)
