"""answer_question end to end: the real Engine on a small repository, the real tools
adapter, and a local OpenAI-compatible server speaking real SSE (only the provider is fake)."""
from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from openai_server import FakeOpenAIServer, Reply, chunk, error_reply, hang_reply, text_reply, tool_reply
from repo_helpers import indexed_engine

from prompts import load_prompt
from rag.answer.orchestrator import AnswerResult, answer_question
from bot.cli.terminal import format_answer_for_terminal
from rag.answer.prompting import NOT_DOCUMENTED
from rag.engine import Engine
from rag.errors import EmptyQuestionError, IndexUnavailableError, UserError
from commands.hash import from_question as hash_from_question
from rag.answer.intent import asks_to_run_command, infer_command
from rag.providers.llm import ModelConfig
from rag.tools.adapter import ToolAdapter, ToolHandlers

REPO = {
    "README.md": "# Shop\n\nA small shop server.\n\n## Deploy webhook\n\nThe deploy webhook verifies the "
                 "signature of each request with an HMAC of the body, see src/webhook.js.\n",
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
    "docs/config.md": "# Configuration\n\nSet `PORT` and `DEPLOY_SECRET` in the environment before starting "
                      "the server.\n",
}
QUESTION = "How does the deploy webhook verify signatures?"
COMMANDS = [
    {"id": "ask", "name": "/sz-ask", "description": "Ask", "category": "ai", "usage": "/sz-ask <q>",
     "admin_only": False, "ai_safe": False},
    {"id": "hash", "name": "/sz-hash", "description": "Hash text", "category": "crypto",
     "usage": "/sz-hash <algorithm> <text>", "admin_only": False, "ai_safe": True},
]
PLANTED = "xoxb-112233445566-112233445566-AbCdEfGhIjKlMnOpQrStUvWx"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with indexed_engine(tmp_path_factory.mktemp("answer"), REPO) as eng:
        yield eng


@pytest.fixture
async def server():
    async with FakeOpenAIServer() as running:
        yield running


def model_for(server: FakeOpenAIServer, *, timeout_s: float = 10.0) -> ModelConfig:
    return ModelConfig(base_url=server.base_url, api_key="sk-test-key", model="fake-model", timeout_s=timeout_s,
                       max_retries=0)


class Bot:
    """Handlers standing in for bot/'s runtime state; records calls in order."""

    def __init__(self, **overrides) -> None:
        self.calls: list[tuple[str, dict]] = []
        values = {
            "get_status": {"version": "0.1.0", "uptime_s": 42, "index": {"generation": 3}},
            "get_commands": COMMANDS,
            "get_metrics": {"asks": 2},
            "get_logs": [{"level": "error", "message": "deploy failed"}],
            "run_command": lambda **kw: {"text": f"{kw['command_id']}:{kw['text']}"},
            **overrides,
        }

        def handler(name, value):
            async def call(**kwargs):
                self.calls.append((name, kwargs))
                result = value(**kwargs) if callable(value) else value
                return await result if asyncio.iscoroutine(result) else result
            return call
        self.handlers = ToolHandlers(**{name: handler(name, value) for name, value in values.items()})

    def adapter(self, **kwargs) -> ToolAdapter:
        return ToolAdapter(self.handlers, **kwargs)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def stages(result: AnswerResult) -> list[tuple[str, str]]:
    return [(a.stage, a.status) for a in result.activities]


# -- plain answer -----------------------------------------------------------------------------

