"""``slackzilla serve`` and ``slackzilla manifest``: run the Slack bot, write its app manifest."""
from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import click

from bot.cli.common import friendly_errors

__all__ = ["serve_cmd", "manifest_cmd"]

DEFAULT_MANIFEST_PATH = Path("slackzilla-manifest.json")
"""Written in the current directory: works outside a source checkout and never overwrites the
checked-in ``deploy/manifest.json`` (regenerate that one with ``--out deploy/manifest.json``)."""


@click.command("serve")
@friendly_errors
def serve_cmd() -> None:
    """Run the Slack bot (HTTP on HOST:PORT, or Socket Mode with SLACK_APP_TOKEN) and the HTTP API."""
    from bot.server import serve
    from bot.settings import Settings

    asyncio.run(serve(Settings.from_env()))


def _check_request_url(url: str) -> None:
    """Refuse a request URL Slack would refuse: Slack only sends to HTTPS URLs with a host
    (api.slack.com/apis/events-api#request-urls: "must be an HTTPS URL with a valid certificate").

    Raises:
        click.BadParameter: not ``https://HOST[...]``.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise click.BadParameter(
            f"Slack only sends to HTTPS URLs with a host; got {url!r} "
            "(use e.g. https://bot.example.com/slack/events, or Socket Mode with SLACK_APP_TOKEN)",
            param_hint="--url")


@click.command("manifest")
@click.option("--url", default=None, help="Public URL of /slack/events (HTTP mode).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_MANIFEST_PATH,
              show_default=True, help="Where to write the manifest; '-' prints it.")
@friendly_errors
def manifest_cmd(url: str | None, out: Path) -> None:
    """Write the Slack app manifest built from the command registry."""
    from bot.slack.manifest import build_manifest, manifest_json
    from bot.settings import Settings
    from commands.registry import build_registry

    if url is not None:
        _check_request_url(url)
    settings = Settings.from_env(require_slack=False)
    text = manifest_json(build_manifest(build_registry(), settings, request_url=url))
    if str(out) == "-":
        click.echo(text, nl=False)
        return
    if not out.parent.is_dir():
        raise click.BadParameter(f"the folder {out.parent} does not exist", param_hint="--out")
    out.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out}", err=True)
    if url is None and not settings.socket_mode:
        click.echo("note: the request URL is a placeholder; pass --url https://YOUR-HOST/slack/events", err=True)
