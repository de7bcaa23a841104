"""The Slack app manifest, built from the command registry.

``slackzilla manifest`` writes :func:`manifest_json` to ``deploy/manifest.json``;
a test rebuilds it and fails when the checked-in file drifts from the registry
(the way llm checks its generated docs with ``cog --check``).

In HTTP mode every slash command, the Events API and interactivity point at
``<request_url>`` (default :data:`DEFAULT_REQUEST_URL`, a placeholder to replace
with the public address of ``/slack/events``). With ``SLACK_APP_TOKEN`` set
(Socket Mode) no URLs are written and ``socket_mode_enabled`` is true.

Reference: https://docs.slack.dev/reference/app-manifest
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = [
    "SHORTCUTS",
    "BOT_SCOPES",
    "BOT_EVENTS",
    "DEFAULT_MANIFEST_PATH",
    "DEFAULT_REQUEST_URL",
    "build_manifest",
    "manifest_json",
]

APP_NAME = "Slackzilla"
APP_DESCRIPTION = "Answers questions about your code repository, citing files and lines."
DEFAULT_REQUEST_URL = "https://slackzilla.example.com/slack/events"
DEFAULT_MANIFEST_PATH = Path("deploy") / "manifest.json"

BOT_SCOPES: tuple[str, ...] = (
    "app_mentions:read",  # follow-up questions that mention the bot in an answer's thread
    "channels:history",  # read the thread of a follow-up (public channels)
    "chat:write",  # post answers and progress, update them, stream replies
    "chat:write.public",  # post in public channels the bot was not invited to
    "commands",  # the /sz-* slash commands
    "files:write",  # answers too long for one message go out as a snippet
    "groups:history",  # read the thread of a follow-up (private channels)
    "usergroups:read",  # "Save to Slackzilla": savers named by user group ([documents] savers)
)
BOT_EVENTS: tuple[str, ...] = ("app_mention",)
#: Message shortcuts (bot.slack.shortcuts): their callback ids are what the app listens for.
SHORTCUTS: tuple[dict, ...] = (
    {"name": "Save to Slackzilla", "type": "message", "callback_id": "sz_save_document",
     "description": "Save this message, or its whole thread, as a document Slackzilla can answer from."},
)

# Slack's limits for the manifest fields we fill.
_MAX_DESCRIPTION = 2000
_MAX_USAGE_HINT = 1000


def build_manifest(registry, settings=None, *, request_url: str | None = None) -> dict:
    """The manifest as a dict.

    Args:
        registry: a :class:`commands.registry.Registry`; every command becomes a
            slash command with its description and usage hint (admin-only
            commands say so in the description).
        settings: optional :class:`bot.settings.Settings`; Socket Mode when it has
            an app token.
        request_url: public URL of ``/slack/events`` (HTTP mode only).
    """
    socket_mode = bool(settings is not None and settings.socket_mode)
    url = request_url or DEFAULT_REQUEST_URL
    commands = []
    for spec in registry.all():
        description = spec.description + (" (admins only)" if spec.admin_only else "")
        command = {"command": spec.slash, "description": description[:_MAX_DESCRIPTION]}
        if spec.usage:
            command["usage_hint"] = spec.usage[:_MAX_USAGE_HINT]
        command["should_escape"] = False
        if not socket_mode:
            command["url"] = url
        commands.append(command)
    events: dict = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict = {"is_enabled": True}
    if not socket_mode:
        events = {"request_url": url, **events}
        interactivity["request_url"] = url
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {"name": APP_NAME, "description": APP_DESCRIPTION},
        "features": {
            "bot_user": {"display_name": APP_NAME, "always_online": True},
            "slash_commands": commands,
            "shortcuts": [dict(shortcut) for shortcut in SHORTCUTS],
        },
        "oauth_config": {"scopes": {"bot": sorted(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }


def manifest_json(manifest: dict) -> str:
    """The text written to ``deploy/manifest.json``: 2-space indented JSON and a final newline."""
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
