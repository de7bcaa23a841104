"""Lazy package exports (PEP 562): a package's names are imported on first use.

``rag`` and ``bot`` export their public names this way so that a command which
needs only the index (``slackzilla retrieve``) does not pay for importing the
openai SDK or Slack Bolt.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module-level ``(__getattr__, __dir__)`` for ``package``.

    Args:
        package: the package's ``__name__``.
        exports: exported name → the submodule (relative, no dot) that defines it.

    Returns:
        ``__getattr__(name)`` imports the defining submodule on first access, caches the
        value in the package namespace and returns it; a name that is a submodule
        (``rag.search.lexical``) imports that submodule; anything else raises ``AttributeError``.
        ``__dir__()`` lists the namespace and every export.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
