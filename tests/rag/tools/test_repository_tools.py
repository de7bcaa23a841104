"""Repository tools through the real ToolAdapter on a real indexed Engine: results, evidence, hostile
arguments refused with nothing read, caps, deadline, activities, and the adapter without an engine."""
from __future__ import annotations

import json
import os
import time

import pytest
from repo_helpers import write_repo

from rag.engine import Engine
from rag.tools.adapter import ToolAdapter, ToolHandlers
from rag.tools.repository import RepositoryTools
from rag.tools.schemas import (MAX_READ_LINES, REPOSITORY_TOOL_NAMES, SUPPORTED_KEYWORDS, TOOL_NAMES,
                               tool_definitions)

PLANTED = "xoxb-112233445566-112233445566-AbCdEfGhIjKlMnOpQrStUvWx"
POOL = "\n".join(
    ["const net = require('net');", ""]
    + [f"// filler line {n}" for n in range(3, 20)]
    + ["", "// computeBackoff: delay before the next retry, doubling each attempt up to a ceiling.",
       "function computeBackoff(attempt, baseMs = 100, maxMs = 5000) {",
       "  const delay = baseMs * 2 ** attempt;",
       "  return Math.min(delay, maxMs);",
       "}",
       "",
       "class Pool {",
       "  acquire() {",
       "    const wait = computeBackoff(this.attempts);",
       "    return new Promise((resolve) => setTimeout(resolve, wait));",
       "  }",
       "}",
       "",
       f"const token = '{PLANTED}';",
       "module.exports = { Pool, computeBackoff };"]) + "\n"
FILES = {
    "README.md": "# Pool\n\nA small connection pool.\n",
    "lib/pool.js": POOL,
    "lib/client.js": "const { computeBackoff } = require('./pool');\n\nfunction retry(n) {\n"
                     "  return computeBackoff(n);\n}\n\nmodule.exports = { retry };\n",
    "lib/long.js": "\n".join("const x%d = '%s';" % (n, "y" * 380) for n in range(1, 451)) + "\n",
    "docs/guide.md": "# Guide\n\n## Retries\n\nThe pool retries with exponential backoff.\n",
    ".env": "DEPLOY_SECRET=hunter2-hunter2\n",
    "config/.env.production": "API_KEY=abc\n",
    "package-lock.json": "{}\n",
}


class SpyEngine:
    """Delegates to the real Engine and records which methods were called (to prove nothing was read)."""

    def __init__(self, engine: Engine, *, delay_s: float = 0.0) -> None:
        self._engine = engine
        self.calls: list[str] = []
        self.delay_s = delay_s
        self.repo_root = engine.repo_root

    def __getattr__(self, name):
        target = getattr(self._engine, name)

        def wrapper(*args, **kwargs):
            self.calls.append(name)
            if self.delay_s:
                time.sleep(self.delay_s)
            return target(*args, **kwargs)
        return wrapper

    def reads(self) -> list[str]:
        return [c for c in self.calls if c in ("read_lines", "retrieve")]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo-tools")
    repo = write_repo(root / "repo", FILES)
    (root / "outside.js").write_text("const stolen = 'outside the repository';\n", encoding="utf-8")
    os.symlink(root / "outside.js", repo / "lib" / "link.js")
    os.symlink(root, repo / "linked-dir")
    eng = Engine.open(repo, index_path=root / "index.sqlite")
    eng.update()
    yield eng
    eng.close()


@pytest.fixture
def spy(engine) -> SpyEngine:
    return SpyEngine(engine)


def adapter_for(spy, **kwargs) -> ToolAdapter:
    return ToolAdapter(ToolHandlers(), repository=RepositoryTools(spy), **kwargs)


async def call(adapter: ToolAdapter, name: str, args) -> tuple:
    result = await adapter.call(name, args if isinstance(args, str) else json.dumps(args))
    return result, json.loads(result.content)


# -- schemas and offering ------------------------------------------------------------------------