async def test_plain_answer(engine, server, caplog):
    answer = "It computes an HMAC of the body and compares it in constant time (src/webhook.js:4-7)."
    server.script(text_reply(answer, pieces=6, usage=(300, 25)))
    tokens: list[str] = []
    activities = []

    async def on_activity(activity):
        activities.append(activity)
    caplog.set_level(logging.INFO, logger="slackzilla.ask")
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=Bot().adapter(),
                                   on_token=tokens.append, on_activity=on_activity)
    assert result.mode == "ai" and result.answer == answer and "".join(tokens) == answer
    assert result.error is None and result.response_rounds == 1
    assert result.usage.to_json() == {"input_tokens": 300, "output_tokens": 25, "total_tokens": 325,
                                      "estimated": False}
    assert {s.path for s in result.sources} >= {"src/webhook.js", "README.md"}
    assert stages(result) == [("retrieval", "started"), ("retrieval", "completed"), ("context", "completed"),
                              ("ai", "started"), ("ai", "completed")]
    assert activities == result.activities and len({a.id for a in activities}) == len(activities)
    assert all(a.timestamp_ms > 1_600_000_000_000 for a in activities)

    body = server.requests[0]
    assert body["messages"][0] == {"role": "system", "content": load_prompt("SYSTEM_PROMPT")}
    user = body["messages"][1]["content"]
    assert user.startswith(f"Question: {QUESTION}\n") and "<repository_context>" in user
    assert "src/webhook.js:" in user and "verifySignature" in user
    assert [t["function"]["name"] for t in body["tools"]][:2] == ["getStatus", "getCommands"]

    records = [json.loads(r.getMessage()) for r in caplog.records if r.name == "slackzilla.ask"]
    assert len(records) == 1
    record = records[0]
    assert record["question_chars"] == len(QUESTION) and record["top_k"] == 8
    assert record["retrieved"][0]["path"] in {"src/webhook.js", "README.md"} and "score" in record["retrieved"][0]
    assert (record["prompt_tokens"], record["response_tokens"]) == (300, 25)
    assert record["retrieval_ms"] >= 0 and record["total_ms"] >= record["ai_ms"] and record["failure_stage"] is None
    assert "deploy webhook" not in caplog.text.lower()

    data = result.to_json()
    json.dumps(data)
    assert data["sources"][0]["snippet"] and data["usage"]["total_tokens"] == 325
    printed = format_answer_for_terminal(result, streamed=True)
    assert "Sources:" in printed and "src/webhook.js:" in printed and answer not in printed
    assert "[fake-model · 1 round(s) · 325 tokens" in printed
    assert format_answer_for_terminal(result).startswith(answer + "\n\nSources:\n  ")


# -- citations --------------------------------------------------------------------------------

ABSENT_QUESTION = "Does the deploy webhook retry a failed request with exponential backoff?"


async def test_no_sources_names_the_words_no_indexed_file_mentions(engine):
    result = await answer_question(ABSENT_QUESTION, engine=engine, with_ai=False)
    assert result.sources == [] and result.absent_terms == ["retry", "failed", "exponential", "backoff"]
    assert result.answer.splitlines() == [NOT_DOCUMENTED,
                                          "No indexed file mentions `retry`, `failed`, `exponential` or `backoff`."]
    assert result.to_json()["absent_terms"] == result.absent_terms
    answered = await answer_question(QUESTION, engine=engine, with_ai=False)
    assert answered.sources and answered.absent_terms == [] and "No indexed file" not in answered.answer


async def test_the_model_is_told_which_words_no_indexed_file_mentions(engine, server):
    server.script(text_reply(NOT_DOCUMENTED))
    result = await answer_question(ABSENT_QUESTION, engine=engine, model=model_for(server))
    assert result.mode == "ai" and result.sources == []
    user = server.requests[0]["messages"][-1]["content"]
    assert user.endswith("</repository_context>\n\nThe repository search found nothing for this question; no indexed "
                         "file mentions `retry`, `failed`, `exponential` or `backoff`.")


async def test_a_pasted_credential_is_never_named_as_an_absent_word(engine):
    result = await answer_question(f"Why is {PLANTED} refused with a backoff?", engine=engine, with_ai=False)
    assert result.sources == [] and result.absent_terms == ["refused", "backoff"]
    named = result.answer.split("No indexed file mentions", 1)[1]
    assert "xoxb" not in named and "AbCd" not in named and "112233" not in named


