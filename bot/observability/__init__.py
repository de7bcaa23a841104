"""What the running bot knows about itself: logs, errors, metrics, feedback and release information."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