def test_repository_specs_are_strict_and_offered_only_with_an_engine(engine):
    assert REPOSITORY_TOOL_NAMES == ("searchCode", "readFile", "findSymbol", "listFiles")
    definitions = tool_definitions(repository=True)
    assert [d["function"]["name"] for d in definitions] == [*TOOL_NAMES, *REPOSITORY_TOOL_NAMES]
    for definition in definitions[len(TOOL_NAMES):]:
        schema = definition["function"]["parameters"]
        assert schema["additionalProperties"] is False
        for prop in schema["properties"].values():
            assert set(prop) <= SUPPORTED_KEYWORDS
    plain = ToolAdapter(ToolHandlers())
    assert [d["function"]["name"] for d in plain.definitions()] == list(TOOL_NAMES)
    assert plain.names == TOOL_NAMES and not plain.is_repository_tool("readFile")
    with_repo = adapter_for(SpyEngine(engine))
    assert with_repo.names == (*TOOL_NAMES, *REPOSITORY_TOOL_NAMES)
    assert "readFile" in with_repo.describe("readFile") and "path: string (required)" in with_repo.describe("readFile")


async def test_without_an_engine_repository_tools_are_unknown(engine):
    result, body = await call(ToolAdapter(ToolHandlers()), "readFile", {"path": "lib/pool.js"})
    assert not result.ok and result.error_code == "unknown_tool" and result.evidence == ()
    assert not result.repository and "getStatus" in body["error"]["message"]


# -- readFile ------------------------------------------------------------------------------------

async def test_read_file_returns_numbered_redacted_index_lines_and_evidence(spy):
    adapter = adapter_for(spy)
    result, body = await call(adapter, "readFile", {"path": "lib/pool.js", "start": 21, "end": 25})
    assert result.ok and result.repository
    lines = POOL.split("\n")
    assert body["result"]["text"].split("\n") == [f"{n}: {lines[n - 1]}" for n in range(21, 26)]
    assert body["result"]["start"] == 21 and body["result"]["end"] == 25 and body["result"]["more"] is True
    assert result.evidence == (("lib/pool.js", 21, 25),)
    assert result.tokens_read > 0
    assert result.activity.stage == "tool" and result.activity.status == "completed"
    assert result.activity.message == "reading `lib/pool.js:21-25`"
    assert result.activity.metadata["type"] == "repository" and result.activity.metadata["tokens_read"] > 0
    data = result.to_json()
    assert data["summary"] == "reading `lib/pool.js:21-25`" and data["tokens_read"] == result.tokens_read
    assert data["evidence"] == [{"path": "lib/pool.js", "start": 21, "end": 25}] and data["output"] == body
    whole, body = await call(adapter, "readFile", {"path": "./lib/pool.js"})
    assert PLANTED not in whole.content and "const token" in whole.content  # the index's redacted text
    assert body["result"]["more"] is False and body["result"]["end"] == len(lines) - 1


async def test_read_file_output_stays_under_the_cap_and_evidence_is_what_was_returned(spy):
    result, body = await call(adapter_for(spy), "readFile", {"path": "lib/long.js", "start": 1, "end": 400})
    assert result.ok and not result.truncated and len(result.content.encode()) <= 32 * 1024
    last = body["result"]["end"]
    assert 1 < last < 400 and body["result"]["next_start"] == last + 1 and "cut" in body["result"]
    assert result.evidence == (("lib/long.js", 1, last),)


@pytest.mark.parametrize("args, code, fragment", [
    ({"path": "../../etc/passwd"}, "invalid_path", "'..'"),
    ({"path": "lib/../../outside.js"}, "invalid_path", "'..'"),
    ({"path": "/etc/passwd"}, "invalid_path", "absolute"),
    ({"path": "C:\\Windows\\win.ini"}, "invalid_path", "absolute"),
    ({"path": "~/.ssh/id_rsa"}, "invalid_path", "absolute"),
    ({"path": "lib/pool.js\u0000.txt"}, "invalid_path", "NUL"),
    ({"path": ".env"}, "secret_file", "secret"),
    ({"path": "config/.env.production"}, "secret_file", "secret"),
    ({"path": "lib/link.js"}, "invalid_path", "symbolic link"),
    ({"path": "linked-dir/outside.js"}, "invalid_path", "symbolic link"),
    ({"path": "package-lock.json"}, "not_indexed", "not an indexed file"),
    ({"path": "lib/nope.js"}, "not_indexed", "listFiles"),
    ({"path": "lib/pool.js", "start": 1, "end": 10_000}, "range_too_large", f"at most {MAX_READ_LINES}"),
    ({"path": "lib/pool.js", "start": 30, "end": 10}, "invalid_arguments", "before start"),
    ({"path": "lib/pool.js", "start": 900}, "out_of_range", "fewer than 900"),
    ({"path": "lib/pool.js", "end": 10 ** 9}, "invalid_arguments", "above the maximum"),
    ({"path": "lib/pool.js", "mode": "raw"}, "invalid_arguments", "unknown parameter"),
    ({"start": 1}, "invalid_arguments", "required"),
])
async def test_hostile_read_file_arguments_are_refused_with_nothing_read(spy, args, code, fragment):
    result, body = await call(adapter_for(spy), "readFile", args)
    assert not result.ok and result.error_code == code, body
    assert fragment in body["error"]["message"]
    assert result.evidence == () and result.tokens_read == 0
    assert "hunter2" not in result.content and "outside the repository" not in result.content
    assert "read_lines" not in spy.calls or code == "out_of_range"  # a range past the end reads nothing
    assert result.activity.status == "failed" and result.activity.message.startswith("reading `")
    assert result.activity.message.endswith("out of range" if code == "out_of_range" else f"refused: {code}")


