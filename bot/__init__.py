"""Slackzilla's Slack side: the Bolt app, Block Kit rendering, HTTP API, scheduler, settings and CLI.

Build the app with :func:`create_app` (an app factory; the Slack client is
injectable for tests) and run it with :func:`serve`. ``bot`` imports ``rag``
and ``commands``; neither imports ``bot``.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """Import an exported name's module (or a submodule) on first access (PEP 562); else ``AttributeError``."""
    module = _EXPORTS.get(name)
    if module is None:
        if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f".{name}", __name__)  # ``bot.<submodule>`` as before
        raise AttributeError(f"module 'bot' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
