"""Provider quirks seen in the wild, each against the local SSE server (issue 14).

llama-server/TGI object-valued arguments, index-less tool-call deltas, ``event: ping`` and
``retry:`` blocks, keep-alives after the answer is complete, a long ``Retry-After``, servers
that refuse ``stream_options``, in-band error events and ``<think>`` reasoning.
"""
from __future__ import annotations

import json
import time

import pytest
from openai_server import DONE, FakeOpenAIServer, Reply, chunk, error_reply, text_reply, usage_chunk

from rag.errors import ProviderError
from rag.providers.llm import ModelClient, ModelConfig, retry_after_seconds

MESSAGES = [{"role": "user", "content": "What is up?"}]


@pytest.fixture
async def server():
    async with FakeOpenAIServer() as running:
        yield running


def client_for(server: FakeOpenAIServer, *, max_retries: int = 0, timeout_s: float = 5.0) -> ModelClient:
    return ModelClient(ModelConfig(base_url=server.base_url, api_key="sk-test-key", model="fake-model",
                                   timeout_s=timeout_s, max_retries=max_retries))


def _call_delta(index, *, id=None, name=None, arguments=None) -> dict:
    call: dict = {"type": "function", "function": {}}
    if index is not None:
        call["index"] = index
    if id:
        call["id"] = id
    if name is not None:
        call["function"]["name"] = name
    if arguments is not None:
        call["function"]["arguments"] = arguments
    return chunk({"tool_calls": [call]})


async def test_object_valued_arguments_are_taken_as_json(server):
    # llama-server and TGI send `"arguments": {...}`, not a string.
    server.script(Reply(events=[
        chunk({"role": "assistant"}),
        _call_delta(0, id="call_a", name="getLogs", arguments={"limit": 3, "level": "error"}),
        chunk({}, finish_reason="tool_calls"), DONE]))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("getLogs", {"limit": 3, "level": "error"})]


async def test_tool_call_deltas_without_index_are_not_merged(server):
    server.script(Reply(events=[
        chunk({"role": "assistant"}),
        _call_delta(None, id="call_1", name="getStatus", arguments=""),
        _call_delta(None, arguments="{}"),
        _call_delta(None, id="call_2", name="getMetrics", arguments=""),
        _call_delta(None, arguments="{}"),
        chunk({}, finish_reason="tool_calls"), DONE]))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_1", "getStatus", "{}"), ("call_2", "getMetrics", "{}")]


async def test_index_less_deltas_without_ids_split_on_a_new_name(server):
    server.script(Reply(events=[
        chunk({"role": "assistant"}),
        _call_delta(None, name="get", arguments=""), _call_delta(None, name="Logs", arguments='{"limit":'),
        _call_delta(None, arguments=" 2}"), _call_delta(None, name="getErrors", arguments="{}"),
        chunk({}, finish_reason="tool_calls"), DONE]))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("getLogs", '{"limit": 2}'), ("getErrors", "{}")]


async def test_ping_events_and_retry_fields_are_keep_alives(server):
    server.script(Reply(events=[
        "raw:event: ping\ndata:", chunk({"role": "assistant", "content": "Hel"}), "raw:retry: 3000",
        "raw:event: ping\ndata: {}", chunk({"content": "lo"}), "raw:event: heartbeat",
        chunk({}, finish_reason="stop"), usage_chunk(3, 2), DONE]))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert (turn.content, turn.finish_reason, turn.usage.total_tokens) == ("Hello", "stop", 5)


async def test_keep_alives_after_the_finish_do_not_hold_a_complete_answer(server):
    # finish_reason came, then only `: ping` comments for 30 s: the answer is complete.
    reply = text_reply("All done.", usage=None, done=False)
    reply.tail_s = 30.0
    server.script(reply)
    started = time.monotonic()
    async with client_for(server, timeout_s=60.0) as client:
        turn = await client.complete(MESSAGES)
    assert (turn.content, turn.finish_reason) == ("All done.", "stop")
    assert time.monotonic() - started < 10


async def test_a_long_retry_after_is_not_slept_through_and_says_when_to_retry(server):
    server.script(Reply(status=429, error_body={"error": {"message": "Rate limit reached"}},
                        headers={"Retry-After": "120"}), text_reply("late"))
    started = time.monotonic()
    async with client_for(server, max_retries=2, timeout_s=60.0) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(MESSAGES)
    assert time.monotonic() - started < 5
    assert len(server.requests) == 1
    reason = str(caught.value)
    assert "HTTP 429" in reason and "rate-limiting" in reason and "try again in 2 minutes" in reason


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 300))
    assert 200 < retry_after_seconds({"retry-after": future}) <= 300


async def test_a_server_that_refuses_stream_options_is_asked_again_without_them(server):
    server.script(error_reply(400, "Unrecognized request argument supplied: stream_options"),
                  text_reply("Fine.", usage=None), text_reply("Again.", usage=None))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
        second = await client.complete(MESSAGES)
    assert (turn.content, second.content) == ("Fine.", "Again.")
    assert "stream_options" in server.requests[0]
    assert "stream_options" not in server.requests[1] and "stream_options" not in server.requests[2]
    assert turn.usage.estimated


