"""``slackzilla serve`` and ``slackzilla manifest``: run the Slack bot, write its app manifest."""
from __future__ import annotations

import asyncio
from pathlib import Path

import click

from bot.cli import cli, friendly_errors

__all__ = ["serve_cmd", "manifest_cmd"]

DEFAULT_MANIFEST_PATH = Path("deploy/manifest.json")


@cli.command("serve")
@friendly_errors
def serve_cmd() -> None:
    """Run the Slack bot (HTTP on HOST:PORT, or Socket Mode with SLACK_APP_TOKEN) and the HTTP API."""
    from bot.server import serve
    from bot.settings import Settings

    asyncio.run(serve(Settings.from_env()))


@cli.command("manifest")
@click.option("--url", default=None, help="Public URL of /slack/events (HTTP mode).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_MANIFEST_PATH,
              show_default=True, help="Where to write the manifest; '-' prints it.")
@friendly_errors
def manifest_cmd(url: str | None, out: Path) -> None:
    """Write the Slack app manifest built from the command registry."""
    from bot.manifest import build_manifest, manifest_json
    from bot.settings import Settings
    from commands.registry import build_registry

    text = manifest_json(build_manifest(build_registry(), Settings.from_env(require_slack=False), request_url=url))
    if str(out) == "-":
        click.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out}", err=True)
