"""bot.compose: every object is built once, in order, and handed in; the Asker is the one answer entry point."""
from __future__ import annotations

import pytest

from bot.compose import compose, compose_core
from bot.settings import Settings
from commands import CommandResult, CommandSpec, build_registry
from rag.engine import Engine
from rag.errors import EmptyQuestionError
from rag.ingest.reindexer import IndexBuildingError
from repo_helpers import indexed_engine, write_repo

FILES = {"README.md": "# Demo\n\nThe deploy webhook verifies an HMAC signature.\n",
         "src/webhook.js": "export function verify(body, header) {\n  return header === sign(body);\n}\n"}


@pytest.fixture
def settings(tmp_path):
    (tmp_path / "repo").mkdir()
    return Settings.from_env({"REPO_PATH": str(tmp_path / "repo"), "SLACK_BOT_TOKEN": "xoxb-test",
                              "SLACK_SIGNING_SECRET": "s", "REINDEX_INTERVAL_S": "60"},
                             dotenv_path=None, require_slack=False)


def test_the_core_is_built_in_order_and_shared(tmp_path, settings):
    with indexed_engine(tmp_path, FILES) as engine:
        core = compose_core(settings, engine=engine)
        assert core.context.reindexer is core.reindexer and core.context.registry is core.registry
        assert core.context.runtime is core.runtime and core.context.model is core.model
        assert core.asker.tools is core.tools and core.asker.engine is engine
        assert core.scheduler is None and core.context.scheduler is None  # no schedule unless asked
        scheduled = compose_core(settings, engine=engine, schedule=True)
        assert scheduled.scheduler is not None and scheduled.context.scheduler is scheduled.scheduler
        assert not scheduled.scheduler.running  # the server starts it


def test_the_bot_hands_the_same_objects_to_slack(tmp_path, settings):
    from bot.api.routes import ASKER_KEY, BOT_KEY, CONTEXT_KEY
    from bot.slack.app import SLACK_EVENTS_PATH

    with indexed_engine(tmp_path, FILES) as engine:
        bot = compose(settings, engine=engine)
        web_app = bot.app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)
        assert web_app[BOT_KEY] is bot and web_app[CONTEXT_KEY] is bot.core.context
        assert web_app[ASKER_KEY] is bot.core.asker and bot.ask_flow.asker is bot.core.asker
        assert bot.ask_flow.ctx is bot.core.context


async def test_the_asker_checks_once_answers_and_counts(tmp_path, settings):
    with indexed_engine(tmp_path, FILES) as engine:
        core = compose_core(settings, engine=engine)
        with pytest.raises(EmptyQuestionError):
            await core.asker.answer("   ")
        assert core.runtime.metrics.snapshot()["asks"] == {"total": 1, "failed": 1, "declined": 0}
        result = await core.asker.answer("how does the webhook verify the signature?", with_ai=False)
        assert result.mode == "local" and any(s.path == "src/webhook.js" for s in result.sources)
        assert core.runtime.metrics.snapshot()["asks"] == {"total": 2, "failed": 1, "declined": 0}
        long = await core.asker.answer("webhook " * 1000, with_ai=False)
        assert long.notes[0] == "The question was cut to its first 4000 characters."


async def test_the_asker_refuses_until_the_index_is_built(tmp_path, settings):
    engine = Engine.open(write_repo(tmp_path / "repo", FILES), index_path=tmp_path / "fresh.sqlite")
    try:
        core = compose_core(settings, engine=engine)
        with pytest.raises(IndexBuildingError, match="not built yet"):
            await core.asker.answer("how does the webhook verify the signature?")
    finally:
        engine.close()


async def test_command_parsers_reach_the_command_inference(tmp_path, settings):
    seen: list[str] = []
    registry = build_registry()
    registry.add(CommandSpec(id="echo", description="Echo.", usage="<text>", category="utility", ai_safe=True,
                             handler=lambda r: seen.append(r.text) or CommandResult(r.text),
                             from_question=lambda q: "parsed" if "please" in q else None))
    with indexed_engine(tmp_path, FILES) as engine:
        core = compose_core(settings, engine=engine, registry=registry)
        result = await core.asker.answer("please run /sz-echo raw", with_ai=False)
    assert seen == ["parsed"] and result.command["id"] == "echo"
