"""Storage: the SQLite index (FTS5, migrations), every SQL statement (named read queries)
and the vector tables."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
