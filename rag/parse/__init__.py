"""Parse stage: tree-sitter structure of source files (imports, definitions, calls, env vars, routes)."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
