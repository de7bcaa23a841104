"""answer_question with repository tools: the real Engine and ToolAdapter + RepositoryTools, and a local
OpenAI-compatible server speaking real SSE as a scripted model (only the provider is fake).

The model is given a first context that misses the answer, searches, reads the lines and cites them:
those citations are kept and shown; citations of lines it never read are reported unsupported; the
read budget, the per-round cap and hostile arguments are enforced in the loop."""
from __future__ import annotations

import json

import pytest
from openai_server import FakeOpenAIServer, text_reply, tool_reply
from repo_helpers import indexed_engine

from rag.answer.loop import DEFAULT_MAX_READ_TOKENS, ToolBudget
from rag.answer.orchestrator import answer_question
from rag.providers.llm import ModelConfig
from rag.tools.adapter import ToolAdapter, ToolHandlers
from rag.tools.repository import RepositoryTools

FILLER = [f"function helper{n}(value) {{ return value + {n}; }}" for n in range(1, 79)]
POOL_LINES = [
    "'use strict';",
    *FILLER,                                                          # lines 2-79
    "",                                                               # 80
    "// nextDelay: exponential backoff between connection tries.",     # 81
    "function nextDelay(tries) {",                                    # 82
    "  const base = 250;",                                            # 83
    "  const delay = base * 2 ** tries;",                             # 84
    "  return Math.min(delay, 30000);",                               # 85
    "}",                                                              # 86
    "",                                                               # 87
    *[f"function tail{n}() {{ return {n}; }}" for n in range(1, 34)],  # 88-120
    "module.exports = { nextDelay };",                                # 121
]
# The code shares no word with QUESTION (``tries``, not "attempts"), so no retrieval of the first
# context finds it, not even the packer's source-only one that never abstains: only the README does.
REPO = {
    "README.md": "# Shop client\n\nClients reconnect automatically when the connection drops; how long they "
                 "wait is decided in the connection pool.\n",
    "lib/pool.js": "\n".join(POOL_LINES) + "\n",
    "lib/server.js": "const http = require('http');\nhttp.createServer((req, res) => res.end('ok')).listen(8080);\n",
    ".env": "DEPLOY_SECRET=hunter2-hunter2\n",
}
QUESTION = "How long does a client wait between reconnect attempts?"
ANSWER = ("It doubles a 250 ms base per attempt and caps it at 30 s: `lib/pool.js:84-85` "
          "(`nextDelay`, lib/pool.js:82-86).")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with indexed_engine(tmp_path_factory.mktemp("answer-repo"), REPO) as eng:
        yield eng


@pytest.fixture
async def server():
    async with FakeOpenAIServer() as running:
        yield running


def model_for(server: FakeOpenAIServer) -> ModelConfig:
    return ModelConfig(base_url=server.base_url, api_key="sk-test-key", model="fake-model", timeout_s=10.0,
                       max_retries=0)


def tools_for(engine) -> ToolAdapter:
    return ToolAdapter(ToolHandlers(), repository=RepositoryTools(engine))


def tool_messages(server: FakeOpenAIServer, request: int) -> list[dict]:
    return [m for m in server.requests[request]["messages"] if m["role"] == "tool"]


def payload(message: dict) -> dict:
    return json.loads(message["content"].split("\n", 1)[1])