async def test_refused_range_says_what_to_ask_for(spy):
    _, body = await call(adapter_for(spy), "readFile", {"path": "lib/pool.js", "start": 5, "end": 10_004})
    assert "start=5, end=404" in body["error"]["message"]


async def test_arguments_that_are_not_json_are_refused(spy):
    result, body = await call(adapter_for(spy), "readFile", '{"path": "lib/pool.js", ')
    assert result.error_code == "invalid_arguments" and "not valid JSON" in body["error"]["message"]
    assert spy.reads() == []
    # nested past the parser's recursion limit: was a handler_error ("readFile failed: RecursionError")
    # with a traceback in the log, not a refusal the model can correct
    result, body = await call(adapter_for(spy), "readFile", "[" * 50_000)
    assert result.error_code == "invalid_arguments" and "nested too deeply" in body["error"]["message"]
    assert spy.reads() == []


# -- searchCode ----------------------------------------------------------------------------------

async def test_search_code_hits_have_location_symbol_and_numbered_snippet(spy):
    result, body = await call(adapter_for(spy), "searchCode", {"query": "computeBackoff delay", "limit": 3})
    assert result.ok and body["result"]["count"] == len(body["result"]["hits"]) >= 1
    hit = next(h for h in body["result"]["hits"] if h["path"] == "lib/pool.js")
    assert {"path", "start", "end", "snippet"} <= set(hit) and hit["start"] <= 23 <= hit["end"]
    first = int(hit["snippet"].split(":", 1)[0])
    assert hit["snippet"].count("\n") < 6 and hit["start"] <= first
    assert any(p == "lib/pool.js" and a == first for p, a, _ in result.evidence)
    count = body["result"]["count"]
    assert result.activity.message == f"searching `computeBackoff delay`… {count} hit{'s' if count != 1 else ''}"


async def test_search_code_filters_by_path_prefix_and_type(spy):
    adapter = adapter_for(spy)
    _, body = await call(adapter, "searchCode", {"query": "backoff retries", "path_prefix": "docs/"})
    assert body["ok"] and {h["path"] for h in body["result"]["hits"]} <= {"docs/guide.md"}
    _, body = await call(adapter, "searchCode", {"query": "backoff retries", "type": "documentation"})
    assert all(h["path"].endswith(".md") for h in body["result"]["hits"])
    before = len(spy.calls)
    for bad in ({"query": "x", "path_prefix": "../"}, {"query": "x", "path_prefix": "/etc"},
                {"query": "x", "limit": 500}, {"query": "x", "type": "secret"}, {"query": ""},
                {"query": "x", "regex": True}):
        result, body = await call(adapter, "searchCode", bad)
        assert not result.ok and result.error_code in ("invalid_path", "invalid_arguments"), bad
    assert spy.calls[before:] == []


# -- findSymbol and listFiles ------------------------------------------------------------------

