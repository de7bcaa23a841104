"""The model's tools: the live tools read the running bot (:func:`tool_handlers` joins them to a
:class:`BotContext`), the repository tools read its index (:func:`build_tools` adds them).

``getStatus``, ``getCommands``, ``runCommand`` … call the same :class:`bot.context.BotContext`
methods as ``/sz-status`` and ``GET /api/*``, so the three can never disagree.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from bot.context import BotContext
from bot.identity import Identity
from rag.tools.adapter import ToolAdapter, ToolHandlers
from rag.tools.repository import RepositoryTools

__all__ = ["build_tools", "tool_handlers"]


def tool_handlers(ctx: BotContext, *, engine=None) -> ToolHandlers:
    """The :class:`rag.tools.adapter.ToolHandlers` reading ``ctx`` (same data as ``/api/*``).

    ``getRoutes`` reads ``engine``'s code graph (the question's repository; default ``ctx.engine``).
    ``runCommand`` runs through :meth:`BotContext.run_command` with ``source="tool"`` and the
    asker's :class:`Identity` (anything else counts as an anonymous non-admin).
    """

    async def run_command(*, command_id: str, text: str, identity: Any) -> dict:
        who = identity if isinstance(identity, Identity) else Identity(None)
        result = await ctx.run_command(command_id, text, identity=who, source="tool")
        return result.to_json()

    async def get_logs(*, limit: int, level: str | None = None, include_stack: bool = False) -> list[dict]:
        return ctx.logs(limit=limit, level=level, include_stack=include_stack)

    async def get_errors(*, limit: int, include_stack: bool = False) -> list[dict]:
        return ctx.errors(limit=limit, include_stack=include_stack)

    return ToolHandlers(
        get_status=_in_thread(ctx.status),
        get_commands=_async(ctx.commands),
        get_release_info=_async(ctx.release),
        run_command=run_command,
        get_logs=get_logs,
        get_errors=get_errors,
        get_metrics=_in_thread(ctx.metrics),
        get_routes=_async(lambda: ctx.routes(engine=engine)),
    )


def build_tools(ctx: BotContext, *, engine=None, repository_tools: bool = True) -> ToolAdapter:
    """The :class:`rag.tools.adapter.ToolAdapter` the model (and ``slackzilla tool``) calls: the live
    tools, and the repository tools (``searchCode``, ``readFile``, ``findSymbol``, ``listFiles``) over
    ``engine``'s index (default ``ctx.engine``: the default repository).

    ``repository_tools=False`` leaves the repository tools out: an ``in:all`` question
    (:class:`rag.federation.FederatedEngine`) has no one tree to read; it gets the fused excerpts and
    the live tools, ``getRoutes`` covering every repository."""
    engine = engine if engine is not None else ctx.engine
    return ToolAdapter(tool_handlers(ctx, engine=engine),
                       repository=RepositoryTools(engine) if repository_tools else None,
                       secret_values=engine.secret_redactor)


def _async(function: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    """Wrap a quick synchronous reader so the tools adapter awaits it on the loop (no thread)."""

    async def call() -> Any:
        return function()

    return call


def _in_thread(function: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    """Wrap a synchronous reader that reads the state store: it runs in a worker thread."""

    async def call() -> Any:
        return await asyncio.to_thread(function)

    return call