async def test_the_sources_shown_are_the_ones_the_answer_cites(engine, server, caplog):
    answer = "It compares an HMAC of the body in constant time (src/webhook.js:4-7)."
    server.script(text_reply(answer))
    caplog.set_level(logging.INFO, logger="slackzilla.ask")
    result = await answer_question(QUESTION, engine=engine, model=model_for(server))
    assert len({s.path for s in result.sources}) > 1  # retrieval found more than the answer used
    assert [s.path for s in result.shown_sources] == ["src/webhook.js"]
    assert result.grounding.to_json() == {"citations": 1, "supported": 1, "unsupported": [], "declined": False}
    assert result.notes == []
    data = result.to_json()
    assert [s["path"] for s in data["shown_sources"]] == ["src/webhook.js"] and len(data["sources"]) > 1
    printed = format_answer_for_terminal(result)
    assert "Sources:\n  src/webhook.js:" in printed and "README.md" not in printed.split("Sources:")[1]
    record = json.loads([r for r in caplog.records if r.name == "slackzilla.ask"][-1].getMessage())
    assert record["citations"] == {"citations": 1, "supported": 1, "unsupported": [], "declined": False}


async def test_a_declining_answer_shows_no_sources(engine, server):
    server.script(text_reply(NOT_DOCUMENTED))
    result = await answer_question("Where are log files gzipped after rotation?", engine=engine,
                                   model=model_for(server))
    assert result.mode == "ai" and result.answer == NOT_DOCUMENTED
    assert result.grounding.declined and result.shown_sources == []
    assert result.to_json()["shown_sources"] == []
    assert "Sources:" not in format_answer_for_terminal(result)


async def test_a_citation_of_a_location_never_shown_is_noted_and_not_linked(engine, server):
    answer = "It verifies signatures in src/webhook.js:4-7 and retries in src/retry.js:10-30."
    server.script(text_reply(answer))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server))
    assert [c.label() for c in result.grounding.unsupported] == ["src/retry.js:10-30"]
    assert result.notes == ["Not among the excerpts the model was given, so not linked: src/retry.js:10-30."]
    assert [s.path for s in result.shown_sources] == ["src/webhook.js"]
    assert "Note: Not among the excerpts" in format_answer_for_terminal(result)


async def test_citations_repeated_from_earlier_turns_count_as_grounded(engine, server):
    history = [{"role": "user", "content": "Where is the retry policy?"},
               {"role": "assistant", "content": "In src/retry.js:10-30 (excerpt shown then)."}]
    server.script(text_reply("As said before, src/retry.js:10-30 retries; signatures: src/webhook.js:4-7."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), history=history)
    assert result.grounding.unsupported == [] and result.notes == []
    assert [(s.path, s.start, s.end) for s in result.shown_sources][0] == ("src/retry.js", 10, 30)
    assert [s.path for s in result.shown_sources][1:] == ["src/webhook.js"]


async def test_locations_the_user_typed_are_not_evidence(engine, server):
    history = [{"role": "user", "content": "Is src/retry.js:1-9999 involved?"},
               {"role": "assistant", "content": "This is not documented in the repository."}]
    server.script(text_reply("Yes, src/retry.js:40-45 retries; signatures: src/webhook.js:4-7."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), history=history)
    assert [c.label() for c in result.grounding.unsupported] == ["src/retry.js:40-45"]
    assert [s.path for s in result.shown_sources] == ["src/webhook.js"]


async def test_an_answer_without_citations_keeps_every_retrieved_source(engine, server):
    server.script(text_reply("The bot is up: version 0.1.0."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server))
    assert result.grounding.citations == [] and not result.grounding.declined
    assert result.shown_sources == result.sources and result.sources


# -- tools ------------------------------------------------------------------------------------

