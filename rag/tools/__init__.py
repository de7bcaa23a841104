"""Live tools: the model's read-only window on the running bot (schemas, handlers, sanitising)."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
