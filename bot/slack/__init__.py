"""The Slack surface: the Bolt app, the /sz-ask flow, guards, Block Kit rendering, messages and streaming."""
from __future__ import annotations

from rag.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {})  # submodules load on first attribute access
