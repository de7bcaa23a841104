"""Answer stage: a question in, a grounded and cited answer out (orchestrator, model loop, prompting, citations, command inference)."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
