"""The model client against a local OpenAI-compatible server speaking real SSE."""
from __future__ import annotations

import asyncio
import json
import time

import pytest
from openai_server import FakeOpenAIServer, Reply, chunk, error_reply, hang_reply, text_reply, tool_reply

from rag.errors import ProviderError, UserError
from rag.providers.llm import DEFAULT_AI_MODEL, DEFAULT_AI_URL, ModelClient, ModelConfig, normalize_base_url
from rag.tokens import estimate_tokens
from rag.providers.tool_tags import ToolTagFilter, parse_textual_tool_calls, strip_tool_tags

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is up?"}]


@pytest.fixture
async def server():
    async with FakeOpenAIServer() as running:
        yield running


def client_for(server: FakeOpenAIServer, **overrides) -> ModelClient:
    config = ModelConfig(base_url=server.base_url, api_key="sk-test-key", model="fake-model",
                         timeout_s=overrides.pop("timeout_s", 5.0), max_retries=overrides.pop("max_retries", 0))
    return ModelClient(config)


# -- configuration ----------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (None, DEFAULT_AI_URL),
    ("", DEFAULT_AI_URL),
    ("https://llm.local/v1/", "https://llm.local/v1"),
    ("https://llm.local/v1/chat/completions", "https://llm.local/v1"),
    ("https://llm.local/v1/chat/completions/", "https://llm.local/v1"),
    (" http://127.0.0.1:8080// ", "http://127.0.0.1:8080"),
])
def test_base_url_normalisation(raw, expected):
    assert normalize_base_url(raw) == expected


def test_config_from_env_defaults_and_values():
    config = ModelConfig.from_env({})
    assert (config.base_url, config.model, config.timeout_s, config.enabled) == (
        DEFAULT_AI_URL, DEFAULT_AI_MODEL, 60.0, False)
    config = ModelConfig.from_env({"AI_URL": "http://h/v1/chat/completions", "AI_API_KEY": " sk-abc ",
                                   "AI_MODEL": "m1", "AI_TIMEOUT_S": "2.5"})
    assert (config.base_url, config.api_key, config.model, config.timeout_s, config.enabled) == (
        "http://h/v1", "sk-abc", "m1", 2.5, True)
    assert "sk-abc" not in repr(config) and "sk-abc" not in json.dumps(config.to_json())


@pytest.mark.parametrize("env, message", [
    ({"AI_TIMEOUT_S": "soon"}, "AI_TIMEOUT_S: expected a number of seconds"),
    ({"AI_TIMEOUT_S": "0"}, "AI_TIMEOUT_S: must be a positive number"),
    ({"AI_TIMEOUT_S": "inf"}, "AI_TIMEOUT_S: must be a positive number"),
    ({"AI_URL": "ftp://x"}, "AI_URL: expected an http(s) URL"),
])
def test_config_rejects_malformed_values(env, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ModelConfig.from_env(env)


def test_client_needs_a_key():
    with pytest.raises(UserError, match="AI_API_KEY"):
        ModelClient(ModelConfig())


# -- streaming --------------------------------------------------------------------------------

async def test_plain_answer_streams_tokens_and_reads_usage_from_the_empty_choices_chunk(server):
    server.script(text_reply("Routes live in lib/router.js.", pieces=5, usage=(42, 7)))
    tokens: list[str] = []
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, on_token=tokens.append)
    assert turn.content == "Routes live in lib/router.js." and "".join(tokens) == turn.content
    assert len(tokens) == 5 and turn.finish_reason == "stop" and turn.tool_calls == []
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens, turn.usage.total_tokens) == (42, 7, 49)
    assert not turn.usage.estimated
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "fake-model" and body["messages"] == MESSAGES and "tools" not in body
    assert server.headers[0]["authorization"] == "Bearer sk-test-key"


async def test_async_token_callback_and_keepalive_pings_and_empty_tool_call_arrays(server):
    server.script(text_reply("pong pong", pieces=3, ping=True, empty_tool_calls=True, usage=(3, 2)))
    seen: list[str] = []

    async def on_token(text: str) -> None:
        await asyncio.sleep(0)
        seen.append(text)
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, on_token=on_token)
    assert turn.content == "pong pong" == "".join(seen) and turn.tool_calls == []


async def test_tool_calls_split_over_many_chunks_are_accumulated_by_index(server):
    status_args = json.dumps({})
    logs_args = json.dumps({"limit": 3, "level": "error", "includeStack": False})
    server.script(tool_reply([("getStatus", status_args), ("getLogs", logs_args)], pieces=9, usage=(80, 20)))
    tools = [{"type": "function", "function": {"name": "getStatus", "parameters": {"type": "object"}}}]
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, tools=tools)
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_0", "getStatus", status_args), ("call_1", "getLogs", logs_args)]
    assert turn.finish_reason == "tool_calls" and turn.chunks > 12
    assert server.requests[0]["tools"] == tools


async def test_split_and_repeated_tool_names_and_missing_ids(server):
    events = [
        chunk({"tool_calls": [{"index": 0, "function": {"name": "get", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "Status", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "getMetrics", "arguments": "{"}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"name": "getMetrics", "arguments": "}"}}]}),
        chunk({"tool_calls": [{"index": 2, "function": {"arguments": "{}"}}]}),  # never named: dropped
        chunk({}, finish_reason="tool_calls"), "[DONE]",
    ]
    server.script(Reply(events=events))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_0", "getStatus", "{}"), ("b", "getMetrics", "{}")]


