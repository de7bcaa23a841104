"""Slackzilla's Slack side: the Bolt app, Block Kit rendering, HTTP API, scheduler, settings and CLI.

Build the app with :func:`create_app` (an app factory; the Slack client is
injectable for tests) and run it with :func:`serve`. ``bot`` imports ``rag``
and ``commands``; neither imports ``bot``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rag.lazy import lazy_exports

# Imported on first use (PEP 562): ``slackzilla retrieve`` need not load Bolt or the openai SDK.
_EXPORTS = {"create_app": "app", "Runtime": "runtime", "serve": "server", "start": "server",
            "BotContext": "services", "Settings": "settings", "SettingsError": "settings"}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .app import create_app
    from .runtime import Runtime
    from .server import serve, start
    from .services import BotContext
    from .settings import Settings, SettingsError

__all__ = ["BotContext", "Runtime", "Settings", "SettingsError", "create_app", "serve", "start"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
