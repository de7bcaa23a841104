"""How a ``slackzilla`` command fails: one ``error: …`` line on stderr and a non-zero exit code."""
from __future__ import annotations

import sys

import click

__all__ = ["EXIT_FAILURE", "EXIT_USAGE", "fail"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


def fail(message: str, code: int = EXIT_FAILURE) -> None:
    """Print ``error: <message>`` on stderr and exit with ``code`` (raises ``SystemExit``)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)
