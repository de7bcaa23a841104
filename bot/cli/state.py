"""``slackzilla state``: show what the bot's state store holds, and prune what has expired.

    slackzilla state                 # backend, where (no password), migrations, rows per kind
    slackzilla state --prune         # delete expired turns, claims, rate hits, leases …, then show
    slackzilla state --json

The store is the one ``serve`` uses: ``DATABASE_URL`` (PostgreSQL), else ``STATE_PATH``,
else ``state.sqlite`` beside the index (``RAG_INDEX_PATH`` or the default index of
``REPO_PATH``). Loads neither Bolt nor the openai SDK.
"""
from __future__ import annotations

import json
from pathlib import Path

import click

from bot.cli.common import friendly_errors

__all__ = ["state_cmd"]


@click.command("state")
@click.option("--prune", is_flag=True, help="Delete expired rows (turns, claims, rate hits, leases, stale answers).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@friendly_errors
def state_cmd(prune: bool, as_json: bool) -> None:
    """Show the bot's state store (SQLite or PostgreSQL) and optionally prune it."""
    from bot.settings import Settings
    from bot.state import StateUnavailableError, open_store
    from rag.engine import default_index_path

    settings = Settings.from_env(require_slack=False)
    index_path = settings.rag_index_path or default_index_path(Path(settings.repo_path))
    config = settings.state_config(index_path)
    try:
        store = open_store(config)
    except StateUnavailableError as err:
        raise click.ClickException(f"state store unavailable: {err}") from None
    try:
        pruned = store.prune() if prune else None
        info = store.describe()
    except StateUnavailableError as err:
        raise click.ClickException(f"state store unavailable: {err}") from None
    finally:
        store.close()
    if pruned is not None:
        info["pruned"] = pruned
    info["replica"] = settings.replica_id
    if as_json:
        click.echo(json.dumps(info, indent=2, sort_keys=False))
        return
    click.echo(f"backend     {info.get('backend')}")
    click.echo(f"where       {info.get('where')}")
    click.echo(f"replica     {info['replica']}")
    click.echo(f"migrations  {', '.join(info.get('migrations') or []) or '-'}")
    for kind, count in (info.get("counts") or {}).items():
        click.echo(f"  {kind:<10} {count}")
    if pruned is not None:
        total = sum(pruned.values())
        click.echo(f"pruned      {total} row{'s' if total != 1 else ''}"
                   + (f" ({', '.join(f'{k} {v}' for k, v in pruned.items() if v)})" if total else ""))
