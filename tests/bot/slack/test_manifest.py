"""The Slack app manifest is built from the registry and the checked-in copy stays in sync."""
from __future__ import annotations

import json
from pathlib import Path

from bot.slack.manifest import DEFAULT_REQUEST_URL, build_manifest, manifest_json
from bot.settings import Settings
from commands.registry import build_registry

CHECKED_IN = Path(__file__).resolve().parents[3] / "deploy" / "manifest.json"


def test_checked_in_manifest_matches_the_registry():
    expected = manifest_json(build_manifest(build_registry()))
    assert CHECKED_IN.read_text(encoding="utf-8") == expected, (
        "deploy/manifest.json is out of date: run `slackzilla manifest --out deploy/manifest.json` and commit the result"
    )


def test_every_command_is_a_slash_command_with_description_and_usage():
    registry = build_registry()
    manifest = build_manifest(registry)
    commands = {c["command"]: c for c in manifest["features"]["slash_commands"]}
    assert set(commands) == {spec.slash for spec in registry.all()}
    for spec in registry.all():
        entry = commands[spec.slash]
        assert entry["description"].startswith(spec.description)
        assert entry.get("usage_hint", "") == spec.usage
        assert entry["url"] == DEFAULT_REQUEST_URL
        assert entry["should_escape"] is False
        assert len(entry["description"]) <= 2000
    assert "(admins only)" in commands["/sz-reindex"]["description"]
    assert "(admins only)" not in commands["/sz-hash"]["description"]


def test_http_mode_points_events_and_interactivity_at_the_request_url():
    manifest = build_manifest(build_registry(), request_url="https://bot.example.org/slack/events")
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is False
    assert settings["event_subscriptions"]["request_url"] == "https://bot.example.org/slack/events"
    assert settings["interactivity"] == {"is_enabled": True, "request_url": "https://bot.example.org/slack/events"}
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert {"commands", "chat:write", "app_mentions:read", "files:write"} <= set(scopes)
    assert scopes == sorted(scopes)
    assert "app_mention" in settings["event_subscriptions"]["bot_events"]


def test_socket_mode_has_no_urls():
    settings = Settings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}, dotenv_path=None)
    manifest = build_manifest(build_registry(), settings)
    text = json.dumps(manifest)
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert "url" not in text.replace("usage_hint", "")  # no request_url / url keys anywhere
    assert manifest["settings"]["interactivity"] == {"is_enabled": True}


def test_manifest_json_is_stable_text():
    text = manifest_json(build_manifest(build_registry()))
    assert text.endswith("}\n") and json.loads(text)["display_information"]["name"] == "Slackzilla"


def test_manifest_command_works_outside_a_checkout_and_leaves_the_checked_in_copy(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from bot.cli import cli

    before = CHECKED_IN.read_bytes()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["manifest", "--url", "https://bot.example.org/slack/events"])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "slackzilla-manifest.json").read_text())
    assert written["settings"]["event_subscriptions"]["request_url"] == "https://bot.example.org/slack/events"
    assert CHECKED_IN.read_bytes() == before


def test_manifest_command_refuses_urls_slack_would_refuse(tmp_path, monkeypatch):
    from click.testing import CliRunner
    from bot.cli import cli

    monkeypatch.chdir(tmp_path)
    for url in ("http://bot.example.org/slack/events", "https:///slack/events", "bot.example.org/slack/events"):
        result = CliRunner().invoke(cli, ["manifest", "--url", url])
        assert result.exit_code == 2, (url, result.output)
        assert "HTTPS" in result.output
    assert not (tmp_path / "slackzilla-manifest.json").exists()