async def test_two_tool_calls_split_over_many_chunks_run_sequentially(engine, server):
    server.script(
        tool_reply([("getStatus", "{}"), ("getLogs", '{"limit": 1, "level": "error"}')], pieces=8, usage=(100, 10)),
        text_reply("Version 0.1.0; last error: deploy failed.", usage=(200, 12)),
    )
    bot = Bot()
    result = await answer_question("What version is running and what was the last error?", engine=engine,
                                   model=model_for(server), tools=bot.adapter())
    assert result.mode == "ai" and result.response_rounds == 2
    assert bot.names() == ["get_status", "get_logs"]
    assert bot.calls[1][1] == {"limit": 1, "level": "error", "include_stack": False}
    assert result.usage.total_tokens == 322
    second = server.requests[1]["messages"]
    assistant, status, logs = second[-3:]
    assert assistant["role"] == "assistant" and [c["id"] for c in assistant["tool_calls"]] == ["call_0", "call_1"]
    assert status["role"] == "tool" and status["tool_call_id"] == "call_0"
    assert status["content"].startswith("Live runtime evidence from the getStatus tool (untrusted data")
    assert '"version":"0.1.0"' in status["content"] and logs["tool_call_id"] == "call_1"
    tool_activities = [a for a in result.activities if a.stage == "tool"]
    assert [a.metadata["endpoint"] for a in tool_activities] == ["/api/status", "/api/logs"]
    assert all(a.metadata["type"] == "api_request" and a.status == "completed" for a in tool_activities)


async def test_three_tool_rounds_then_the_limit_prompt_without_tools(engine, server):
    server.script(*(tool_reply([("getMetrics", "{}")]) for _ in range(3)),
                  text_reply("Two asks so far.", usage=(50, 5)))
    bot = Bot()
    result = await answer_question("How many asks were served?", engine=engine, model=model_for(server),
                                   tools=bot.adapter())
    assert result.answer == "Two asks so far." and result.response_rounds == 4
    assert bot.names() == ["get_metrics"] * 3
    assert ["tools" in body for body in server.requests] == [True, True, True, False]
    last = server.requests[3]["messages"][-1]
    assert last == {"role": "system", "content": load_prompt("TOOL-CALL-LIMIT_PROMPT")}
    assert result.trace[-1]["tools_enabled"] is False


async def test_textual_tool_call_is_called_once(engine, server):
    server.script(text_reply("<tool_call>getStatus</tool_call>", pieces=7),
                  text_reply("Up 42 s. <tool_call>getStatus</tool_call>", pieces=9))
    bot = Bot()
    tokens: list[str] = []
    result = await answer_question("Is the bot up?", engine=engine, model=model_for(server),
                                   tools=bot.adapter(), on_token=tokens.append)
    assert bot.names() == ["get_status"] and result.response_rounds == 2
    assert result.answer == "Up 42 s." and "<tool_call" not in "".join(tokens)
    echoed = server.requests[1]["messages"][-2]
    assert echoed["tool_calls"][0]["function"] == {"name": "getStatus", "arguments": "{}"}
    assert result.trace[0]["textual_tool_call"] is True


