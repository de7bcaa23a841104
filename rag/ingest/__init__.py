"""Ingest stage: walk the repository, redact, chunk, and keep the index current (reindexer)."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
