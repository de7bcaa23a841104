"""The ``slackzilla`` command line: ``main`` is the console-script entry point."""
from bot.cli.base import cli, main

__all__ = ["cli", "main"]