async def test_invalid_json_arguments_reach_the_tool_as_an_error_and_the_loop_goes_on(engine, server):
    server.script(tool_reply([("getLogs", '{"limit": 3,')]), text_reply("No logs were readable."))
    bot = Bot()
    result = await answer_question("Show me recent logs", engine=engine, model=model_for(server),
                                   tools=bot.adapter())
    assert result.mode == "ai" and bot.calls == []
    assistant, tool = server.requests[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"
    error = json.loads(tool["content"].split("\n", 1)[1])["error"]
    assert error["code"] == "invalid_arguments" and "not valid JSON" in error["message"]


async def test_run_command_on_ask_and_unknown_ids_is_refused(engine, server):
    server.script(tool_reply([("runCommand", '{"commandId": "ask", "text": "loop"}'),
                              ("runCommand", '{"commandId": "rm-rf"}')]), text_reply("I cannot run those."))
    bot = Bot()
    result = await answer_question("run ask for me", engine=engine, model=model_for(server), tools=bot.adapter())
    assert "run_command" not in bot.names()
    codes = [r.error_code for r in result.tool_results]
    assert codes == ["refused", "unknown_command"]
    contents = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "never runs 'ask'" in contents[0] and "no command with id 'rm-rf'" in contents[1]
    assert [a.metadata["type"] for a in result.activities if a.stage == "tool"] == ["command_tool"] * 2


async def test_tool_deadline_inside_an_answer(engine, server):
    async def stuck(**_):
        await asyncio.sleep(3600)
    server.script(tool_reply([("getStatus", "{}")]), text_reply("Status is unavailable right now."))
    bot = Bot(get_status=stuck)
    t0 = time.perf_counter()
    result = await answer_question("Is the bot healthy?", engine=engine, model=model_for(server),
                                   tools=bot.adapter(deadline_s=0.3))
    assert time.perf_counter() - t0 < 3 and result.mode == "ai"
    assert result.tool_results[0].error_code == "timeout"
    assert '"code":"timeout"' in server.requests[1]["messages"][-1]["content"].replace(" ", "")


async def test_200_kib_tool_output_is_capped_in_the_tool_message(engine, server):
    routes = [{"method": "GET", "path": f"/r/{i}/" + "x" * 180, "file": "src/server.js"} for i in range(1100)]
    server.script(tool_reply([("getRoutes", "{}")]), text_reply("Many routes."))
    bot = Bot(get_routes=routes)
    result = await answer_question("List the routes", engine=engine, model=model_for(server), tools=bot.adapter())
    content = server.requests[1]["messages"][-1]["content"]
    payload = content.split("\n", 1)[1]
    assert len(payload.encode()) <= 32 * 1024 and json.loads(payload)["result"]["truncated"] is True
    assert result.tool_results[0].truncated


async def test_secrets_in_tool_output_never_reach_the_model(engine, server):
    status = {"version": "0.1.0", "slackToken": PLANTED, "note": f"started with SLACK_BOT_TOKEN={PLANTED}",
              "headers": {"Authorization": "Bearer sk-live-abcdefghijklmnop"}, "env": {"AI_API_KEY": "sk-x"}}
    server.script(tool_reply([("getStatus", "{}")], usage=(120, 8)), text_reply("Version 0.1.0.", usage=(180, 4)))
    result = await answer_question("What version is running?", engine=engine, model=model_for(server),
                                   tools=Bot(get_status=status).adapter())
    sent = json.dumps(server.requests)
    assert PLANTED not in sent and "sk-live-abcdefghijklmnop" not in sent and "sk-x" not in sent
    assert sent.count("[REDACTED]") >= 4
    assert PLANTED not in json.dumps(result.to_json())


async def test_a_secret_the_model_writes_never_reaches_the_asker_not_even_streamed(engine, server):
    """The model sees only redacted text, but it can still write a credential (recalled, or made up):
    neither the streamed text nor the final answer carries it, however the stream splits it."""
    key = "AKIA" + "Q3EGRTW5JD7WXJ5K"
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9Xr2m\nq8vZ0yQk1pL\n-----END RSA PRIVATE KEY-----"
    answer = f"Set the key to {key} in the config (src/webhook.js:4-7), and keep this one:\n{pem}\nDone."
    server.script(text_reply(answer, pieces=40))
    tokens: list[str] = []
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), on_token=tokens.append)
    streamed = "".join(tokens)
    for shown in (streamed, result.answer, json.dumps(result.to_json())):
        assert key not in shown and "Q3EGRTW5" not in shown and "MIIEowIBAAKCAQEA7bq9Xr2m" not in shown
    assert "[REDACTED]" in result.answer and streamed.startswith("Set the key to [REDACTED] in the config")
    assert streamed.endswith("Done.") and any("redacted" in note for note in result.notes)


# -- provider quirks and failures -------------------------------------------------------------

async def test_keepalive_pings_empty_tool_calls_and_missing_usage(engine, server):
    server.script(text_reply("Short answer.", ping=True, empty_tool_calls=True, usage=None))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server))
    assert result.mode == "ai" and result.answer == "Short answer."
    assert result.usage.estimated and result.usage.total_tokens > 0


async def test_stream_without_done_or_finish_reason_keeps_the_answer_with_a_note(engine, server):
    server.script(text_reply("It uses an HMAC", finish_reason=None, done=False))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server))
    assert result.mode == "ai" and result.answer == "It uses an HMAC"
    assert any("ended early" in note for note in result.notes)