async def test_other_400s_are_not_retried(server):
    server.script(error_reply(400, "messages: too long"), text_reply("never"))
    async with client_for(server) as client:
        with pytest.raises(ProviderError, match="HTTP 400: messages: too long"):
            await client.complete(MESSAGES)
    assert len(server.requests) == 1


async def test_an_in_band_error_event_keeps_the_provider_message(server):
    server.script(Reply(events=[chunk({"role": "assistant", "content": "Partial"}),
                                {"error": {"message": "context length exceeded (key sk-proj-abcdefghijklmnopqrstuvwxyzABCDEF123456)"}}]))
    async with client_for(server) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(MESSAGES)
    reason = str(caught.value)
    assert "context length exceeded" in reason and "abcdefghijklmnop" not in reason


async def test_think_blocks_are_neither_streamed_nor_kept(server):
    server.script(text_reply("<think>The user wants X; the key is sk-nope.</think>\n\nThe answer is 42.", pieces=9,
                             usage=(4, 9)))
    streamed: list[str] = []
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, on_token=streamed.append)
    assert "".join(streamed).strip() == "The answer is 42."
    assert turn.content == "The answer is 42."
    assert turn.reasoning_chars > 20


async def test_text_that_is_not_utf8_becomes_replacement_characters(server):
    # A stream is UTF-8, invalid bytes decoded as U+FFFD (the SSE standard); a JSON escape of a lone
    # UTF-16 surrogate is no character either. Neither may fail the answer or reach a terminal or Slack.
    latin1 = (b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
              b'"choices":[{"index":0,"delta":{"content":"caf\xe9 "},"finish_reason":null}]}')
    server.script(Reply(events=[
        chunk({"role": "assistant"}), latin1, chunk({"content": "lone \ud800 half"}),
        _call_delta(0, id="call_a", name="searchCode", arguments='{"query": "x\udcff"}'),
        chunk({}, finish_reason="stop"), DONE]))
    tokens: list[str] = []
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES, on_token=tokens.append)
    assert turn.content == "caf\ufffd lone \ufffd half"
    assert "".join(tokens) == turn.content
    assert json.loads(turn.tool_calls[0].arguments) == {"query": "x\ufffd"}


@pytest.mark.parametrize("event, problem", [
    ("null", "not an object"),
    ('"hello"', "not an object"),
    ({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
      "choices": [{"index": 0, "delta": 5}]}, "delta"),
    (chunk({"content": 5}), "content"),
    (chunk({"content": [{"type": "text", "text": "hi"}]}), "content"),
    (chunk({"tool_calls": {"index": 0}}), "tool_calls"),
    (chunk({"tool_calls": [{"index": 0, "function": "getStatus"}]}), "tool call"),
    (chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": 5, "arguments": "{}"}}]}), "tool call"),
])
async def test_a_chunk_of_the_wrong_shape_is_a_provider_error_not_a_crash(server, event, problem):
    # The SDK builds chunks without validating them: a JSON `null`, or a number where text belongs, used to
    # escape as AttributeError/TypeError (a traceback from `slackzilla ask`, no answer, no log line).
    server.script(Reply(events=[chunk({"role": "assistant"}), chunk({"content": "Half "}), event, DONE]))
    async with client_for(server) as client:
        with pytest.raises(ProviderError, match="malformed stream event") as caught:
            await client.complete(MESSAGES)
    assert problem in str(caught.value)


@pytest.mark.parametrize("usage", [{"prompt_tokens": "lots", "completion_tokens": None},
                                   {"prompt_tokens": 1e400, "completion_tokens": 3},
                                   {"prompt_tokens": -4, "completion_tokens": 3}])
async def test_usage_that_is_not_a_count_is_estimated_and_the_answer_kept(server, usage):
    server.script(Reply(events=[chunk({"role": "assistant"}), chunk({"content": "Full answer."}),
                                chunk({}, finish_reason="stop"), chunk(choices=False, usage=usage), DONE]))
    async with client_for(server) as client:
        turn = await client.complete(MESSAGES)
    assert turn.content == "Full answer."
    assert turn.usage.estimated and turn.usage.total_tokens > 0


@pytest.mark.parametrize("reply", [
    error_reply(401, "Incorrect API key provided: local-dev-key-42. Find your key at https://example.com"),
    Reply(events=[chunk({"content": "It "}), {"error": {"message": "key local-dev-key-42 is over quota"}}]),
])
async def test_the_configured_key_echoed_by_the_provider_is_not_in_the_reason(server, reply):
    # Some gateways quote the whole key in a 401; the reason is shown to the asker (in a Slack channel) and logged.
    server.script(reply)
    client = ModelClient(ModelConfig(base_url=server.base_url, api_key="local-dev-key-42", model="fake-model",
                                     timeout_s=5.0, max_retries=0))
    async with client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(MESSAGES)
    assert "local-dev-key-42" not in str(caught.value) and "[REDACTED]" in str(caught.value)
