"""Search stage: question analysis, lexical ranking, the vector stream, fusion and reranking."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
