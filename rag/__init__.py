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

from typing import TYPE_CHECKING

from .lazy import lazy_exports

# Names are imported on first use (PEP 562), so ``import rag.engine`` (the CLI's
# retrieve, index and code commands) does not pay for the openai SDK.
_EXPORTS = {
    "AnswerResult": "answer", "answer_question": "answer",
    "CodeGraph": "codegraph",
    "PackedContext": "context", "code_context": "context", "pack_context": "context",
    "Engine": "engine", "IndexStats": "engine",
    "ModelConfig": "llm",
    "Reindexer": "maintenance", "ReindexBusyError": "maintenance", "RunRecord": "maintenance",
    "estimate_tokens": "tokens",
    "ToolAdapter": "tools", "ToolHandlers": "tools", "ToolResult": "tools",
    "EmptyQuestionError": "errors", "IndexUnavailableError": "errors", "ProviderError": "errors",
    "RagError": "errors", "RepoNotFoundError": "errors", "UserError": "errors",
    "Chunk": "types", "ImageHit": "types", "Source": "types",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .answer import AnswerResult, answer_question
    from .codegraph import CodeGraph
    from .context import PackedContext, code_context, pack_context
    from .engine import Engine, IndexStats
    from .errors import EmptyQuestionError, IndexUnavailableError, ProviderError, RagError, RepoNotFoundError, UserError
    from .llm import ModelConfig
    from .maintenance import Reindexer, ReindexBusyError, RunRecord
    from .tokens import estimate_tokens
    from .tools import ToolAdapter, ToolHandlers, ToolResult
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
