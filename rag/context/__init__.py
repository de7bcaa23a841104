"""Context stage: the code graph and the packer that fits context into a token budget."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