async def test_search_then_read_then_a_cited_answer_is_kept_and_shown(engine, server):
    server.script(
        tool_reply([("searchCode", json.dumps({"query": "backoff delay between attempts"}))], usage=(400, 20)),
        tool_reply([("readFile", json.dumps({"path": "lib/pool.js", "start": 80, "end": 90}))], usage=(600, 20)),
        text_reply(ANSWER, usage=(900, 40)),
    )
    activities = []
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine),
                                   on_activity=activities.append)
    # The first context misses: the lines that answer are not in it.
    first = server.requests[0]
    assert "Math.min(delay, 30000)" not in first["messages"][-1]["content"]
    offered = [t["function"]["name"] for t in first["tools"]]
    assert offered[-4:] == ["searchCode", "readFile", "findSymbol", "listFiles"]
    # The model was shown the search hits, then the numbered lines.
    search = payload(tool_messages(server, 1)[0])
    assert tool_messages(server, 1)[0]["content"].startswith("Repository evidence from the searchCode tool")
    assert search["ok"] and any(h["path"] == "lib/pool.js" for h in search["result"]["hits"])
    read = payload(tool_messages(server, 2)[-1])
    assert "85:   return Math.min(delay, 30000);" in read["result"]["text"]
    # The answer and its citations are kept, and the read lines are the shown sources.
    assert result.mode == "ai" and result.answer == ANSWER and result.response_rounds == 3
    assert [c.label() for c in result.grounding.supported] == ["lib/pool.js:84-85", "lib/pool.js:82-86"]
    assert result.grounding.unsupported == [] and result.notes == []
    assert [(s.path, s.start, s.end) for s in result.shown_sources] == [("lib/pool.js", 84, 85),
                                                                         ("lib/pool.js", 82, 86)]
    assert result.to_json()["shown_sources"][0] == {"path": "lib/pool.js", "start": 84, "end": 85}
    # Progress lines for Slack, one per repository step, in order.
    messages = [a.message for a in result.activities if a.stage == "tool"]
    # One hit: the symbol chunk of nextDelay (no overlapping window repeats it).
    assert messages[0] == "searching `backoff delay between attempts`… 1 hit"
    assert messages[1] == "reading `lib/pool.js:80-90`"
    assert activities == result.activities
    budget = result.tool_budget
    assert budget["tool_rounds"] == 2 and budget["tool_calls"] == 2
    assert 0 < budget["read_tokens"] == sum(r.tokens_read for r in result.tool_results)
    assert budget["max_read_tokens"] == DEFAULT_MAX_READ_TOKENS and result.to_json()["tool_budget"] == budget


async def test_a_search_snippet_is_citable_without_reading_the_file(engine, server):
    args = json.dumps({"query": "nextDelay exponential backoff", "limit": 2})
    probe = await tools_for(engine).call("searchCode", args)  # the same call the model will make
    path, first, last = next(e for e in probe.evidence if e[0] == "lib/pool.js")
    server.script(tool_reply([("searchCode", args)]), text_reply(f"See {path}:{first}-{last}."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine))
    assert [c.label() for c in result.grounding.supported] == [f"{path}:{first}-{last}"]
    assert [(s.path, s.start, s.end) for s in result.shown_sources] == [(path, first, last)]


async def test_lines_the_model_never_saw_are_reported_unsupported(engine, server):
    server.script(
        tool_reply([("readFile", json.dumps({"path": "lib/pool.js", "start": 80, "end": 90}))]),
        text_reply("Backoff in lib/pool.js:84-85; the cap is configured in lib/pool.js:110-115 "
                   "and lib/config.js:3-9."),
    )
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine))
    assert [c.label() for c in result.grounding.supported] == ["lib/pool.js:84-85"]
    assert [c.label() for c in result.grounding.unsupported] == ["lib/pool.js:110-115", "lib/config.js:3-9"]
    assert [(s.path, s.start, s.end) for s in result.shown_sources] == [("lib/pool.js", 84, 85)]
    assert result.notes and "lib/pool.js:110-115" in result.notes[0]


