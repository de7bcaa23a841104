"""Search stage: question analysis, lexical ranking, the structure and vector streams, fusion,
reranking, and the retriever that runs them with its per-generation cache."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