async def test_no_usage_is_estimated_with_the_engine_estimator(server):
    server.script(text_reply("An answer of some length.", usage=None))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert turn.usage.estimated
    assert turn.usage.completion_tokens == estimate_tokens("An answer of some length.")
    assert turn.usage.prompt_tokens == estimate_tokens(json.dumps(MESSAGES, ensure_ascii=False))
    assert turn.usage.total_tokens == turn.usage.prompt_tokens + turn.usage.completion_tokens


async def test_stream_ending_without_done_or_finish_reason_returns_what_arrived(server):
    server.script(text_reply("partial answ", finish_reason=None, done=False))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert turn.content == "partial answ" and turn.finish_reason is None


async def test_malformed_stream_json_is_a_provider_error(server):
    server.script(Reply(events=[chunk({"content": "Hi"}), "{not json"]))
    async with client_for(server) as client:
        with pytest.raises(ProviderError, match="malformed stream event"):
            await client.complete(MESSAGES)


async def test_a_stream_cut_mid_answer_is_not_called_a_connection_failure(server):
    """The provider answered and streamed part of the answer, then the connection dropped: the
    reason used to be "could not connect to the model provider", which sends the operator to
    check AI_URL and the network instead of the provider or the proxy that cut the stream."""
    server.script(Reply(events=[chunk({"role": "assistant", "content": "The answer is "})], drop=True))
    async with client_for(server) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(MESSAGES)
    reason = str(caught.value)
    assert "could not connect" not in reason
    assert "connection to the model provider was lost mid-answer" in reason and "after 1 chunk" in reason


async def test_a_refused_connection_is_still_a_connection_failure():
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    config = ModelConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", timeout_s=2, max_retries=0)
    async with ModelClient(config) as client:
        with pytest.raises(ProviderError, match="could not connect to the model provider"):
            await client.complete(MESSAGES)


@pytest.mark.parametrize("status, message, expected", [
    (500, "upstream exploded", "HTTP 500: upstream exploded"),
    (429, "rate limited", "HTTP 429: rate limited"),
    (401, "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyzABCDEF123456", "HTTP 401"),
    (400, "", "HTTP 400"),
])
async def test_http_errors_are_one_line_provider_errors(server, status, message, expected):
    server.script(error_reply(status, message))
    async with client_for(server) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(MESSAGES)
    reason = str(caught.value)
    assert expected in reason and "\n" not in reason and "abcdefghijklmnopqrstuvwxyz" not in reason


async def test_retries_follow_max_retries(server):
    server.script(error_reply(503, "busy"), text_reply("recovered", usage=(1, 1)))
    async with ModelClient(ModelConfig(base_url=server.base_url, api_key="k", max_retries=1)) as client:
        turn = await client.complete(MESSAGES)
    assert turn.content == "recovered" and len(server.requests) == 2


async def test_a_hanging_provider_is_bounded_by_the_overall_deadline(server):
    server.script(hang_reply())
    t0 = time.perf_counter()
    async with client_for(server, timeout_s=30) as client:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await client.complete(MESSAGES)
    assert time.perf_counter() - t0 < 3


async def test_a_read_timeout_is_a_provider_error(server):
    server.script(hang_reply())
    async with client_for(server, timeout_s=0.3) as client:
        with pytest.raises(ProviderError, match="stopped responding"):
            await client.complete(MESSAGES)


async def test_textual_tool_call_tags_never_reach_the_token_callback(server):
    text = "Checking. <tool_call>getStatus</tool_call> Done."
    server.script(text_reply(text, pieces=len(text)))  # one character per chunk
    seen: list[str] = []
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, on_token=seen.append)
    assert turn.content == text
    assert "".join(seen) == "Checking.  Done." and "<" not in "".join(seen)


async def test_reasoning_content_is_counted_but_not_shown(server):
    server.script(Reply(events=[chunk({"reasoning_content": "thinking hard"}), chunk({"content": "42"}),
                                chunk({}, finish_reason="stop"), "[DONE]"]))
    seen: list[str] = []
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, on_token=seen.append)
    assert turn.reasoning_chars == len("thinking hard") and seen == ["42"]


# -- textual tool calls -----------------------------------------------------------------------

def test_parse_textual_tool_calls_forms():
    text = ('a <tool_call>getStatus</tool_call> b <tool_call>getLogs {"limit": 2}</tool_call> '
            '<tool_call>{"name": "getErrors", "arguments": {"limit": 1}}</tool_call> <tool_call>{bad</tool_call>')
    calls = parse_textual_tool_calls(text)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("getStatus", {}), ("getLogs", {"limit": 2}), ("getErrors", {"limit": 1})]
    assert strip_tool_tags("x <tool_call>a</tool_call> y <tool_call>unterminated") == "x  y "


@pytest.mark.parametrize("pieces, expected", [
    (["<tool_call>x</tool_call>ok"], "ok"),
    (["a <", "tool", "_call>x</tool", "_call> ok"], "a  ok"),
    (["<tool_call>never closed ", "more"], ""),
    (["a<", "b"], "a<b"),
    (["x <tool_c"], "x <tool_c"),
    (["1 < 2 <", "/tool_call> </tool_call"], "1 < 2 </tool_call> </tool_call"),
])
def test_tool_tag_filter_holds_back_partial_tags(pieces, expected):
    stream = ToolTagFilter()
    released = [stream.feed(p) for p in pieces]
    assert "".join(released) + stream.flush() == expected
    if pieces == ["a<", "b"]:
        assert released == ["a", "<b"]  # the "<" waited for the next piece