async def test_a_refused_read_makes_nothing_citable(engine, server):
    server.script(
        tool_reply([("readFile", json.dumps({"path": "../../etc/passwd"})),
                    ("readFile", json.dumps({"path": "/etc/passwd"})),
                    ("readFile", json.dumps({"path": ".env"})),
                    ("readFile", json.dumps({"path": "lib/pool.js", "start": 1, "end": 10_000})),
                    ("readFile", json.dumps({"path": "lib/pool.js", "start": 80, "raw": True}))]),
        text_reply("The delay is in lib/pool.js:84-85."),
    )
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine))
    codes = [r.error_code for r in result.tool_results]
    assert codes == ["invalid_path", "invalid_path", "secret_file", "range_too_large", "invalid_arguments"]
    assert all(r.evidence == () and r.tokens_read == 0 for r in result.tool_results)
    contents = " ".join(m["content"] for m in tool_messages(server, 1))
    assert "root:" not in contents and "hunter2" not in contents and "Math.min" not in contents
    assert [c.label() for c in result.grounding.unsupported] == ["lib/pool.js:84-85"]
    assert result.tool_budget["read_tokens"] == 0


async def test_200_calls_in_one_round_run_at_most_the_per_round_cap(engine, server):
    calls = [("readFile", json.dumps({"path": "lib/pool.js", "start": n, "end": n})) for n in range(1, 201)]
    server.script(tool_reply(calls, pieces=1), text_reply("Done."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine),
                                   tool_budget=ToolBudget(max_calls_per_round=5))
    assert len(result.tool_results) == 200 and len(tool_messages(server, 1)) == 200
    assert [r.ok for r in result.tool_results[:5]] == [True] * 5
    refused = result.tool_results[5:]
    assert {r.error_code for r in refused} == {"refused"} and all(r.evidence == () for r in refused)
    assert "at most 5 tool calls per round; this round asked for 200" in refused[0].error
    assert refused[0].activity.message == "reading `lib/pool.js` refused: refused"
    assert result.tool_budget["read_tokens"] == sum(r.tokens_read for r in result.tool_results[:5])


async def test_read_budget_exhaustion_is_a_tool_error_saying_so(engine, server):
    read = json.dumps({"path": "lib/pool.js", "start": 1, "end": 120})
    server.script(tool_reply([("readFile", read)]), tool_reply([("readFile", read)]),
                  text_reply("It backs off: lib/pool.js:84-85."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine),
                                   tool_budget=ToolBudget(max_read_tokens=300))
    first, second = result.tool_results
    assert first.ok and first.tokens_read <= 300
    shown_end = payload(tool_messages(server, 1)[0])["result"]["end"]
    assert shown_end < 84 and first.evidence == (("lib/pool.js", 1, shown_end),)
    assert second.error_code == "budget_exhausted" and "read budget" in second.error and "spent" in second.error
    assert second.tokens_read == 0 and second.evidence == ()
    assert payload(tool_messages(server, 2)[-1])["error"]["code"] == "budget_exhausted"
    # It never saw lines 84-85, so that citation is not linked.
    assert [c.label() for c in result.grounding.unsupported] == ["lib/pool.js:84-85"]
    assert result.tool_budget == {"max_rounds": 3, "max_calls_per_round": 8, "max_read_tokens": 300,
                                  "tool_rounds": 2, "tool_calls": 2, "read_tokens": first.tokens_read}


async def test_zero_rounds_offers_no_tools(engine, server):
    server.script(text_reply("This is not documented in the repository."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine),
                                   tool_budget=ToolBudget(max_rounds=0))
    assert "tools" not in server.requests[0] and result.tool_results == []


async def test_a_spent_budget_refuses_before_running(engine, server):
    server.script(tool_reply([("searchCode", json.dumps({"query": "backoff"}))]),
                  text_reply("This is not documented in the repository."))
    result = await answer_question(QUESTION, engine=engine, model=model_for(server), tools=tools_for(engine),
                                   tool_budget=ToolBudget(max_read_tokens=0))
    [refused] = result.tool_results
    assert refused.error_code == "budget_exhausted" and "read budget (0 tokens) is spent" in refused.error
    assert refused.activity.message == "searching `backoff` refused: budget_exhausted"


def test_tool_budget_rejects_nonsense():
    with pytest.raises(ValueError, match="invalid tool budget"):
        ToolBudget(max_calls_per_round=0)
    with pytest.raises(ValueError):
        ToolBudget(max_read_tokens=-1)