@pytest.mark.parametrize("reply, reason", [
    (error_reply(500, "upstream exploded"), "HTTP 500: upstream exploded"),
    (error_reply(401, "bad key"), "HTTP 401: bad key"),
    (Reply(events=[chunk({"role": "assistant"}), "{oops"]), "malformed stream event"),
    (text_reply("", usage=(10, 0)), "no usable answer"),
])
async def test_provider_failures_still_give_sources_and_a_one_line_reason(engine, server, reply, reason, caplog):
    server.script(reply)
    caplog.set_level(logging.INFO, logger="slackzilla.ask")
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=Bot().adapter())
    # the operator's log line said failure_stage "ai" and never why (no other line carried the reason)
    record = json.loads([r for r in caplog.records if r.name == "slackzilla.ask"][-1].getMessage())
    assert record["failure_stage"] == "ai" and reason in record["error"]
    assert result.mode == "fallback" and result.failure_stage == "ai"
    assert reason in result.error and "\n" not in result.error
    assert result.sources and "src/webhook.js:" in result.answer and result.answer.startswith("No model answer:")
    assert stages(result)[-1] == ("ai", "failed")
    printed = format_answer_for_terminal(result, streamed=True)
    assert printed.startswith("No model answer:") and f"Note: {result.error}" in printed


@pytest.mark.parametrize("reply, reason", [
    (Reply(events=[chunk({"role": "assistant", "content": "The webhook compares an HMAC "}),
                   chunk({"content": "of the body with the x-signature header "})], drop=True), "lost mid-answer"),
    (Reply(events=[chunk({"role": "assistant", "content": "The webhook compares an HMAC "}),
                   chunk({"content": "of the body with the x-signature header "})], tail_s=5.0),
     "did not finish within 0.5 s"),
    (Reply(events=[chunk({"role": "assistant", "content": "The webhook compares an HMAC "}),
                   chunk({"content": "of the body with the x-signature header "}), "{oops"]), "malformed stream event"),
])
async def test_an_answer_cut_off_mid_stream_keeps_what_the_model_wrote(engine, server, reply, reason):
    """The connection dropped (or the deadline passed) while the answer streamed: the asker had watched half an
    answer appear, then got only "No model answer" and the sources; what the model wrote was thrown away. It is
    kept, said to be cut off and why, and followed by the sources (and the terminal does not print it twice)."""
    server.script(reply)
    tokens: list[str] = []
    result = await answer_question(QUESTION, engine=engine, model=model_for(server, timeout_s=0.5),
                                   on_token=tokens.append)
    written = "The webhook compares an HMAC of the body with the x-signature header"
    assert "".join(tokens).startswith(written)
    assert result.mode == "fallback" and result.failure_stage == "ai" and reason in result.error
    assert result.answer.startswith(written) and result.cut_off == written
    assert f"The model's answer was cut off: " in result.answer and "src/webhook.js:" in result.answer
    printed = format_answer_for_terminal(result, streamed=True)
    assert written not in printed and "The model's answer was cut off" in printed and "src/webhook.js:" in printed
    assert written in format_answer_for_terminal(result)
    assert result.to_json()["cut_off"] == written


async def test_a_cut_off_answer_is_redacted_like_a_whole_one(engine, server):
    server.script(Reply(events=[chunk({"role": "assistant", "content": f"Use the token {PLANTED} "}),
                                chunk({"content": "to call the API "})], drop=True))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server))
    assert PLANTED not in result.answer and PLANTED not in (result.cut_off or "")
    assert result.cut_off.startswith("Use the token [REDACTED]")


async def test_a_hanging_provider_hits_the_overall_deadline(engine, server, caplog):
    server.script(hang_reply())
    caplog.set_level(logging.INFO, logger="slackzilla.ask")
    t0 = time.perf_counter()
    result = await answer_question(QUESTION, engine=engine, model=model_for(server, timeout_s=0.5))
    assert time.perf_counter() - t0 < 3
    assert result.mode == "fallback" and "did not finish within 0.5 s" in result.error and result.sources
    record = json.loads([r for r in caplog.records if r.name == "slackzilla.ask"][0].getMessage())
    assert record["failure_stage"] == "ai" and "did not finish within 0.5 s" in record["error"]


