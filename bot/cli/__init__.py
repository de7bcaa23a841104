"""The ``slackzilla`` command line (DESIGN.md §6 is the contract): ``main`` is the console-script entry point.

The group is built here and every command is named explicitly (:data:`COMMANDS`), one module per
command family, imported when that command runs (shared options and helpers are in :mod:`bot.cli.common`):

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

``retrieve``, ``index``, ``code`` and ``state`` load neither Bolt nor the openai SDK; ``index`` loads only the
ingest side: no retrieval, answer stack, numpy or detect-secrets scanner (``tests/bot/cli/test_cold_start.py``).
"""
from __future__ import annotations

import importlib
import logging
import sys

import click

__all__ = ["COMMANDS", "cli", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("bot.cli.index", "index_cmd"),
    "retrieve": ("bot.cli.retrieve", "retrieve_cmd"),
    "ask": ("bot.cli.ask", "ask_cmd"),
    "tool": ("bot.cli.tool", "tool_cmd"),
    "eval": ("bot.cli.evaluate", "eval_cmd"),
    "bench": ("bot.cli.bench", "bench_cmd"),
    "code": ("bot.cli.code", "code_group"),
    "context": ("bot.cli.code", "context_cmd"),
    "serve": ("bot.cli.serve", "serve_cmd"),
    "manifest": ("bot.cli.serve", "manifest_cmd"),
    "state": ("bot.cli.state", "state_cmd"),
    "repos": ("bot.cli.repos", "repos_cmd"),
    "docs": ("bot.cli.docs", "docs_group"),
}
"""Command name → (module, attribute) of its click command, in ``--help`` order. A command's module
is imported when the command is run (or listed by ``--help``), not before: ``slackzilla index``
pays for neither the answer stack nor Slack (DESIGN.md §6)."""


class _LazyGroup(click.Group):
    """A :class:`click.Group` whose commands are the entries of :data:`COMMANDS`, each imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is not None or cmd_name not in COMMANDS:
            return found
        module, attribute = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        self.commands[cmd_name] = command
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
def cli(verbose: bool) -> None:
    """Slackzilla: ask questions about a code repository."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="slackzilla")
