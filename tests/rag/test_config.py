"""rag.config: the one parser of the engine's variables (REPO_PATH, RAG_INDEX_PATH, AI_*, EMBEDDINGS*, RERANK_*)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rag.config import (
    DEFAULT_AI_MODEL,
    DEFAULT_AI_URL,
    ConfigError,
    EmbeddingsConfig,
    EngineConfig,
    ModelConfig,
    RerankConfig,
    engine_paths,
    parse_engine_config,
)
from rag.errors import UserError


def test_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = parse_engine_config({})
    assert config == EngineConfig(repo=Path.cwd())
    assert config.index_path is None
    assert (config.model.base_url, config.model.model, config.model.timeout_s, config.model.enabled) == (
        DEFAULT_AI_URL, DEFAULT_AI_MODEL, 60.0, False)
    assert config.embeddings == EmbeddingsConfig(mode="auto")
    assert config.rerank == RerankConfig()


def test_every_engine_variable_is_read(tmp_path):
    local = tmp_path / "model"
    local.mkdir()
    config = parse_engine_config({
        "REPO_PATH": f" {tmp_path} ", "RAG_INDEX_PATH": "~/i.sqlite",
        "AI_URL": "http://h/v1/chat/completions", "AI_API_KEY": "sk-a", "AI_MODEL": "m", "AI_TIMEOUT_S": "2.5",
        "EMBEDDINGS": "ON", "EMBEDDINGS_URL": "http://e/v1", "EMBEDDINGS_API_KEY": "ek", "EMBEDDINGS_MODEL": "em",
        "EMBEDDINGS_LOCAL_PATH": str(local),
        "RERANK_URL": "http://r/v1", "RERANK_API_KEY": "rk", "RERANK_MODEL": "rm", "RERANK_MIN_SCORE": "0.5",
    })
    assert config.repo == tmp_path.resolve()
    assert config.index_path == Path("~/i.sqlite").expanduser()
    assert config.model == ModelConfig(base_url="http://h/v1", api_key="sk-a", model="m", timeout_s=2.5)
    assert config.embeddings == EmbeddingsConfig(mode="auto", url="http://e/v1", api_key="ek", model="em",
                                                 local_path=local.resolve())
    assert config.rerank == RerankConfig(url="http://r/v1", api_key="rk", model="rm", min_score=0.5)
    assert parse_engine_config({"EMBEDDINGS": "disabled"}).embeddings.mode == "off"


def test_every_bad_variable_is_reported_once(tmp_path):
    env = {"REPO_PATH": str(tmp_path / "missing"), "AI_URL": "ftp://x", "AI_TIMEOUT_S": "0", "EMBEDDINGS": "maybe",
           "EMBEDDINGS_URL": "nope", "EMBEDDINGS_LOCAL_PATH": str(tmp_path / "none"), "RERANK_URL": "x",
           "RERANK_MIN_SCORE": "inf", "AI_API_KEY": "sk-secret", "RERANK_API_KEY": "rk-secret"}
    with pytest.raises(ConfigError) as caught:
        parse_engine_config(env)
    named = [p.split(":", 1)[0] for p in caught.value.problems]
    assert sorted(named) == sorted(["REPO_PATH", "AI_URL", "AI_TIMEOUT_S", "EMBEDDINGS", "EMBEDDINGS_URL",
                                    "EMBEDDINGS_LOCAL_PATH", "RERANK_URL", "RERANK_MIN_SCORE"])
    text = str(caught.value)
    assert isinstance(caught.value, UserError) and text.startswith("Invalid configuration:\n- ")
    assert "sk-secret" not in text and "rk-secret" not in text


def test_sections_parse_alone_and_report_only_their_variables(tmp_path):
    env = {"REPO_PATH": str(tmp_path / "missing"), "RERANK_MIN_SCORE": "high", "EMBEDDINGS": "x"}
    assert ModelConfig.from_env(env) == ModelConfig()
    with pytest.raises(ConfigError) as caught:
        RerankConfig.from_env(env)
    assert caught.value.problems == ["RERANK_MIN_SCORE: expected a number, got 'high'"]
    with pytest.raises(ConfigError, match="EMBEDDINGS: expected auto or off"):
        EmbeddingsConfig.from_env(env)


def test_keys_never_show_in_repr():
    config = parse_engine_config({"AI_API_KEY": "sk-1", "EMBEDDINGS_API_KEY": "ek-1", "RERANK_API_KEY": "rk-1"})
    shown = repr(config)
    assert "sk-1" not in shown and "ek-1" not in shown and "rk-1" not in shown
    assert "api_key='***'" in repr(config.rerank) and "api_key='***'" in repr(config.embeddings)
    assert "api_key=None" in repr(RerankConfig())


def test_engine_paths_are_read_unchecked(tmp_path):
    assert engine_paths({}) == (None, None)
    assert engine_paths({"REPO_PATH": "  ", "RAG_INDEX_PATH": ""}) == (None, None)
    assert engine_paths({"REPO_PATH": str(tmp_path / "missing"), "RAG_INDEX_PATH": "~/i.sqlite"}) == (
        tmp_path / "missing", Path("~/i.sqlite"))


def test_the_parser_imports_no_sdk():
    code = ("import sys, rag.config; rag.config.parse_engine_config({}); "
            "print(sorted(m for m in ('openai', 'numpy', 'slack_bolt', 'slack_sdk', 'httpx2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_the_tool_budget_is_read_and_bad_values_are_reported() -> None:
    config = parse_engine_config({"AI_TOOL_ROUNDS": "5", "AI_TOOL_CALLS_PER_ROUND": "2", "AI_TOOL_READ_TOKENS": "800"})
    assert config.model.tool_budget == (5, 2, 800)
    assert parse_engine_config({}).model.tool_budget == (3, 8, 12_000)
    with pytest.raises(ConfigError) as caught:
        parse_engine_config({"AI_TOOL_ROUNDS": "many", "AI_TOOL_CALLS_PER_ROUND": "0", "AI_TOOL_READ_TOKENS": "-1"})
    assert len(caught.value.problems) == 3
    assert any(p.startswith("AI_TOOL_CALLS_PER_ROUND:") and "between 1 and 32" in p for p in caught.value.problems)