async def test_find_symbol_gives_definition_signature_callers_and_importers(spy):
    result, body = await call(adapter_for(spy), "findSymbol", {"name": "computeBackoff"})
    assert result.ok
    definition = body["result"]["definitions"][0]
    assert definition["path"] == "lib/pool.js" and definition["start"] == 22 and definition["end"] == 25
    assert definition["signature"].startswith("function computeBackoff(attempt")
    callers = {(c["path"], c["in"]) for c in body["result"]["call_sites"]}
    assert ("lib/client.js", "retry") in callers and ("lib/pool.js", "acquire") in callers
    assert [i["path"] for i in body["result"]["imported_by"]] == ["lib/client.js"]
    assert ("lib/pool.js", 22, 22) in result.evidence
    assert result.activity.message.startswith("finding `computeBackoff`… 1 definition")
    result, body = await call(adapter_for(spy), "findSymbol", {"name": "Pool.acquire"})
    assert body["result"]["definitions"][0]["parent"] == "Pool"
    result, body = await call(adapter_for(spy), "findSymbol", {"name": "Backoff"})
    assert result.error_code == "not_found" and "computeBackoff" in body["error"]["message"]
    assert result.activity.message == "finding `Backoff`… not found"


async def test_list_files_lists_indexed_paths_only(spy):
    adapter = adapter_for(spy)
    _, body = await call(adapter, "listFiles", {})
    paths = body["result"]["paths"]
    assert "lib/pool.js" in paths and ".env" not in paths and "lib/link.js" not in paths
    assert "package-lock.json" not in paths and body["result"]["count"] == len(paths)
    _, body = await call(adapter, "listFiles", {"path_prefix": "lib/", "pattern": "p*.js"})
    assert body["result"]["paths"] == ["lib/pool.js"]
    result, _ = await call(adapter, "listFiles", {"path_prefix": "../../"})
    assert result.error_code == "invalid_path"
    result, _ = await call(adapter, "listFiles", {"path_prefix": "linked-dir"})
    assert result.error_code == "invalid_path"


# -- budget, deadline ----------------------------------------------------------------------------

async def test_read_tokens_allowance_trims_output_and_zero_refuses(spy):
    adapter = adapter_for(spy)
    small = await adapter.call("readFile", json.dumps({"path": "lib/long.js", "end": 100}), max_read_tokens=400)
    body = json.loads(small.content)["result"]
    assert small.ok and body["end"] < 100 and small.tokens_read <= 400 + 50
    assert small.evidence == (("lib/long.js", 1, body["end"]),)
    spent = await adapter.call("readFile", json.dumps({"path": "lib/pool.js"}), max_read_tokens=0)
    assert spent.error_code == "budget_exhausted" and "budget" in spent.error and spent.evidence == ()


async def test_a_slow_engine_hits_the_deadline(engine):
    slow = SpyEngine(engine, delay_s=0.5)
    result, body = await call(adapter_for(slow, deadline_s=0.1), "searchCode", {"query": "backoff"})
    assert result.error_code == "timeout" and result.activity.message == "searching `backoff` failed: timeout"


async def test_a_start_past_the_end_is_said_before_range_advice(spy):
    adapter = adapter_for(spy)
    result, _ = await call(adapter, "readFile", {"path": "lib/pool.js", "start": 10000, "end": 20000})
    assert result.error_code == "out_of_range" and "fewer than 10000 lines" in result.error
    lines = POOL.split("\n")
    blank = next(n for n, line in enumerate(lines, 1) if n > 1 and not line.strip())
    ok, body = await call(adapter, "readFile", {"path": "lib/pool.js", "start": blank, "end": blank + 1})
    assert ok.ok and body["result"]["start"] == blank  # a blank line is a line


async def test_a_secret_file_value_the_model_searches_for_is_not_in_the_progress_line(spy):
    # The progress line ("searching `…`") is shown in Slack, in `--json` activities and in /api/ask; it was
    # redacted for credential patterns only, so a .env value the model put in its query was printed as is.
    from rag.secrets import LiteralRedactor

    adapter = adapter_for(spy, secret_values=lambda: LiteralRedactor({"Zq8vLm3pXr7tWn2k"}))
    for name, args in (("searchCode", {"query": "Zq8vLm3pXr7tWn2k"}), ("findSymbol", {"name": "Zq8vLm3pXr7tWn2k"}),
                       ("readFile", {"path": "lib/Zq8vLm3pXr7tWn2k.js"})):
        result, _ = await call(adapter, name, args)
        refused = adapter.refuse(name, "budget_exhausted", "spent", arguments_json=json.dumps(args))
        for shown in (result, refused):
            assert "Zq8vLm3pXr7tWn2k" not in shown.activity.message + json.dumps(shown.to_json()), name
            assert "[REDACTED]" in shown.activity.message
