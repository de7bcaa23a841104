"""The one answer entry point: Slack's ``/sz-ask`` (and mentions), ``POST /api/ask`` and ``slackzilla ask``.

    asker = Asker(engine=engine, model=model, tools=tools, metrics=runtime.metrics,
                  require_ready=reindexer.require_ready, command_parsers=registry.question_parsers())
    result = await asker.answer("how is the index updated?", identity=Identity("U1"))   # AnswerResult

**Off the main loop.** Each answer runs on the answers' own event loop and thread, its CPU-bound
stages (the ready check, retrieval, code context, packing) in a one-thread oldest-first pool
(:class:`bot.answer_loop.AnswerLoop`): the Slack acks on the main loop never wait behind model
streams or retrievals (issue 13). The callbacks (``on_activity``, ``on_token``) are called on the
caller's loop.

Every surface hands the question as typed; the one validation (empty check, length
policy: over 4,000 characters cut with a note) is :func:`rag.answer.question.prepare_question`
inside :func:`rag.answer.orchestrator.answer_question`. Surfaces that must refuse an empty
question before they start (a 400, a usage line, exit code 2) call
:func:`rag.answer.question.require_question`, the same check.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from bot.answer_loop import DEFAULT_ANSWER_WORKERS, AnswerLoop
from bot.identity import Identity
from rag.answer.loop import ToolBudget
from rag.answer.orchestrator import DEFAULT_TOP_K, AnswerResult, answer_question
from rag.providers.llm import ModelClient, ModelConfig
from rag.tools.adapter import ToolAdapter

__all__ = ["Asker"]


class Asker:
    """Answers questions with the orchestrator and live tools, and records the ask metrics.

    Args:
        engine: an opened :class:`rag.engine.Engine`.
        model: the model configuration (``ModelConfig.enabled`` False → sources only).
        tools: the live tools (``None``: no tools, no command inference).
        metrics: a :class:`bot.observability.metrics.Metrics` whose ``record_ask`` counts
            each answer (``None``: not counted, as in the CLI).
        require_ready: raises ``rag.errors.IndexBuildingError`` while the index has no
            generation (the bot's ``Reindexer.require_ready``; ``None``: the caller built it).
        command_parsers: command id → ``from_question(question) -> str | None`` hooks of the
            command specs, handed to the engine's command inference.
        targets: ``(name) -> bot.repos.AnswerTarget`` (:meth:`bot.repos.RepositorySet.target`): what an
            answer for ``repo=name`` reads (engine, tools, readiness); ``None``: only ``engine``.
        workers: threads for the answers' CPU-bound stages (default
            :data:`bot.answer_loop.DEFAULT_ANSWER_WORKERS`).

    Attributes:
        answers: the :class:`bot.answer_loop.AnswerLoop` every answer runs on (started on first use,
            stopped by :meth:`aclose`).
    """

    def __init__(self, *, engine, model: ModelConfig, tools: ToolAdapter | None = None, metrics=None,
                 require_ready: Callable[[], None] | None = None,
                 command_parsers: Mapping[str, Callable[[str], str | None]] | None = None,
                 targets: Callable[[str], Any] | None = None,
                 workers: int = DEFAULT_ANSWER_WORKERS) -> None:
        self.engine = engine
        self._targets = targets
        self.model = model
        self.tools = tools
        self._metrics = metrics
        self._require_ready = require_ready
        self._command_parsers = dict(command_parsers or {})
        self._client: ModelClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self.answers = AnswerLoop(workers=workers)

    def _model_client(self) -> ModelClient | None:
        """The process's model client, built on first use and reused by every answer on this event
        loop (one HTTP connection pool and TLS context, not one per answer); ``None`` without a key."""
        if not self.model.enabled:
            return None
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client, self._client_loop = ModelClient(self.model), loop
        return self._client

    async def aclose(self) -> None:
        """Close the model client's connections and stop the answers' loop and pool (shutdown;
        a later answer starts them again)."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await self.answers.call(client.aclose())
        await self.answers.aclose()

    async def answer(self, question: str, *, identity: Identity | None = None, on_activity: Any = None,
                     on_token: Any = None, with_ai: bool = True, history: list[dict] | None = None,
                     top_k: int = DEFAULT_TOP_K, kind: str | None = None,
                     repo: str | None = None) -> AnswerResult:
        """Answer ``question`` (as typed; validated once, inside the orchestrator).

        Args:
            question: the question.
            identity: the asker, handed to commands run on their behalf.
            on_activity: ``callback(Activity)``, sync or async, as the stages happen.
            on_token: ``callback(str)``, sync or async, with answer text as it streams.
            with_ai: False → the local answer (sources and packed context).
            history: the thread so far (``[{"role": "user"|"assistant", "content"}]``).
            top_k: sources to retrieve (≥ 1).
            kind: only sources of this chunk kind.
            repo: the repository to answer from (a configured name, or ``"all"`` for every one,
                fused); ``None``: the default repository.

        Returns:
            a :class:`rag.answer.orchestrator.AnswerResult` (model failures are inside it, in ``error``).

        Raises:
            rag.errors.UserError: an empty question (``EmptyQuestionError``) and other bad input,
                or no index yet (``IndexBuildingError`` says how far the first build is), or an unknown
                or broken ``repo`` (``UnknownRepositoryError``, ``BrokenRepositoryError``).
        """
        engine, tools, require_ready = self.engine, self.tools, self._require_ready
        if repo is not None and self._targets is not None:
            target = self._targets(repo)
            engine, tools, require_ready = target.engine, target.tools, target.require_ready

        async def work(offload, activity, token) -> AnswerResult:  # on the answers' loop
            if require_ready is not None:
                await offload(require_ready)  # reads the index
            return await answer_question(
                question, engine=engine, model=self.model, identity=identity, tools=tools,
                on_activity=activity, on_token=token, with_ai=with_ai, history=history,
                top_k=top_k, kind=kind, command_parsers=self._command_parsers,
                tool_budget=ToolBudget(*self.model.tool_budget),
                model_client=self._model_client() if with_ai else None, offload=offload,
            )

        try:
            result = await self.answers.run(work, on_activity=on_activity, on_token=on_token)
        except Exception:
            if self._metrics is not None:
                self._metrics.record_ask(ok=False)
            raise
        if self._metrics is not None:
            self._metrics.record_ask(ok=result.error is None, input_tokens=result.usage.prompt_tokens,
                                     output_tokens=result.usage.completion_tokens,
                                     declined=result.grounding is not None and result.grounding.declined)
        return result
