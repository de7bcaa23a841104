"""Chunks that only import or re-export names rank below the code defining them (rag.search.import_blocks)."""
from __future__ import annotations

from dataclasses import dataclass

from repo_helpers import indexed_engine

from rag.search.import_blocks import demote_import_blocks, is_import_block
from rag.search.query import analyze

PY_HEAD = """\"\"\"HTTP adapters.\"\"\"
import os.path
import socket

from urllib3.exceptions import (
    LocationValueError,
    MaxRetryError,
)
from urllib3.util import Timeout as TimeoutSauce

from .auth import _basic_auth_str
"""
BARREL = "".join(f"export {{ op{i} }} from '../internal/operators/op{i}';\n" for i in range(12))
CJS_HEAD = "'use strict'\n\nconst debug = require('debug')('app')\nconst Router = require('./router')\n" \
           "const { inspect } = require('util')\nconst methods = require('methods')\n"
CODE = """import { timer } from './timer';

export function retry(count, delay) {
  let attempts = 0;
  return (source) => source.pipe(catchError((err) => {
    attempts += 1;
    if (attempts > count) throw err;
    return timer(delay * attempts);
  }));
}
"""


def test_import_blocks_of_python_es_modules_and_commonjs_and_not_code_that_imports():
    assert is_import_block(PY_HEAD) and is_import_block(BARREL) and is_import_block(CJS_HEAD)
    assert not is_import_block(CODE)
    assert not is_import_block("import os\nimport sys\n")  # two lines: a tiny module is what it is
    call = "import os\nimport sys\n\ndef main():\n    run(\n        config,\n        args,\n        env,\n        logger,\n    )\n"
    assert not is_import_block(call)  # names in a call are not an import's
    destructured = "const {\n  kRoute,\n  kHooks,\n  kState\n} = require('./symbols')\nconst http = require('http')\n"
    assert is_import_block(destructured)


@dataclass
class Cand:
    id: int
    text: str
    file_type: str
    score: float


def test_import_blocks_are_halved_and_sorted_again_unless_pinned_or_asked_about():
    ranked = [Cand(1, BARREL, "ts", 1.0), Cand(2, CODE, "ts", 0.8), Cand(3, PY_HEAD, "md", 0.7)]
    question = analyze("How does retry wait longer after each failure?")
    out = demote_import_blocks(ranked, question, doc_types=frozenset({"md"}))
    assert [c.id for c in out] == [2, 3, 1] and out[-1].score == 0.5  # prose is never an import block
    ranked = [Cand(1, BARREL, "ts", 1.0), Cand(2, CODE, "ts", 0.8)]
    assert [c.id for c in demote_import_blocks(ranked, question, pinned={1})] == [1, 2]
    for unrelated in ("What is the most important option?", "Which settings are required?"):
        assert [c.id for c in demote_import_blocks([Cand(1, BARREL, "ts", 1.0), Cand(2, CODE, "ts", 0.8)],
                                                   analyze(unrelated))] == [2, 1]
    ranked = [Cand(1, BARREL, "ts", 1.0), Cand(2, CODE, "ts", 0.8)]
    asked = analyze("Which files re-export op3?")
    assert [c.id for c in demote_import_blocks(ranked, asked)] == [1, 2] and ranked[0].score == 1.0


def test_the_engine_ranks_the_implementation_above_a_barrel_that_names_it(tmp_path):
    names = ("retry", "retryWhen", "repeat", "repeatWhen", "delay", "delayWhen", "timer", "timeout", "timeoutWith",
             "catchError")
    files = {"src/operators/index.ts": "".join(f"export {{ {n} }} from '../internal/operators/{n}';\n" for n in names),
             "src/internal/operators/retry.ts": CODE}
    with indexed_engine(tmp_path, files) as engine:
        # the barrel holds more of the question's words: without the demotion it came first
        paths = [s.path for s in engine.retrieve("How do retry and delay and timeout work together?")]
        assert paths == ["src/internal/operators/retry.ts", "src/operators/index.ts"]
        paths = [s.path for s in engine.retrieve("Which file exports retry, delay and timeout?")]
        assert paths[0] == "src/operators/index.ts"  # asked about exports: the barrel is the answer
