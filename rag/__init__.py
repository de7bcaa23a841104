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

from rag.lazy import lazy_exports

# Names are imported on first use (PEP 562), so ``import rag.engine`` (the CLI's
# retrieve, index and code commands) does not pay for the openai SDK.
_EXPORTS = {
    "AnswerResult": "answer.orchestrator", "answer_question": "answer.orchestrator",
    "CodeGraph": "context.codegraph",
    "PackedContext": "context.packer", "code_context": "context.packer", "pack_context": "context.packer",
    "Engine": "engine", "IndexStats": "ingest.stats",
    "ModelConfig": "config",
    "Reindexer": "ingest.reindexer", "ReindexBusyError": "ingest.reindexer", "RunRecord": "ingest.reindexer",
    "estimate_tokens": "tokens",
    "ToolAdapter": "tools.adapter", "ToolHandlers": "tools.adapter", "ToolResult": "tools.adapter",
    "EmptyQuestionError": "errors", "IndexUnavailableError": "errors", "ProviderError": "errors",
    "RagError": "errors", "RepoNotFoundError": "errors", "UserError": "errors",
    "Chunk": "types", "ImageHit": "types", "Source": "types",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from rag.answer.orchestrator import AnswerResult, answer_question
    from rag.context.codegraph import CodeGraph
    from rag.context.packer import PackedContext, code_context, pack_context
    from rag.engine import Engine
    from rag.ingest.stats import IndexStats
    from rag.errors import EmptyQuestionError, IndexUnavailableError, ProviderError, RagError, RepoNotFoundError, UserError
    from rag.config import ModelConfig
    from rag.ingest.reindexer import Reindexer, ReindexBusyError, RunRecord
    from rag.tokens import estimate_tokens
    from rag.tools.adapter import ToolAdapter, ToolHandlers, ToolResult
    from rag.types import Chunk, ImageHit, Source


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
