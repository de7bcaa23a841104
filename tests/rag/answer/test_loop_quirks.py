"""The answer loop against models that misbehave (issue 14): bare-JSON tool calls, too many
calls in one round, malformed arguments, and reasoning in the content.

The real orchestrator, Engine and tools adapter; a local SSE server is the model.
"""
from __future__ import annotations

import json

import pytest
from openai_server import FakeOpenAIServer, text_reply, tool_reply
from repo_helpers import indexed_engine
from test_answer import REPO, Bot, model_for

from rag.answer.loop import MAX_TOOL_CALLS_PER_ROUND
from rag.answer.orchestrator import answer_question


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with indexed_engine(tmp_path_factory.mktemp("loop-quirks"), REPO) as eng:
        yield eng


@pytest.fixture
async def server():
    async with FakeOpenAIServer() as running:
        yield running


async def test_a_bare_json_tool_call_is_run_not_posted(engine, server):
    server.script(text_reply('{"name": "getStatus", "arguments": {}}'), text_reply("The bot has been up 42 s."))
    bot = Bot()
    result = await answer_question("Is the bot up?", engine=engine, model=model_for(server), tools=bot.adapter())
    assert bot.names() == ["get_status"]
    assert result.answer == "The bot has been up 42 s." and '"name"' not in result.answer


async def test_json_the_user_asked_for_is_an_answer(engine, server):
    server.script(text_reply('{"name": "shop", "port": 8080}'))
    bot = Bot()
    result = await answer_question("Give the config as JSON", engine=engine, model=model_for(server),
                                   tools=bot.adapter())
    assert bot.calls == [] and result.answer == '{"name": "shop", "port": 8080}'


async def test_tool_calls_per_round_are_capped_and_every_call_is_answered(engine, server):
    calls = [("runCommand", json.dumps({"commandId": "hash", "text": f"sha256 {i}"})) for i in range(30)]
    server.script(tool_reply(calls, pieces=1), text_reply("Hashed some of them."))
    bot = Bot()
    result = await answer_question("hash 0 to 29", engine=engine, model=model_for(server), tools=bot.adapter())
    assert bot.names().count("run_command") == MAX_TOOL_CALLS_PER_ROUND
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 30  # each tool_call id gets its message, or the provider rejects the turn
    refused = [r for r in result.tool_results if r.error_code == "refused"]
    assert len(refused) == 30 - MAX_TOOL_CALLS_PER_ROUND
    assert f"at most {MAX_TOOL_CALLS_PER_ROUND} tool calls per round" in refused[0].error


async def test_malformed_arguments_come_back_with_a_preview_and_the_schema(engine, server):
    server.script(tool_reply([("getLogs", '{"limit": "three", "lvl": "error"}')]), text_reply("Could not read logs."))
    bot = Bot()
    await answer_question("Show me recent logs", engine=engine, model=model_for(server), tools=bot.adapter())
    tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][0]
    message = json.loads(tool["content"].split("\n", 1)[1])["error"]["message"]
    assert "Received:" in message and '\\"lvl\\"' in message
    assert "expected arguments (JSON schema)" in message and '"limit"' in message and '"additionalProperties"' in message


async def test_reasoning_in_the_content_never_reaches_the_answer_or_the_history(engine, server):
    server.script(text_reply("<think>Maybe mention the secret plan.</think>It verifies an HMAC (src/webhook.js:4-7).",
                             pieces=7))
    tokens: list[str] = []
    result = await answer_question("How is the webhook verified?", engine=engine, model=model_for(server),
                                   on_token=tokens.append)
    assert "secret plan" not in result.answer and "secret plan" not in "".join(tokens)
    assert result.answer.startswith("It verifies an HMAC")


@pytest.mark.parametrize("final, detail", [
    (tool_reply([("getStatus", "{}")]), "it kept calling tools after its 3 tool rounds"),
    (text_reply('{"name": "getStatus", "arguments": {}}'), "it wrote a tool call as its answer after its 3 tool rounds"),
    (text_reply("", finish_reason="length"), "it hit its output limit before writing any answer"),
    (text_reply("", finish_reason="content_filter"), "the provider's content filter withheld it"),
    (text_reply("<think>long thoughts</think>"), "it reasoned but wrote no answer"),
    (text_reply(""), "its reply was empty"),
])
async def test_no_answer_says_why(engine, server, final, detail):
    # "the model returned no usable answer" alone sent the user (and the log) guessing: a model looping on
    # tools past the limit, an output limit, a content filter and an empty reply are each a different fix.
    server.script(*[tool_reply([("getStatus", "{}")]) for _ in range(3)], final)
    result = await answer_question("Is the bot up?", engine=engine, model=model_for(server), tools=Bot().adapter())
    assert result.mode == "fallback" and len(server.requests) == 4
    assert result.error == f"The model returned no usable answer ({detail})"
    assert result.answer.startswith(f"No model answer: the model returned no usable answer ({detail}).")
