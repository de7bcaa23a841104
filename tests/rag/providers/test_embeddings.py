"""Embedding providers (rag.providers.embeddings) and the embed-missing loop (rag.store.vectors).

The OpenAI-compatible provider talks real HTTP to a local server on
127.0.0.1 (port 0) that answers ``POST /v1/embeddings`` like OpenAI, with
vectors derived from a hash of each text, so results are deterministic and
checkable. The local models are tested in ``test_local_embeddings.py``.
"""
from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from embeddings_server import DIM, EmbeddingsServer, hash_vector
from rag.providers.embeddings import (
    LOCAL_EXTRA_HINT,
    TORCH_EXTRA_HINT,
    EmbeddingProvider,
    LocalEmbeddings,
    OnnxEmbeddings,
    OpenAIEmbeddings,
    build_embeddings,
    local_extra_installed,
    torch_extra_installed,
)
from rag.config import ConfigError, EmbeddingsConfig
from rag.errors import ProviderError
from rag.store.vectors import CHUNK_VECTORS_DDL, embed_missing, load_vectors, store_vectors, vector_hashes

def unit(vec: np.ndarray) -> np.ndarray:
    return vec / np.linalg.norm(vec)


@pytest.fixture()
def server():
    srv = EmbeddingsServer()
    yield srv
    srv.close()


def make(server: EmbeddingsServer, **kwargs) -> OpenAIEmbeddings:
    kwargs.setdefault("api_key", "test-key-123")
    kwargs.setdefault("model", "hash-embed")
    return OpenAIEmbeddings(base_url=server.url, **kwargs)


# --------------------------------------------------------------------------- OpenAI-compatible provider


def test_batches_keep_order_and_return_unit_float32_rows(server):
    texts = [f"text number {i}" for i in range(150)]
    with make(server, batch_size=64) as provider:
        assert isinstance(provider, EmbeddingProvider)
        vectors = provider.embed(texts)
    assert [len(r["body"]["input"]) for r in server.requests] == [64, 64, 22]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["body"]["model"] for r in server.requests} == {"hash-embed"}
    assert server.requests[0]["auth"] == "Bearer test-key-123"
    assert vectors.dtype == np.float32 and vectors.shape == (150, DIM) and vectors.flags.c_contiguous
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for i in (0, 63, 64, 149):
        assert np.allclose(vectors[i], unit(hash_vector(texts[i])), atol=1e-6)
    assert provider.name == "openai:hash-embed" and provider.dim == DIM


def test_base64_encoding_and_url_normalisation(server):
    provider = make(server, encoding_format="base64")
    same = OpenAIEmbeddings(base_url=server.url + "/embeddings/", model="hash-embed")
    assert same.base_url == server.url
    a = provider.embed(["alpha", "beta"])
    b = same.embed(["alpha", "beta"])
    assert server.requests[0]["body"]["encoding_format"] == "base64"
    assert server.requests[1]["body"]["encoding_format"] == "float"
    assert np.allclose(a, b, atol=1e-6)


def test_empty_input_makes_no_request_and_empty_text_is_sent_as_space(server):
    provider = make(server)
    assert provider.embed([]).shape == (0, 0)
    assert server.requests == []
    provider.embed(["", "x"])
    assert server.requests[0]["body"]["input"] == [" ", "x"]
    assert provider.embed([]).shape == (0, DIM)


def test_500_is_retried_then_succeeds(server):
    server.script.extend(["status:500", "status:503"])
    vectors = make(server, max_retries=3).embed(["retry me"])
    assert len(server.requests) == 3
    assert np.allclose(vectors[0], unit(hash_vector("retry me")), atol=1e-6)


def test_persistent_500_becomes_provider_error(server):
    server.script.extend(["status:500"] * 5)
    with pytest.raises(ProviderError, match=r"failed after 2 attempts: HTTP 500: synthetic failure 500"):
        make(server, max_retries=1).embed(["x"])
    assert len(server.requests) == 2


