"""Slackzilla's repository-RAG engine, usable without Slack.

Stages: walk → chunk → parse → index → retrieve → code context → pack → answer.
Start with :class:`Engine`::

    from rag import Engine
    engine = Engine.open("path/to/repo")
    engine.update()
    for source in engine.retrieve("how are routes matched?"):
        print(source.path, source.start, source.end)

This package never imports ``bot``, ``commands`` or Slack packages.
"""
from __future__ import annotations

from .engine import Engine, IndexStats
from .errors import (
    EmptyQuestionError,
    IndexUnavailableError,
    ProviderError,
    RagError,
    RepoNotFoundError,
    UserError,
)
from .types import Chunk, ImageHit, Source

__all__ = [
    "Chunk",
    "EmptyQuestionError",
    "Engine",
    "ImageHit",
    "IndexStats",
    "IndexUnavailableError",
    "ProviderError",
    "RagError",
    "RepoNotFoundError",
    "Source",
    "UserError",
]