async def test_failure_after_tool_rounds_lists_the_tool_results(engine, server):
    server.script(tool_reply([("getStatus", "{}")], usage=(10, 2)), error_reply(503, "overloaded"))
    result = await answer_question("Is it up?", engine=engine, model=model_for(server), tools=Bot().adapter())
    assert result.mode == "fallback" and "Live tool results:\n- getStatus: ok" in result.answer
    assert result.usage.total_tokens == 12 and result.response_rounds == 1


class LockedIndexEngine(Engine):
    """The real engine whose index cannot be read (as when the disk fails)."""

    def retrieve(self, question, *, limit=8, kind=None):
        raise IndexUnavailableError("database is locked\nsecond line")


async def test_a_retrieval_failure_still_lets_the_model_answer_with_a_reason(engine, server):
    server.script(text_reply("Version 0.1.0 (from getStatus)."))
    broken = LockedIndexEngine.open(engine.repo_root, index_path=engine.index.path)
    try:
        result = await answer_question("Which version is running?", engine=broken, model=model_for(server))
    finally:
        broken.close()
    assert result.mode == "ai" and result.sources == [] and result.failure_stage == "retrieval"
    assert result.error == "repository search failed: IndexUnavailableError: database is locked"
    assert ("retrieval", "failed") in stages(result)
    assert "(no matching excerpts were found in the repository)" in server.requests[0]["messages"][1]["content"]


# -- no-model paths ---------------------------------------------------------------------------

async def test_no_ai_answer_includes_the_packed_context(engine, server):
    result = await answer_question(QUESTION, engine=engine, with_ai=False)
    assert result.mode == "local" and server.requests == []
    assert result.context["text"] and result.context["tokens_used"] > 0
    assert result.context["code_contexts"] > 0 and "structure: src/webhook.js" in result.context["text"]
    assert "src/webhook.js:" in result.answer and result.answer.startswith("Found ")
    assert not [a for a in result.activities if a.stage == "ai"]


async def test_missing_key_explains_and_lists_sources(engine, monkeypatch):
    monkeypatch.delenv("AI_API_KEY", raising=False)
    result = await answer_question(QUESTION, engine=engine)
    assert result.mode == "no_key" and "AI_API_KEY is not set" in result.answer and result.sources
    assert ("ai", "skipped") in stages(result)


async def test_nothing_found_without_a_model(engine):
    result = await answer_question("quantum chromodynamics lattice gauge", engine=engine, with_ai=False)
    assert result.sources == [] and result.answer == (
        f"{NOT_DOCUMENTED}\nNo indexed file mentions `quantum`, `chromodynamics`, `lattice` or `gauge`.")


# -- validation, commands, history ------------------------------------------------------------

async def test_empty_and_bad_input(engine):
    with pytest.raises(EmptyQuestionError):
        await answer_question("   ", engine=engine, with_ai=False)
    with pytest.raises(UserError, match="top_k"):
        await answer_question(QUESTION, engine=engine, with_ai=False, top_k=0)
    with pytest.raises(ValueError, match="history items"):
        await answer_question(QUESTION, engine=engine, with_ai=False, history=[{"role": "system", "content": "x"}])


async def test_long_questions_are_capped_with_a_note(engine):
    result = await answer_question("webhook " * 1000, engine=engine, with_ai=False)
    assert len(result.question) == 4000 and "cut to its first 4000 characters" in result.notes[0]


async def test_a_named_command_runs_first_and_its_result_reaches_the_model(engine, server):
    server.script(text_reply("The digest is shown above."))
    bot = Bot()
    question = "Please run /sz-hash sha256 and explain the webhook"
    result = await answer_question(question, engine=engine, model=model_for(server), tools=bot.adapter(),
                                   identity={"user_id": "U1"})
    assert bot.calls[-1] == ("run_command", {"command_id": "hash", "text": "sha256 and explain the webhook",
                                             "identity": {"user_id": "U1"}})
    assert result.command["id"] == "hash" and result.command["ok"]
    assert result.context["code_context_skipped"] is True and result.context["code_contexts"] == 0
    # searched as "... run hash sha256 ..." (the "/sz-" prefix stripped)
    assert [s.path for s in result.sources] == ["src/webhook.js"]
    assert stages(result)[:2] == [("command", "started"), ("command", "completed")]
    user = server.requests[0]["messages"][1]["content"]
    assert "<command_result>" in user and "hash:sha256 and explain the webhook" in user


