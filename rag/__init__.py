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

from .answer import AnswerResult, answer_question
from .codegraph import CodeGraph
from .context import PackedContext, code_context, pack_context
from .engine import Engine, IndexStats
from .llm import ModelConfig
from .maintenance import Reindexer, ReindexBusyError, RunRecord
from .tokens import estimate_tokens
from .tools import ToolAdapter, ToolHandlers, ToolResult
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
    "AnswerResult",
    "Chunk",
    "CodeGraph",
    "ModelConfig",
    "PackedContext",
    "ReindexBusyError",
    "Reindexer",
    "RunRecord",
    "ToolAdapter",
    "ToolHandlers",
    "ToolResult",
    "answer_question",
    "code_context",
    "estimate_tokens",
    "pack_context",
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
