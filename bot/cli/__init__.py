"""The ``slackzilla`` command line (DESIGN.md §6 is the contract): ``main`` is the console-script entry point.

The group is built here and every command is added explicitly, one module per
command family (shared options and helpers are in :mod:`bot.cli.common`):

    index      bot.cli.index        build or update the index
    retrieve   bot.cli.retrieve     the best-matching sources
    ask        bot.cli.ask          an answer through the bot's answer entry point
    tool       bot.cli.tool         one live tool
    eval       bot.cli.evaluate     retrieval scores on an eval set
    bench      bot.cli.bench        indexing and query latency
    code       bot.cli.code         symbols, routes, env vars, dependencies
    context    bot.cli.code         the packed context for a question
    serve      bot.cli.serve        run the Slack bot and the HTTP API
    manifest   bot.cli.serve        write the Slack app manifest
    state      bot.cli.state        show and prune the bot's state store
    repos      bot.cli.repos        the configured repositories and their index state
    docs       bot.cli.docs         add, list, show, remove and clear documents

``retrieve``, ``index``, ``code`` and ``state`` load neither Bolt nor the openai SDK.
"""
from __future__ import annotations

import logging
import sys

import click

from bot.cli.ask import ask_cmd
from bot.cli.bench import bench_cmd
from bot.cli.code import code_group, context_cmd
from bot.cli.docs import docs_group
from bot.cli.evaluate import eval_cmd
from bot.cli.index import index_cmd
from bot.cli.repos import repos_cmd
from bot.cli.retrieve import retrieve_cmd
from bot.cli.serve import manifest_cmd, serve_cmd
from bot.cli.state import state_cmd
from bot.cli.tool import tool_cmd

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
def cli(verbose: bool) -> None:
    """Slackzilla: ask questions about a code repository."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")


cli.add_command(index_cmd)
cli.add_command(retrieve_cmd)
cli.add_command(ask_cmd)
cli.add_command(tool_cmd)
cli.add_command(eval_cmd)
cli.add_command(bench_cmd)
cli.add_command(code_group)
cli.add_command(context_cmd)
cli.add_command(serve_cmd)
cli.add_command(manifest_cmd)
cli.add_command(state_cmd)
cli.add_command(repos_cmd)
cli.add_command(docs_group)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="slackzilla")
