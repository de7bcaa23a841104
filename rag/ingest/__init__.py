"""Ingest stage: walk the repository, the per-file step (read, redact, chunk, parse), update
stats, and keeping the index current (reindexer)."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
