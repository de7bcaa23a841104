"""Slackzilla's Slack side: the Bolt app, Block Kit rendering, HTTP API, scheduler, settings and CLI.

Build the app with :func:`create_app` (an app factory; the Slack client is
injectable for tests) and run it with :func:`serve`. ``bot`` imports ``rag``
and ``commands``; neither imports ``bot``.
"""
from __future__ import annotations

from .app import create_app
from .runtime import Runtime
from .server import serve, start
from .services import BotContext
from .settings import Settings, SettingsError

__all__ = ["BotContext", "Runtime", "Settings", "SettingsError", "create_app", "serve", "start"]