@pytest.mark.parametrize("code", [400, 401, 404])
def test_client_errors_are_not_retried_and_never_show_the_key(server, code):
    server.script.append(f"status:{code}")
    with pytest.raises(ProviderError, match=rf"refused the request: HTTP {code}") as info:
        make(server, api_key="sk-very-secret").embed(["x"])
    assert len(server.requests) == 1
    assert "sk-very-secret" not in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "action, message",
    [("short", "returned 1 vectors for 2 texts"), ("ragged", "malformed response|inconsistent length"),
     ("garbage", "malformed response")],
)
def test_malformed_responses_become_provider_errors(server, action, message):
    server.script.append(action)
    with pytest.raises(ProviderError, match=message):
        make(server).embed(["a", "b"])


def test_dimension_change_between_calls_is_an_error(server):
    provider = make(server)
    provider.embed(["a"])
    server.dim = DIM // 2
    with pytest.raises(ProviderError, match=f"changed dimension from {DIM} to {DIM // 2}"):
        provider.embed(["b"])


def test_hanging_provider_hits_the_overall_deadline(server):
    server.script.extend(["hang"] * 10)
    provider = make(server, request_timeout_s=0.3, deadline_s=0.9, max_retries=10)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out|deadline"):
        provider.embed(["slow"])
    assert time.monotonic() - started < 2.0


