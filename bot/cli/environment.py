"""The variables a ``slackzilla`` command reads: the environment over ``.env`` or ``SLACKZILLA_ENV_FILE``."""
from __future__ import annotations

import click

from bot.cli.failure import fail

__all__ = ["environment"]

_ENVIRONMENT_KEY = "slackzilla.environment"
"""Where :func:`environment` keeps the command's variables (the root click context's ``meta``), per ``--repo``."""


def environment() -> dict[str, str]:
    """The variables of this command: the environment over ``.env`` or ``SLACKZILLA_ENV_FILE``, read
    as ``serve`` reads them (:func:`bot.settings.read_environment`; the command's ``--repo``, once
    parsed, decides like ``REPO_PATH`` whether ``./.env`` is the repository's own file), once per
    command (kept in the click context; read again outside one). Every command reads its
    configuration from here, so ``slackzilla index`` and the bot index the same repository into
    the same file.

    Exits (:func:`fail`) when ``SLACKZILLA_ENV_FILE`` names no file.
    """
    from bot.settings import read_environment

    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    # --repo, once parsed, decides like REPO_PATH whether ./.env is the indexed repository's own file
    repo = ctx.params.get("repo") if ctx is not None else None
    key = (_ENVIRONMENT_KEY, None if repo is None else str(repo))
    if key not in meta:
        values, problems = read_environment(repo=repo)
        if problems:
            fail("; ".join(problems))
        meta[key] = values
    return meta[key]
