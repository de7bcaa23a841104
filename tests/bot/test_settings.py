"""Settings: DESIGN.md section 5 variables, .env merging, one error per bad value, masked secrets."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.settings import DEFAULT_PORT, Settings, SettingsError

SLACK = {"SLACK_BOT_TOKEN": "xoxb-secret-bot-token", "SLACK_SIGNING_SECRET": "signing-secret-value"}


def test_defaults_follow_the_design_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env(dict(SLACK), dotenv_path=None)
    assert settings.host == "127.0.0.1"
    assert settings.port == DEFAULT_PORT == 3000
    assert settings.repo_path == Path.cwd()
    assert settings.rag_index_path is None
    assert settings.reindex_interval_s == 300
    assert settings.repo_git_pull is False
    assert settings.admin_user_ids == frozenset()
    assert settings.admin_api_token is None
    assert settings.slack_api_url == "https://slack.com/api/"
    assert settings.engine.model.timeout_s == 60
    assert settings.ask_rate_per_min == 6
    assert settings.socket_mode is False


def test_every_variable_is_read(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    local = tmp_path / "model"
    local.mkdir()
    env = {
        **SLACK, "SLACK_APP_TOKEN": "xapp-1-abc", "HOST": "0.0.0.0", "PORT": "8080", "REPO_PATH": str(repo),
        "REPO_WEB_URL": "https://github.com/acme/shop/", "RAG_INDEX_PATH": str(tmp_path / "i.sqlite"),
        "AI_URL": "http://127.0.0.1:9/v1", "AI_API_KEY": "sk-key", "AI_MODEL": "m", "REINDEX_INTERVAL_S": "0",
        "REPO_GIT_PULL": "yes", "ADMIN_USER_IDS": "U01, W02 ,", "ADMIN_API_TOKEN": "x" * 20,
        "SLACK_API_URL": "http://127.0.0.1:1/api", "AI_TIMEOUT_S": "2.5", "ASK_RATE_PER_MIN": "0",
        "EMBEDDINGS_URL": "http://127.0.0.1:2/v1", "EMBEDDINGS_API_KEY": "ek", "EMBEDDINGS_MODEL": "e",
        "EMBEDDINGS_LOCAL_PATH": str(local),
    }
    s = Settings.from_env(env, dotenv_path=None)
    assert (s.slack_app_token, s.host, s.port, s.repo_path) == ("xapp-1-abc", "0.0.0.0", 8080, repo.resolve())
    assert s.repo_web_url == "https://github.com/acme/shop"
    assert s.rag_index_path == tmp_path / "i.sqlite"
    assert s.engine.repo == repo.resolve() and s.engine.index_path == tmp_path / "i.sqlite"
    model = s.engine.model
    assert (model.base_url, model.api_key, model.model, model.timeout_s) == ("http://127.0.0.1:9/v1", "sk-key", "m", 2.5)
    assert (s.reindex_interval_s, s.repo_git_pull, s.ask_rate_per_min) == (0, True, 0)
    assert s.admin_user_ids == {"U01", "W02"}
    assert s.is_admin("U01") and not s.is_admin("U03") and not s.is_admin(None)
    assert s.slack_api_url == "http://127.0.0.1:1/api/"
    emb = s.engine.embeddings
    assert (emb.mode, emb.url, emb.api_key, emb.model) == ("auto", "http://127.0.0.1:2/v1", "ek", "e")
    assert emb.local_path == local.resolve()
    assert s.socket_mode


def test_every_bad_value_is_reported_at_once(tmp_path):
    env = {
        "SLACK_BOT_TOKEN": "xoxp-user-token", "SLACK_SIGNING_SECRET": "s", "PORT": "http", "REPO_PATH": str(tmp_path / "missing"),
        "REPO_WEB_URL": "github.com/acme", "REINDEX_INTERVAL_S": "-1", "REPO_GIT_PULL": "maybe",
        "ADMIN_USER_IDS": "U01,alice", "ADMIN_API_TOKEN": "tiny-tok", "AI_TIMEOUT_S": "0",
        "ASK_RATE_PER_MIN": "many", "SLACK_APP_TOKEN": "xoxb-wrong", "AI_URL": "ftp://x",
    }
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env, dotenv_path=None)
    problems = caught.value.problems
    named = sorted(p.split(":", 1)[0] for p in problems)
    assert named == sorted([
        "SLACK_BOT_TOKEN", "PORT", "REPO_PATH", "REPO_WEB_URL", "REINDEX_INTERVAL_S", "REPO_GIT_PULL",
        "ADMIN_USER_IDS", "ADMIN_API_TOKEN", "AI_TIMEOUT_S", "ASK_RATE_PER_MIN", "SLACK_APP_TOKEN", "AI_URL",
    ])
    assert len(problems) == len(named)  # exactly one line per bad variable
    text = str(caught.value)
    assert text.startswith("Invalid configuration:\n- ")
    assert "'alice'" in text and "between 0 and" in text
    assert "xoxp-user-token" not in text and "tiny-tok" not in text and "xoxb-wrong" not in text


def test_missing_slack_credentials_are_named(tmp_path):
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({}, dotenv_path=None)
    assert [p.split(":")[0] for p in caught.value.problems] == ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"]
    # Socket Mode needs no signing secret; the manifest command needs no credentials at all.
    Settings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}, dotenv_path=None)
    assert Settings.from_env({}, dotenv_path=None, require_slack=False).slack_bot_token is None


def test_oauth_credentials_are_refused():
    env = {**SLACK, "SLACK_CLIENT_ID": "123.456", "SLACK_CLIENT_SECRET": "client-secret"}
    with pytest.raises(SettingsError, match="SLACK_CLIENT_ID/SLACK_CLIENT_SECRET") as caught:
        Settings.from_env(env, dotenv_path=None)
    assert "client-secret" not in str(caught.value)


def test_dotenv_is_read_and_the_environment_wins(tmp_path, monkeypatch):
    dotenv = tmp_path / ".env"
    repo = tmp_path.parent / f"{tmp_path.name}-repo"
    repo.mkdir()
    dotenv.write_text("SLACK_BOT_TOKEN=xoxb-from-file\nSLACK_SIGNING_SECRET=from-file\nPORT=4000\n"
                      f"SLACK_CLIENT_ID=1\nREPO_PATH={repo}\n", encoding="utf-8")
    s = Settings.from_env({"PORT": "5000"}, dotenv_path=dotenv)
    assert (s.slack_bot_token, s.slack_signing_secret, s.port) == ("xoxb-from-file", "from-file", 5000)
    # .env values are merged, never exported: Bolt must not see SLACK_CLIENT_ID.
    import os
    assert "SLACK_CLIENT_ID" not in os.environ
    monkeypatch.chdir(tmp_path)
    assert Settings.from_env({}).port == 4000  # the default .env is the one in the current directory


def test_secrets_are_masked_in_repr_and_logs(caplog):
    env = {**SLACK, "AI_API_KEY": "sk-very-secret", "ADMIN_API_TOKEN": "admin-token-0123456789",
           "EMBEDDINGS_API_KEY": "emb-secret", "SLACK_APP_TOKEN": "xapp-secret"}
    s = Settings.from_env(env, dotenv_path=None)
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("settings %s / %r", s, s)
    shown = repr(s) + str(s) + caplog.text
    for secret in ("xoxb-secret-bot-token", "signing-secret-value", "sk-very-secret", "admin-token-0123456789",
                   "emb-secret", "xapp-secret"):
        assert secret not in shown
    assert "slack_bot_token='***'" in repr(s)
    assert "host='127.0.0.1'" in repr(s)


def test_a_dotenv_inside_the_indexed_repository_is_not_read(tmp_path, monkeypatch, caplog):
    # A cloned repository's own .env must not point the bot's tokens at a host it names.
    (tmp_path / ".env").write_text("AI_URL=https://collector.invalid/v1\nSLACK_API_URL=https://collector.invalid/\n"
                                   "PORT=4000\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    s = Settings.from_env({"AI_API_KEY": "sk-real-key"}, require_slack=False)
    assert "collector.invalid" not in s.engine.model.base_url and "collector.invalid" not in s.slack_api_url
    assert s.port != 4000
    assert "inside the repository being indexed" in caplog.text and "sk-real-key" not in caplog.text
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    s = Settings.from_env({"REPO_PATH": str(elsewhere)}, require_slack=False)  # repository below: .env is outside
    assert s.port == 4000


def test_slackzilla_env_file_is_read_wherever_it_is(tmp_path, monkeypatch):
    (tmp_path / "bot.env").write_text("PORT=4100\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    s = Settings.from_env({"SLACKZILLA_ENV_FILE": str(tmp_path / "bot.env")}, require_slack=False)
    assert s.port == 4100
    with pytest.raises(SettingsError, match="SLACKZILLA_ENV_FILE: .*missing.env is not a file"):
        Settings.from_env({"SLACKZILLA_ENV_FILE": str(tmp_path / "missing.env")}, require_slack=False)


def test_reindex_timeout_is_read_and_checked():
    assert Settings.from_env({"REINDEX_TIMEOUT_S": "90"}, dotenv_path=None, require_slack=False).reindex_timeout_s == 90
    with pytest.raises(SettingsError, match="REINDEX_TIMEOUT_S"):
        Settings.from_env({"REINDEX_TIMEOUT_S": "soon"}, dotenv_path=None, require_slack=False)


def test_state_path_with_a_trailing_slash_is_a_folder(tmp_path):
    s = Settings.from_env({"STATE_PATH": str(tmp_path / "new" / "deeper") + "/"}, dotenv_path=None, require_slack=False)
    assert s.state_path == tmp_path / "new" / "deeper" / "state.sqlite"
    assert Settings.from_env({"STATE_PATH": str(tmp_path)}, dotenv_path=None,
                             require_slack=False).state_path == tmp_path / "state.sqlite"
