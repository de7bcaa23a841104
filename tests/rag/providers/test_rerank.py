"""Optional reranking of the fused top 20 (issue 7): rag.providers.rerank against a real local HTTP server.

The reranker is a stdlib ``http.server`` on 127.0.0.1 port 0 speaking the
Cohere/Jina ``POST /rerank`` JSON API with deterministic scores (a function of
the document text chosen by each test). Everything else is the real engine:
walk → chunk → index → BM25 (→ vectors → RRF) → rerank → diversify.

The repository has 25 one-chunk files ``src/mod_NN.js``; file NN says
"widget gadget" 25 − NN times, so BM25 ranks them mod_00, mod_01, … and the
fused top 20 is mod_00..mod_19. Files 03, 10 and 20 ``require('./lib')`` (``src/lib.js``),
so "which … import src/lib.js?" gives four hard structural boosts (the named file and
its dependants).
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

from bot.settings import Settings
from embeddings_server import BagOfWords, EmbeddingsServer
from rerank_server import RerankServer
from rag.providers.embeddings import OpenAIEmbeddings
from rag.engine import Engine
from rag.errors import ProviderError
from rag.config import ConfigError, RerankConfig
from rag.providers.rerank import DEFAULT_RERANK_TEXT_CHARS, HttpReranker, build_reranker
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY, HARD_BOOST

API_KEY = "sk-rerank-SECRET-0123456789abcdef"
QUESTION = "where is the widget gadget handled?"
N_FILES = 25
DEPENDANTS = (3, 10, 20)


def reranker_from_env(env):
    """The reranker the ``RERANK_*`` variables in ``env`` describe (parser + builder, as the CLI does)."""
    return build_reranker(RerankConfig.from_env(env))


def mod_number(text: str) -> int:
    return int(re.search(r"mod_(\d+)", text).group(1))


@pytest.fixture()
def server():
    srv = RerankServer(score_fn=lambda query, document: float(mod_number(document)))  # reverses BM25's order
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rerank") / "repo"
    (root / "src").mkdir(parents=True)
    for n in range(N_FILES):
        lines = [f"// widget gadget step {n}-{i}" for i in range(N_FILES - n)]
        if n in DEPENDANTS:
            lines.append("const lib = require('./lib');")
        lines += [f"const filler{n}_{i} = {i};" for i in range(30 - len(lines))]
        (root / "src" / f"mod_{n:02d}.js").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "src" / "lib.js").write_text("module.exports = function lib() { return 42; };\n", encoding="utf-8")
    return root


@pytest.fixture()
def open_engine(repo, tmp_path):
    engines: list[Engine] = []

    def make(**kwargs) -> Engine:
        engine = Engine.open(repo, index_path=tmp_path / "index.sqlite", **kwargs)
        engine.update()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def paths(sources) -> list[str]:
    return [s.path for s in sources]


def sent_paths(server: RerankServer, i: int = -1) -> list[str]:
    return [doc.split("\n", 1)[0] for doc in server.documents(i)]


# -- the engine stage ----------------------------------------------------------------------------


def test_without_a_reranker_bm25_ranks_the_files_by_mentions(open_engine):
    assert paths(open_engine().retrieve(QUESTION)) == [f"src/mod_{n:02d}.js" for n in range(8)]


def test_the_fused_top_20_is_reordered_as_the_server_says(open_engine, server):
    engine = open_engine(reranker=HttpReranker(base_url=server.url, api_key=API_KEY, model="rr-1"))
    sources = engine.retrieve(QUESTION)

    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["path"] == "/v1/rerank" and request["auth"] == f"Bearer {API_KEY}"
    body = request["body"]
    assert (body["model"], body["query"], body["top_n"]) == ("rr-1", QUESTION, 20)
    assert sent_paths(server) == [f"src/mod_{n:02d}.js" for n in range(20)]  # the fused top 20, in order
    assert all(doc.startswith("src/mod_") and len(doc) <= len("src/mod_00.js\n") + DEFAULT_RERANK_TEXT_CHARS
               for doc in body["documents"])
    assert paths(sources) == [f"src/mod_{n:02d}.js" for n in range(19, 11, -1)]
    assert [s.score for s in sources] == sorted((s.score for s in sources), reverse=True)


def test_the_policy_sets_how_many_are_reranked(open_engine, server):
    from dataclasses import replace

    policy = replace(DEFAULT_RETRIEVAL_POLICY, rerank_top=5)
    engine = open_engine(reranker=HttpReranker(base_url=server.url), retrieval_policy=policy)
    sources = engine.retrieve(QUESTION)
    assert server.requests[0]["auth"] is None and "model" not in server.requests[0]["body"]
    assert sent_paths(server) == [f"src/mod_{n:02d}.js" for n in range(5)]
    assert paths(sources) == [f"src/mod_{n:02d}.js" for n in (4, 3, 2, 1, 0, 5, 6, 7)]


def test_a_file_the_question_names_stays_first(open_engine, server):
    named = "src/mod_23.js"
    question = f"where is the widget gadget handled in {named}?"
    baseline = paths(open_engine().retrieve(question))
    server.score_fn = lambda query, document: -100.0 if document.startswith(named) else float(mod_number(document))
    engine = open_engine(reranker=HttpReranker(base_url=server.url))
    sources = engine.retrieve(question)
    assert named not in sent_paths(server)  # pinned: its place is not the reranker's to change
    assert len(set(sent_paths(server))) == len(sent_paths(server)) == 19
    # the named file leads, and the reranked files follow it in the reranker's order
    assert paths(sources)[0] == baseline[0] == named and len(sources) > 1
    assert paths(sources)[1:] == sorted(paths(sources)[1:], key=mod_number, reverse=True)


def test_hard_boosted_dependants_keep_their_order(open_engine, server):
    question = "which widget gadget files import src/lib.js?"
    baseline = paths(open_engine().retrieve(question))
    assert baseline == ["src/mod_03.js", "src/mod_10.js", "src/mod_20.js", "src/lib.js"]
    server.score_fn = lambda query, document: 1e6 if document.startswith("src/lib.js") else float(mod_number(document))
    sources = open_engine(reranker=HttpReranker(base_url=server.url)).retrieve(question)
    assert not set(baseline) & set(sent_paths(server)) and len(server.documents()) == 16
    assert paths(sources) == baseline


def test_hybrid_fusion_then_rerank_keeps_a_named_file_first(open_engine, server):
    embeddings_server = EmbeddingsServer(embed_fn=BagOfWords(), dim=256)
    try:
        provider = OpenAIEmbeddings(base_url=embeddings_server.url, model="bow")
        baseline = open_engine(embeddings=provider)
        assert baseline.embed_pending().complete
        named = "src/mod_23.js"
        question = f"where is the widget gadget handled in {named}?"
        fused = baseline.retrieve(question)
        server.score_fn = lambda q, document: -100.0 if document.startswith(named) else float(mod_number(document))
        engine = open_engine(embeddings=provider, reranker=HttpReranker(base_url=server.url))
        sources = engine.retrieve(question)
    finally:
        embeddings_server.close()
    # Fusion rescales scores (a hard boost becomes ~4.1 < HARD_BOOST): pinning is decided before it.
    assert fused[0].path == named and fused[0].score < HARD_BOOST
    assert len(server.requests) == 1 and named not in sent_paths(server)
    assert paths(sources)[0] == paths(fused)[0] == named and len(sources) > 1
    assert paths(sources)[1:] == sorted(paths(sources)[1:], key=mod_number, reverse=True)


def test_hybrid_fusion_then_rerank_reorders_the_fused_list(open_engine, server):
    embeddings_server = EmbeddingsServer(embed_fn=BagOfWords(), dim=256)
    try:
        provider = OpenAIEmbeddings(base_url=embeddings_server.url, model="bow")
        baseline = open_engine(embeddings=provider)
        assert baseline.embed_pending().complete
        fused = baseline.retrieve(QUESTION)
        sources = open_engine(embeddings=provider, reranker=HttpReranker(base_url=server.url)).retrieve(QUESTION)
    finally:
        embeddings_server.close()
    sent = sent_paths(server)
    assert len(sent) == 20 and len(set(sent)) == 20 and fused[0].score < HARD_BOOST
    assert paths(sources) == sorted(sent, key=mod_number, reverse=True)[:8] != paths(fused)


@pytest.mark.parametrize("action", ["status:500", "garbage", "status:401"])
def test_a_failing_reranker_keeps_the_fused_order(open_engine, server, action, caplog):
    baseline = paths(open_engine().retrieve(QUESTION))
    server.default_action = action
    engine = open_engine(reranker=HttpReranker(base_url=server.url, api_key=API_KEY, deadline_s=2.0))
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()
    assert paths(engine.retrieve(QUESTION)) == baseline
    assert time.monotonic() - started < 2.0
    assert len(server.requests) == (3 if action == "status:500" else 1)  # 5xx retried, the rest not
    assert "rerank skipped, keeping the fused order" in caplog.text
    assert API_KEY not in caplog.text and QUESTION not in caplog.text
    assert "widget gadget" not in caplog.text


def test_below_the_relevance_floor_retrieval_abstains(open_engine, server, caplog):
    # Scores are the module numbers 0..19: a floor above them all means no real match.
    caplog.set_level(logging.INFO)
    engine = open_engine(reranker=HttpReranker(base_url=server.url, min_score=20.0))
    assert engine.retrieve(QUESTION) == []
    assert "rerank abstained" in caplog.text and QUESTION not in caplog.text
    engine = open_engine(reranker=HttpReranker(base_url=server.url, min_score=19.0))
    assert paths(engine.retrieve(QUESTION))[0] == "src/mod_19.js"  # one chunk at the floor is a match


def test_the_floor_never_overrides_a_named_file_or_a_reranker_failure(open_engine, server):
    named = "src/mod_23.js"
    engine = open_engine(reranker=HttpReranker(base_url=server.url, min_score=1000.0))
    assert paths(engine.retrieve(f"where is the widget gadget handled in {named}?")) == [named]
    baseline = paths(open_engine().retrieve(QUESTION))
    server.default_action = "garbage"
    assert paths(engine.retrieve(QUESTION)) == baseline


def test_the_floor_is_read_from_the_environment_and_validated(tmp_path):
    env = {"RERANK_URL": "http://127.0.0.1:9/v1", "RERANK_MIN_SCORE": "0.25"}
    assert reranker_from_env(env).min_score == 0.25
    assert reranker_from_env({"RERANK_URL": "http://127.0.0.1:9/v1"}).min_score is None
    with pytest.raises(ConfigError, match="RERANK_MIN_SCORE: expected a number"):
        reranker_from_env({**env, "RERANK_MIN_SCORE": "high"})
    with pytest.raises(ConfigError, match="finite"):
        reranker_from_env({**env, "RERANK_MIN_SCORE": "nan"})
    settings = Settings.from_env({"REPO_PATH": str(tmp_path), **env}, dotenv_path=None, require_slack=False)
    assert settings.engine.rerank.min_score == 0.25 and build_reranker(settings.engine.rerank).min_score == 0.25
    with pytest.raises(Exception, match="RERANK_MIN_SCORE"):
        Settings.from_env({"REPO_PATH": str(tmp_path), **env, "RERANK_MIN_SCORE": "inf"}, dotenv_path=None,
                          require_slack=False)


def test_a_hanging_reranker_costs_at_most_its_deadline(open_engine, server, caplog):
    baseline = paths(open_engine().retrieve(QUESTION))
    server.default_action = "hang"
    engine = open_engine(reranker=HttpReranker(base_url=server.url, api_key=API_KEY, deadline_s=0.6))
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()
    assert paths(engine.retrieve(QUESTION)) == baseline
    assert time.monotonic() - started < 1.5
    assert "deadline of 0.6 s exceeded" in caplog.text or "timed out" in caplog.text
    assert API_KEY not in caplog.text and QUESTION not in caplog.text


# -- the client ----------------------------------------------------------------------------------


def test_scores_come_back_in_input_order_under_either_key(server):
    server.score_fn = lambda query, document: {"a": 0.1, "b": 0.9, "c": 0.5}[document]
    reranker = HttpReranker(base_url=server.url + "/rerank/")
    assert reranker.url == server.url + "/rerank"
    assert reranker.rerank("q", ["a", "b", "c"]) == [0.1, 0.9, 0.5]
    server.script.append("score")
    assert reranker.rerank("q", ["a", "b", "c"]) == [0.1, 0.9, 0.5]
    assert reranker.rerank("q", []) == [] and len(server.requests) == 2


def test_a_429_is_retried_and_then_succeeds(server):
    server.script.extend(["status:429", "status:503"])
    server.score_fn = lambda query, document: float(len(document))
    assert HttpReranker(base_url=server.url).rerank("q", ["aa", "a"]) == [2.0, 1.0]
    assert len(server.requests) == 3


def test_errors_are_one_line_and_never_show_the_key_or_the_query(server, caplog):
    caplog.set_level(logging.DEBUG)
    server.default_action = "status:401"
    with pytest.raises(ProviderError) as info:
        HttpReranker(base_url=server.url, api_key=API_KEY).rerank("my private question", ["a", "b"])
    message = str(info.value)
    assert message.startswith("reranker refused the request: HTTP 401") and "\n" not in message
    assert API_KEY not in message and "my private question" not in message
    assert API_KEY not in caplog.text and "my private question" not in caplog.text
    assert API_KEY not in repr(HttpReranker(base_url=server.url, api_key=API_KEY))


def test_an_unreachable_server_fails_fast_with_a_provider_error(server):
    url = server.url
    server.close()
    with pytest.raises(ProviderError, match="cannot connect"):
        HttpReranker(base_url=url, deadline_s=1.0, max_retries=0).rerank("q", ["a", "b"])


# -- configuration -------------------------------------------------------------------------------


def test_reranking_is_off_unless_rerank_url_is_set(tmp_path, monkeypatch):
    for name in ("RERANK_URL", "RERANK_API_KEY", "RERANK_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert reranker_from_env({}) is None
    assert reranker_from_env({"RERANK_URL": "  ", "RERANK_API_KEY": API_KEY}) is None
    settings = Settings.from_env({"REPO_PATH": str(tmp_path)}, dotenv_path=None, require_slack=False)
    assert settings.engine.rerank == RerankConfig()

    from bot import server
    from bot.cli import common as cli

    assert server.reranker(settings) is None and cli.reranker() is None
    assert Engine.open(tmp_path, index_path=tmp_path / "i.sqlite").reranker is None


def test_rerank_settings_are_read_masked_and_passed_on(tmp_path):
    env = {"REPO_PATH": str(tmp_path), "RERANK_URL": "https://api.jina.ai/v1/rerank",
           "RERANK_API_KEY": API_KEY, "RERANK_MODEL": "jina-reranker-v2"}
    settings = Settings.from_env(env, dotenv_path=None, require_slack=False)
    assert (settings.engine.rerank.url, settings.engine.rerank.model) == ("https://api.jina.ai/v1/rerank",
                                                                          "jina-reranker-v2")
    assert API_KEY not in repr(settings) and "RerankConfig(url='https://api.jina.ai/v1/rerank', api_key='***'" in repr(settings)
    reranker = build_reranker(settings.engine.rerank)
    assert isinstance(reranker, HttpReranker)
    assert (reranker.url, reranker.model, reranker.name) == ("https://api.jina.ai/v1/rerank", "jina-reranker-v2",
                                                            "rerank:jina-reranker-v2")
    with pytest.raises(ConfigError, match="RERANK_URL: expected an http"):
        reranker_from_env({"RERANK_URL": "ftp://example.com"})
    with pytest.raises(ProviderError, match="RERANK_URL must be an http"):
        build_reranker(RerankConfig(url="ftp://example.com"))
    with pytest.raises(Exception, match="RERANK_URL"):
        Settings.from_env({**env, "RERANK_URL": "not a url"}, dotenv_path=None, require_slack=False)