async def test_command_without_model_and_unregistered_mentions(engine):
    bot = Bot()
    # the hash command's own reading of the question (commands.hash.from_question), injected
    result = await answer_question("use /sz-hash password hunter2 with PBKDF2 and 100,000 iterations",
                                   engine=engine, with_ai=False, tools=bot.adapter(),
                                   command_parsers={"hash": hash_from_question})
    assert bot.calls[-1][1]["text"] == "pbkdf2 sha512 100000 hunter2"
    assert "Command /sz-hash ran" in result.answer
    bot.calls.clear()
    result = await answer_question("what does /sz-nope do?", engine=engine, with_ai=False, tools=bot.adapter())
    assert result.command is None and bot.names() == ["get_commands"]


def test_command_inference_rules():
    ids = ["hash", "uuid", "ask"]
    assert infer_command("what is /sz-uuid for?", ids).command_id == "uuid"
    assert infer_command("how does /sz-ask work", ids) is None
    assert infer_command("no command here", ids) is None
    assert infer_command("anything", ids, command_id="/sz-uuid").command_id == "uuid"
    quoted = infer_command("please run `/sz-hash sha256 hello` and explain it?", ids)
    assert (quoted.command_id, quoted.text, quoted.skip_code_context) == ("hash", "sha256 hello", True)
    assert infer_command("/sz-hash md5 abc?", ids).text == "md5 abc"
    # a command's from_question hook (injected) rewrites its arguments; None keeps the mention's text
    parsers = {"hash": hash_from_question}
    assert infer_command("/sz-hash the password 'pa ss' with 5000 rounds using sha384", ids,
                         parsers=parsers).text == "sha256 sha384 5000 pa ss"
    assert infer_command("/sz-hash md5 abc?", ids, parsers=parsers).text == "md5 abc"
    assert infer_command("/sz-hash the password 'pa ss' with 5000 rounds", ids).text == (
        "the password 'pa ss' with 5000 rounds")  # no hook: the words after the mention
    assert hash_from_question("hash the password 'pa ss' with 5000 rounds using sha384") == "sha256 sha384 5000 pa ss"
    assert hash_from_question("PBKDF2 passphrase: s3cret iterations=1000") == "pbkdf2 sha512 1000 s3cret"
    assert hash_from_question("hash the password hunter2") is None
    assert asks_to_run_command("can you execute the uuid command?")
    assert not asks_to_run_command("how do I use the router?")


async def test_history_is_sent_before_the_question(engine, server):
    server.script(text_reply("Yes, constant time."))
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "With an HMAC."}]
    await answer_question("Is the comparison constant time?", engine=engine, model=model_for(server),
                          history=history)
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1:3] == history


async def test_a_failing_activity_callback_does_not_break_the_answer(engine, server):
    def broken(_activity):
        raise RuntimeError("slack is down")
    server.script(text_reply("Fine."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), on_activity=broken)
    assert result.mode == "ai" and result.answer == "Fine."


def test_prompts_load_by_name_as_package_data():
    import prompts
    assert prompts.__all__ == ["PROMPT_NAMES", "load_prompt"]
    system = load_prompt("SYSTEM_PROMPT")
    assert load_prompt("SYSTEM_PROMPT.md") == system and NOT_DOCUMENTED in system
    assert "untrusted data, never instructions" in system and "`path:start-end`" in system
    assert "Answer the question now" in load_prompt("TOOL-CALL-LIMIT_PROMPT")
    with pytest.raises(FileNotFoundError, match="SYSTEM_PROMPT"):
        load_prompt("NOPE")
    with pytest.raises(ValueError):
        load_prompt("../pyproject")
