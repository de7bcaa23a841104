"""Slackzilla's Slack side: the Bolt app, Block Kit rendering, HTTP API, scheduler, settings and CLI.

Build the app with :func:`create_app` (an app factory; the Slack client is
injectable for tests) and run it with :func:`serve`. ``bot`` imports ``rag``
and ``commands``; neither imports ``bot``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rag.lazy import lazy_exports

# Imported on first use (PEP 562): ``slackzilla retrieve`` need not load Bolt or the openai SDK.
_EXPORTS = {"create_app": "compose", "Runtime": "observability.runtime", "serve": "server", "start": "server",
            "BotContext": "context", "Settings": "settings", "SettingsError": "settings"}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from bot.compose import create_app
    from bot.observability.runtime import Runtime
    from bot.server import serve, start
    from bot.context import BotContext
    from bot.settings import Settings, SettingsError

__all__ = ["BotContext", "Runtime", "Settings", "SettingsError", "create_app", "serve", "start"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
