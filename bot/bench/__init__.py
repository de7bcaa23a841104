"""The load benchmark behind ``slackzilla bench --load`` (issue 13: acks never late under load).

:mod:`bot.bench.load` runs it: the real bot (``slackzilla serve``) in a child process, the
benchmark stand-ins for Slack's Web API and a slow model (:mod:`bot.bench.standins`) in another,
the ``/sz-help`` probe (:mod:`bot.bench.client`) in a third, on a synthetic JS/TS repository
(:mod:`bot.bench.synthrepo`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rag.lazy import lazy_exports

# Imported on first use (PEP 562), so `python -m bot.bench.client` does not load its siblings first.
_EXPORTS = {"LoadOptions": "load", "LoadReport": "load", "run_load": "load"}

if TYPE_CHECKING:  # pragma: no cover
    from bot.bench.load import LoadOptions, LoadReport, run_load

__all__ = ["LoadOptions", "LoadReport", "run_load"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
