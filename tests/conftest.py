"""Shared test fixtures.

* ``isolated_environment`` (autouse): every test starts without the Slack, model and
  embeddings variables of the developer's shell (``SLACK_*``, ``AI_*``,
  ``EMBEDDINGS_*`` — ``SLACK_CLIENT_ID``/``SLACK_CLIENT_SECRET`` included, which
  would switch Bolt to OAuth) and without the other DESIGN.md section 5 variables,
  and gets a temporary data directory in ``SLACKZILLA_DATA_DIR``. As in llm's
  tests/conftest.py (``LLM_USER_PATH``) and slack_bolt's tests/utils.py.
* Bot fixtures (opt-in): ``slack_fake`` (a local Web API recorder, tests/slack_fake.py),
  ``bot_repo`` (a small repository), ``make_bot`` (the real app bound to 127.0.0.1
  port 0 with its Web API pointed at the fake; see ``slack_fake.BotHarness``).
* A hang never eats CI's time: each test is capped by pytest-timeout (``timeout`` in
  pyproject.toml), and a process that does not exit soon after the session prints every
  thread's stack and exits with the session's own status (tests/exit_watchdog.py).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from repo_helpers import write_repo
from slack_fake import ADMIN, BOT_TOKEN, SIGNING_SECRET, BotHarness, SlackFake

pytest_plugins = ["exit_watchdog"]

CLEARED_PREFIXES = ("SLACK_", "AI_", "EMBEDDINGS_", "RERANK_", "GITHUB_")
CLEARED_NAMES = (
    "HOST", "PORT", "REPO_PATH", "REPO_WEB_URL", "RAG_INDEX_PATH", "REINDEX_INTERVAL_S", "REPO_GIT_PULL",
    "ADMIN_USER_IDS", "ADMIN_API_TOKEN", "ASK_RATE_PER_MIN", "SLACKZILLA_CONFIG",
    "DATABASE_URL", "STATE_PATH", "REPLICA_ID", "STATE_TIMEOUT_S", "PUBLIC_HOSTS",
)


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path_factory) -> Path:
    for name in list(os.environ):
        if name.startswith(CLEARED_PREFIXES) or name in CLEARED_NAMES:
            monkeypatch.delenv(name, raising=False)
    # An installed local-embeddings extra would otherwise switch tests to hybrid retrieval.
    monkeypatch.setenv("EMBEDDINGS", "off")
    data_dir = tmp_path_factory.mktemp("sz-data")
    monkeypatch.setenv("SLACKZILLA_DATA_DIR", str(data_dir))
    return data_dir


@pytest.fixture
def slack_fake():
    with SlackFake() as fake:
        yield fake


REPO_FILES = {
    "README.md": "# Shop\n\nA small shop server.\n\n## Deploy webhook\n\nThe deploy webhook verifies the "
                 "signature of each request with an HMAC of the body (see src/webhook.js).\n",
    "src/webhook.js": "const crypto = require('crypto');\n\n"
                      "// verifySignature checks the deploy webhook HMAC signature header.\n"
                      "function verifySignature(body, header, secret) {\n"
                      "  const digest = crypto.createHmac('sha256', secret).update(body).digest('hex');\n"
                      "  return crypto.timingSafeEqual(Buffer.from(digest), Buffer.from(header));\n"
                      "}\n\nmodule.exports = { verifySignature };\n",
    "src/server.js": "const express = require('express');\nconst { verifySignature } = require('./webhook');\n"
                     "const app = express();\n\napp.post('/deploy', (req, res) => {\n"
                     "  if (!verifySignature(req.body, req.get('x-signature'), process.env.DEPLOY_SECRET)) {\n"
                     "    return res.status(401).end();\n  }\n  res.send('ok');\n});\n\napp.listen(8080);\n",
}


@pytest.fixture
def bot_repo(tmp_path) -> Path:
    """A small repository (README + two JS files) under ``tmp_path/repo``."""
    return write_repo(tmp_path / "repo", REPO_FILES)


@pytest.fixture
async def make_bot(slack_fake, bot_repo, tmp_path):
    """Factory: ``await make_bot(**env)`` starts the real app and returns a :class:`BotHarness`."""
    import aiohttp
    from aiohttp import web
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.api.routes import BOT_KEY
    from bot.compose import create_app
    from bot.slack.app import SLACK_EVENTS_PATH
    from bot.observability.runtime import Runtime
    from bot.settings import Settings
    from commands.registry import build_registry
    from rag.engine import Engine

    cleanups = []

    async def start(*, index: bool = True, extra_specs=(), ask_options=None, state=None,
                    **env: str) -> BotHarness:
        values = {
            "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "REPO_PATH": str(bot_repo),
            "RAG_INDEX_PATH": str(tmp_path / "index.sqlite"), "SLACK_API_URL": slack_fake.api_url,
            "ADMIN_USER_IDS": ADMIN, "PORT": "0", **env,
        }
        settings = Settings.from_env(values, dotenv_path=None)
        engine = Engine.open(settings.repo_path, index_path=settings.rag_index_path)
        if index:
            engine.update()
        runtime = Runtime()
        runtime.install_log_handler()
        registry = build_registry(on_error=runtime.capture_command_error)
        for spec in extra_specs:  # real CommandSpecs through the real registry
            registry.add(spec)
        client = AsyncWebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url)
        app = create_app(settings, engine=engine, registry=registry, runtime=runtime, client=client,
                         ask_options=ask_options, state=state)
        web_app = app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)
        runner = web.AppRunner(web_app, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        session = aiohttp.ClientSession()

        composed = web_app[BOT_KEY]
        stopped = []

        async def stop() -> None:
            if stopped:
                return
            stopped.append(True)
            await session.close()
            await runner.cleanup()
            await composed.core.asker.aclose()  # the process's model client, as RunningServer.stop does
            composed.close()
            runtime.remove_log_handler()
            engine.close()

        cleanups.append(stop)
        harness = BotHarness(app, composed.core.context, slack_fake, f"http://127.0.0.1:{port}", session, settings,
                             ask_flow=composed.ask_flow)
        harness.stop = stop  # restart tests stop one app and start another on the same state
        return harness

    yield start
    for stop in reversed(cleanups):
        await stop()
