"""What every embeddings provider shares: the protocol, row normalisation and query/passage prefixes.

Kept apart from :mod:`rag.providers.embeddings` (the remote provider and the selection) and
:mod:`rag.providers.local_embeddings` (the local models) so that both import it and neither
imports the other.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:  # numpy is imported when rows are normalised
    import numpy as np

__all__ = ["EmbeddingProvider", "Prefixes", "normalise_rows"]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the retrieval engine needs from an embeddings backend.

    Attributes:
        name: model identity, the cache key of stored vectors
            (``"openai:text-embedding-3-small"``, ``"local:all-MiniLM-L6-v2@1a2b3c4d"``).
        dim: vector dimension once known (after the first successful call), else ``None``.
    """

    name: str
    dim: int | None

    def embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed passages ``texts`` → float32 ``(len(texts), dim)``, unit rows. Raises ``ProviderError``."""
        ...


class Prefixes:
    """Query and passage prefixes for models trained with them (e5: ``"query: "``, ``"passage: "``),
    and the ``embed`` / ``embed_queries`` pair built on a provider's ``_embed(texts, deadline_s=)``.

    Example::

        provider = OnnxEmbeddings(path=e5_dir, query_prefix="query: ", passage_prefix="passage: ")
        provider.embed(["def parse(): ..."])          # embeds "passage: def parse(): ..."
        provider.embed_queries(["how is it parsed?"])  # embeds "query: how is it parsed?"

    Args:
        query_prefix: put before each question (``EMBEDDINGS_QUERY_PREFIX``), as given.
        passage_prefix: put before each chunk (``EMBEDDINGS_PASSAGE_PREFIX``), as given; it changes
            the stored vectors, so it is part of ``name`` (:meth:`prefixed_name`).
    """

    def __init__(self, *, query_prefix: str = "", passage_prefix: str = "") -> None:
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix

    def prefixed_name(self, name: str) -> str:
        """``name``, plus ``+p<8 hex of the passage prefix>`` when there is one."""
        if not self.passage_prefix:
            return name
        return f"{name}+p{hashlib.sha256(self.passage_prefix.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"

    def embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed passages (chunks): ``passage_prefix + text`` each (see the module contract)."""
        prefix = self.passage_prefix
        return self._embed([prefix + t for t in texts] if prefix else texts, deadline_s=deadline_s)

    def embed_queries(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        """Embed questions: ``query_prefix + text`` each (see the module contract)."""
        prefix = self.query_prefix
        return self._embed([prefix + t for t in texts] if prefix else texts, deadline_s=deadline_s)

    def _embed(self, texts: Sequence[str], *, deadline_s: float | None = None) -> np.ndarray:
        raise NotImplementedError


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as C-contiguous float32 with each row scaled to L2 norm 1.

    All-zero rows stay zero (no NaN). Shape ``(n, dim)`` in, same shape out.
    """
    import numpy as np

    out = np.array(matrix, dtype=np.float32, order="C", copy=True)
    if out.size:
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
    return out