def test_connection_refused_is_a_provider_error():
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = probe.server_address[1]
    probe.server_close()  # nothing listens on this port now
    provider = OpenAIEmbeddings(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(ProviderError, match=f"cannot connect to http://127.0.0.1:{port}/v1"):
        provider.embed(["x"])


def test_no_api_key_never_borrows_openai_api_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    OpenAIEmbeddings(base_url=server.url, model="m").embed(["x"])
    assert "sk-from-the-environment" not in server.requests[0]["auth"]


def test_bad_url_is_rejected():
    with pytest.raises(ProviderError, match="EMBEDDINGS_URL must be an http"):
        OpenAIEmbeddings(base_url="ftp://example/v1")


# --------------------------------------------------------------------------- build_embeddings(EmbeddingsConfig)


def provider_from_env(env):
    """The provider the ``EMBEDDINGS*`` variables in ``env`` describe (parser + builder, as the CLI does)."""
    return build_embeddings(EmbeddingsConfig.from_env(env))


def test_provider_from_env_choices(server, tmp_path):
    assert provider_from_env({"EMBEDDINGS": "off", "EMBEDDINGS_URL": server.url}) is None
    remote = provider_from_env({"EMBEDDINGS_URL": server.url + "/", "EMBEDDINGS_API_KEY": "k",
                                "EMBEDDINGS_MODEL": "nomic-embed-text"})
    assert isinstance(remote, OpenAIEmbeddings)
    assert remote.name == "openai:nomic-embed-text" and remote.base_url == server.url
    assert provider_from_env({"EMBEDDINGS_URL": server.url}).name == "openai:text-embedding-3-small"
    local = provider_from_env({"EMBEDDINGS_LOCAL_PATH": str(tmp_path)})
    assert isinstance(local, LocalEmbeddings) and not local.loaded
    assert local.name.startswith(f"local:{tmp_path.name}@")
    # A missing directory is refused by the parser (one line naming the variable) and by the builder.
    with pytest.raises(ConfigError, match="EMBEDDINGS_LOCAL_PATH: .* is not an existing directory"):
        provider_from_env({"EMBEDDINGS_LOCAL_PATH": str(tmp_path / "missing")})
    with pytest.raises(ProviderError, match="model directory not found"):
        build_embeddings(EmbeddingsConfig(local_path=tmp_path / "missing"))
    with pytest.raises(ConfigError, match="EMBEDDINGS: expected auto or off"):
        provider_from_env({"EMBEDDINGS": "sometimes"})
    with pytest.raises(ConfigError, match="EMBEDDINGS_URL: expected an http"):
        provider_from_env({"EMBEDDINGS_URL": "ftp://example/v1"})
    with pytest.raises(ProviderError, match="EMBEDDINGS_URL must be an http"):
        build_embeddings(EmbeddingsConfig(url="ftp://example/v1"))
    default = provider_from_env({})
    if local_extra_installed():  # the ONNX default, no PyTorch
        assert isinstance(default, OnnxEmbeddings) and default.name.startswith("local:all-MiniLM-L6-v2-int8@")
    elif torch_extra_installed():
        assert isinstance(default, LocalEmbeddings) and default.name.startswith("local:all-MiniLM-L6-v2@")
    else:
        assert default is None


def test_batch_size_and_timeout_come_from_the_environment(server):
    provider = provider_from_env({"EMBEDDINGS_URL": server.url, "EMBEDDINGS_BATCH_SIZE": "4",
                                  "EMBEDDINGS_TIMEOUT_S": "0.3"})
    assert (provider.batch_size, provider.request_timeout_s) == (4, 0.3)
    provider.embed([f"text {i}" for i in range(10)])
    assert [len(r["body"]["input"]) for r in server.requests] == [4, 4, 2]
    server.script.extend(["hang"] * 3)
    provider.retry = dataclasses.replace(provider.retry, max_retries=1)  # keep the test short
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out"):
        provider.embed(["slow"])
    assert time.monotonic() - started < 3  # two attempts of 0.3 s, not the 30 s default
    with pytest.raises(ConfigError, match="EMBEDDINGS_BATCH_SIZE: must be between 1 and 2048"):
        provider_from_env({"EMBEDDINGS_URL": server.url, "EMBEDDINGS_BATCH_SIZE": "0"})


def test_query_and_passage_prefixes_are_sent_and_key_the_vectors(server):
    plain = provider_from_env({"EMBEDDINGS_URL": server.url})
    prefixed = provider_from_env({"EMBEDDINGS_URL": server.url, "EMBEDDINGS_QUERY_PREFIX": "query: ",
                                  "EMBEDDINGS_PASSAGE_PREFIX": "passage: "})
    prefixed.embed(["def parse(): pass"])
    prefixed.embed_queries(["how is it parsed?"])
    plain.embed_queries(["how is it parsed?"])
    assert server.texts() == ["passage: def parse(): pass", "query: how is it parsed?", "how is it parsed?"]
    assert prefixed.name.startswith("openai:text-embedding-3-small+p") and plain.name == "openai:text-embedding-3-small"
    # Only the passage prefix changes the stored vectors, so only it changes the name.
    assert provider_from_env({"EMBEDDINGS_URL": server.url, "EMBEDDINGS_QUERY_PREFIX": "q: "}).name == plain.name


def test_one_rejected_text_with_small_provider_batches_keeps_every_other_vector(server, db):
    """A provider batch smaller than the embedding loop's: the refused request still costs only its one text."""
    provider = provider_from_env({"EMBEDDINGS_URL": server.url, "EMBEDDINGS_BATCH_SIZE": "4"})
    texts = {f"h{i:03d}": f"chunk body {i}" for i in range(40)}
    texts["h017"] = "POISON " * 5
    server.reject_if = lambda text: "POISON" in text
    report = run_embedding(provider, db, texts, batch_size=32)
    assert (report.planned, report.embedded, report.rejected, report.error) == (40, 39, 1, None)
    assert "maximum context length" in report.rejected_reason
    assert vector_hashes(db, model=provider.name) == set(texts) - {"h017"}


def test_choosing_a_provider_does_not_import_torch_or_onnxruntime():
    code = ("import sys; from rag.config import EmbeddingsConfig; from rag.providers.embeddings import build_embeddings; "
            "p = build_embeddings(EmbeddingsConfig.from_env({})); "
            "print(type(p).__name__, *(m in sys.modules for m in ('torch', 'sentence_transformers', 'onnxruntime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["False", "False", "False"]


def test_local_fingerprint_changes_when_the_model_changes(tmp_path):
    (tmp_path / "config.json").write_text('{"hidden_size": 384}')
    before = LocalEmbeddings(path=tmp_path).name
    (tmp_path / "config.json").write_text('{"hidden_size": 768}')
    assert LocalEmbeddings(path=tmp_path).name != before


def test_extra_hints_name_the_extras():
    assert "slackzilla[local-embeddings]" in LOCAL_EXTRA_HINT
    assert "slackzilla[local-embeddings-torch]" in TORCH_EXTRA_HINT


# --------------------------------------------------------------------------- embed_missing against SQLite


@pytest.fixture()
def db(tmp_path):
    conn = sqlite3.connect(tmp_path / "index.sqlite")
    conn.execute(CHUNK_VECTORS_DDL)
    yield conn
    conn.close()


def run_embedding(provider, db, texts: dict[str, str], **kwargs):
    def store(pairs):
        store_vectors(db, model=provider.name, pairs=pairs)
        db.commit()

    return embed_missing(
        provider=provider, chunk_hashes=list(texts), have=vector_hashes(db, model=provider.name),
        fetch_texts=lambda hashes: [texts[h] for h in hashes], store=store, **kwargs)


def test_unchanged_chunks_are_not_re_embedded_and_a_model_change_re_embeds_all(server, db):
    texts = {f"h{i:03d}": f"chunk body {i}" for i in range(10)}
    first = run_embedding(make(server, model="m1"), db, texts, batch_size=4)
    assert (first.planned, first.embedded, first.batches, first.complete) == (10, 10, 3, True)
    assert len(server.requests) == 3

    texts["h100"] = "a new chunk"
    second = run_embedding(make(server, model="m1"), db, texts, batch_size=4)
    assert (second.planned, second.embedded) == (1, 1)
    assert server.requests[-1]["body"]["input"] == ["a new chunk"]

    third = run_embedding(make(server, model="m2"), db, texts, batch_size=4)
    assert third.embedded == 11 and third.model == "openai:m2"

    vm = load_vectors(db, model="openai:m1")
    assert len(vm) == 11
    hit, score = vm.top_k(hash_vector("chunk body 7"), k=1)[0]
    assert hit == "h007" and score == pytest.approx(1.0, abs=1e-5)


def test_provider_failure_keeps_finished_batches_and_is_recorded(server, db):
    texts = {f"h{i}": f"text {i}" for i in range(6)}
    server.script.extend(["ok", "status:401"])
    report = run_embedding(make(server), db, texts, batch_size=2)
    assert report.embedded == 2 and report.batches == 1 and not report.complete
    assert "HTTP 401" in report.error
    assert vector_hashes(db, model="openai:hash-embed") == {"h0", "h1"}
    retry = run_embedding(make(server), db, texts, batch_size=2)
    assert retry.planned == 4 and retry.complete


def test_should_stop_ends_the_run_between_batches(server, db):
    texts = {f"h{i}": f"text {i}" for i in range(6)}
    calls = []
    report = run_embedding(make(server), db, texts, batch_size=2,
                           should_stop=lambda: calls.append(1) or len(calls) > 2)
    assert report.stopped and report.embedded == 4 and len(server.requests) == 2


def test_progress_is_reported_after_each_batch_and_ends_at_the_planned_count(server, db):
    texts = {f"h{i}": f"text {i}" for i in range(7)}
    seen = []
    report = run_embedding(make(server), db, texts, batch_size=3, progress=lambda done, planned: seen.append((done, planned)))
    assert report.complete and seen == [(3, 7), (6, 7), (7, 7)]
    seen.clear()
    server.script.extend(["ok", "status:401"])  # a failed batch ends the run without a report of it
    texts.update({f"n{i}": f"new {i}" for i in range(5)})
    failed = run_embedding(make(server), db, texts, batch_size=2, progress=lambda done, planned: seen.append((done, planned)))
    assert failed.error and seen == [(2, 5)]


def test_one_chunk_the_provider_refuses_does_not_cost_its_batch_their_vectors(server, db):
    # 80 chunks, one of them over the provider's limit: 79 vectors, the refusal reported.
    texts = {f"h{i:03d}": f"chunk body {i}" for i in range(80)}
    texts["h041"] = "POISON " * 5
    server.reject_if = lambda text: "POISON" in text
    report = run_embedding(make(server), db, texts, batch_size=32)
    assert (report.planned, report.embedded, report.rejected, report.error) == (80, 79, 1, None)
    assert "maximum context length" in report.rejected_reason and not report.complete
    assert vector_hashes(db, model="openai:hash-embed") == set(texts) - {"h041"}
    assert len(server.requests) <= 3 + 2 * 5 + 1  # three batches plus the bisection of one


def test_a_provider_that_refuses_every_input_stops_the_run_quickly(server, db):
    texts = {f"h{i:03d}": f"chunk body {i}" for i in range(64)}
    server.reject_if = lambda text: True
    report = run_embedding(make(server), db, texts, batch_size=32)
    assert report.embedded == 0 and report.error and "maximum context length" in report.error
    assert len(server.requests) <= 8
