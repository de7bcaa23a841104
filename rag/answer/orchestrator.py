"""``answer_question``: a question in, a grounded and cited answer out.

The pipeline (the seed's, stage names as in the activities):

    validate → command (a /sz-* command named in the question runs first)
             → retrieval (sources + images) → context (packed excerpts)
             → one of three paths:
                 ai       model answer with live tools (rag.answer.loop)
                 local    no-model answer (with_ai=False), packed context included
                 no_key   no AI_API_KEY: sources, images, command result and why
               and, when the model fails or says nothing usable,
                 fallback the local answer plus a one-line reason

A model answer's ``path:start-end`` citations are then checked against the
locations the model was shown (:mod:`rag.answer.citations`): the sources presented
with the answer (:attr:`AnswerResult.shown_sources`) are the ones it cites,
none when it declines ("This is not documented in the repository."), and a
citation of a location it was never shown is reported in the notes.

Every step becomes an :class:`rag.activities.Activity`, forwarded to
``on_activity`` as it happens; answer text is forwarded to ``on_token`` as it
streams. One JSON line per request goes to the ``slackzilla.ask`` logger:
lengths, top-k, retrieved paths and scores, latencies, token counts, the
failure stage — never the question text.

Example::

    engine = Engine.open(repo=Path("."))
    result = await answer_question("how are routes matched?", engine=engine,
                                   model=ModelConfig.from_env(), tools=adapter, on_token=print)
    print(result.answer)
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rag.activities import Activity, ActivityRecorder
from rag.answer.loop import DEFAULT_TOOL_BUDGET, LoopState, ToolBudget, run_model_loop
from rag.answer.prompting import (NOT_DOCUMENTED, build_messages, local_answer, snippet,
                             validate_history)
from rag.answer.citations import CitationCheck, check_citations, extract_citations
from rag.context.packer import DEFAULT_BUDGET_TOKENS
from rag.answer.question import MAX_QUESTION_CHARS, prepare_question
from rag.errors import ProviderError, UserError
from rag.answer.intent import QuestionParser, asks_to_run_command, infer_command, strip_command_mentions
from rag.providers.llm import ModelClient, ModelConfig, Usage
from rag.secrets import redact_text
from rag.tools.adapter import ToolAdapter, ToolResult
from rag.tools.command_names import SLASH_PREFIX, slash_name
from rag.types import ImageHit, Source

__all__ = ["AnswerEngine", "AnswerResult", "Offload", "answer_question", "ToolBudget",
           "DEFAULT_TOP_K", "DEFAULT_CONTEXT_BUDGET_TOKENS", "MAX_QUESTION_CHARS"]

ask_log = logging.getLogger("slackzilla.ask")
log = logging.getLogger(__name__)

DEFAULT_TOP_K = 8
"""Sources retrieved per question."""
DEFAULT_IMAGE_LIMIT = 6
DEFAULT_CONTEXT_BUDGET_TOKENS = DEFAULT_BUDGET_TOKENS
"""Token budget of the packed context (rag.context.packer's default, DESIGN.md section 3)."""
Offload = Callable[..., Awaitable[Any]]
"""``await offload(fn, *args, **kwargs)`` runs the blocking ``fn`` off the event loop and returns its
result (``asyncio.to_thread`` by default; the bot passes its bounded answer pool)."""
NO_KEY_REASON = ("No model is configured (AI_API_KEY is not set), so this answer lists the most relevant "
                 "sources instead of a written answer.")


class PackedContextLike(Protocol):
    text: str
    tokens_used: int
    budget: int
    files: list[str]
    code_contexts: int


class AnswerEngine(Protocol):
    """What ``answer_question`` needs from rag.engine.Engine."""

    repo_root: Path

    def retrieve(self, question: str, *, limit: int = 8, kind: str | None = None) -> list[Source]: ...

    def retrieve_images(self, question: str, *, limit: int = 6) -> list[ImageHit]: ...

    def absent_terms(self, question: str) -> list[str]: ...

    def pack_context(self, question: str, *, sources: list[Source], budget_tokens: int = DEFAULT_CONTEXT_BUDGET_TOKENS,
                     with_code: bool = True) -> PackedContextLike: ...


@dataclass
class AnswerResult:
    """Everything one answer produced.

    Attributes:
        question: the question as answered (stripped, possibly capped).
        answer: the text to show (model answer or local answer).
        mode: ``ai``, ``local`` (with_ai=False), ``no_key`` or ``fallback``.
        sources, images: what retrieval found, best first.
        command: ``{"id", "ok", "error", "output", ...}`` when a command ran first.
        activities: every activity, in order.
        response_rounds: requests sent to the model.
        trace: per-round and per-tool records (no content).
        usage: tokens summed over rounds (estimated where the provider sent none).
        context: packed-context metadata (``text`` included on the local path).
        tool_results: live tool calls made by the model.
        model: model name when a model was asked.
        error: one-line reason when a stage failed; ``failure_stage`` names it.
        notes: remarks for the user (question cut, stream ended early …).
        timings_ms: ``retrieval``, ``context``, ``ai``, ``total``.
        grounding: the citation check of a model answer (``None`` on the other paths).
        tool_budget: on the ``ai``/``fallback`` paths, the :class:`~rag.answer.loop.ToolBudget` and what
            was spent: ``{"max_rounds", "max_calls_per_round", "max_read_tokens", "tool_rounds",
            "tool_calls", "read_tokens"}``.
        cut_off: on the ``fallback`` path, what the model had written (redacted) when its stream failed or
            its deadline passed; ``answer`` then begins with it, followed by the local answer. ``None``
            otherwise.
        absent_terms: when retrieval found nothing, the question's words no indexed file mentions
            (:meth:`rag.engine.Engine.absent_terms`; words of letters only, so a pasted token is never
            echoed), named in the answer.
    """

    question: str
    answer: str = ""
    mode: str = "local"
    sources: list[Source] = field(default_factory=list)
    images: list[ImageHit] = field(default_factory=list)
    command: dict | None = None
    activities: list[Activity] = field(default_factory=list)
    response_rounds: int = 0
    trace: list[dict] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    context: dict | None = None
    tool_results: list[ToolResult] = field(default_factory=list)
    model: str | None = None
    error: str | None = None
    failure_stage: str | None = None
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    grounding: CitationCheck | None = None
    tool_budget: dict | None = None
    cut_off: str | None = None
    absent_terms: list[str] = field(default_factory=list)

    @property
    def shown_sources(self) -> list[Source]:
        """The sources to present with the answer.

        A model answer with supported citations shows what they cite, in citation order
        (retrieved sources, and code-context locations as sources without text); one that
        declines shows none (what was retrieved does not answer the question); any other
        answer (no model, a fallback, an answer from live tools alone, or one whose every
        citation is unsupported, which the notes say) shows every retrieved source, so the
        reader sees what the answer was drawn from.
        """
        if self.mode == "ai" and self.grounding is not None:
            if self.grounding.declined:
                return []
            if self.grounding.cited:
                return list(self.grounding.cited)
        return list(self.sources)

    def to_json(self) -> dict:
        """The ``--json`` / ``/api/ask`` shape (JSON-safe).

        The question itself is not echoed (only its length): callers already have
        it, and a pasted credential must not travel further than it did.
        """
        return {
            "question_chars": len(self.question),
            "answer": self.answer,
            "mode": self.mode,
            "sources": [{**s.to_json(), "snippet": snippet(s)} for s in self.sources],
            "images": [i.to_json() for i in self.images],
            "command": self.command,
            "activities": [a.to_json() for a in self.activities],
            "response_rounds": self.response_rounds,
            "trace": self.trace,
            "usage": self.usage.to_json(),
            "context": self.context,
            "tool_results": [r.to_json() for r in self.tool_results],
            "model": self.model,
            "error": self.error,
            "failure_stage": self.failure_stage,
            "notes": self.notes,
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "grounding": self.grounding.to_json() if self.grounding is not None else None,
            "tool_budget": self.tool_budget,
            "cut_off": self.cut_off,
            "absent_terms": self.absent_terms,
            "shown_sources": [{"path": s.path, "start": s.start, "end": s.end} for s in self.shown_sources],
        }


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


async def _run_command(result: AnswerResult, recorder: ActivityRecorder, tools: ToolAdapter | None,
                       question: str, command_id: str | None, identity: Any,
                       parsers: Mapping[str, QuestionParser] | None) -> tuple[ToolResult | None, bool]:
    """Run the inferred command; returns ``(command result, skip code context)``."""
    skip = asks_to_run_command(question)
    if tools is None or not (command_id or SLASH_PREFIX in question.lower()):
        return None, skip
    intent = infer_command(question, await tools.command_ids(), command_id=command_id, parsers=parsers)
    if intent is None:
        return None, skip
    await recorder.add("command", "started", f"Running {slash_name(intent.command_id)}", command=intent.command_id)
    outcome = await tools.run_command(intent.command_id, intent.text, identity=identity)
    await recorder.add("command", "completed" if outcome.ok else "failed",
                       f"{slash_name(intent.command_id)} " + ("finished" if outcome.ok else f"failed: {outcome.error}"),
                       **outcome.activity.metadata)
    result.command = {"id": intent.command_id, **outcome.to_json()}
    return outcome, intent.skip_code_context


def _secret_values(engine: Any):
    """The engine's secret-file redactor when it has one (a test double may not)."""
    redactor = getattr(engine, "secret_redactor", None)
    return redactor() if callable(redactor) else None


async def answer_question(
    question: str,
    *,
    engine: AnswerEngine,
    model: ModelConfig | None = None,
    command_id: str | None = None,
    identity: Any = None,
    tools: ToolAdapter | None = None,
    on_activity: Any = None,
    on_token: Any = None,
    with_ai: bool = True,
    top_k: int = DEFAULT_TOP_K,
    kind: str | None = None,
    history: list[dict] | None = None,
    budget_tokens: int = DEFAULT_CONTEXT_BUDGET_TOKENS,
    command_parsers: Mapping[str, QuestionParser] | None = None,
    tool_budget: ToolBudget | None = None,
    model_client: ModelClient | None = None,
    offload: Offload | None = None,
) -> AnswerResult:
    """Answer ``question`` about the engine's repository (see the module docstring).

    Args:
        question: the user's question; checked and cut by :func:`rag.answer.question.prepare_question`
            (over :data:`MAX_QUESTION_CHARS` characters: cut, with a note).
        engine: the retrieval engine (rag.engine.Engine).
        model: model configuration; ``None`` reads ``AI_*`` from the environment
            (only when ``with_ai``). Without a key the answer is the ``no_key`` path.
        command_id: run this registered command first (else inferred from ``/sz-*``).
        identity: the asking user, passed to commands (admin checks) — opaque here.
        tools: live tools; ``None`` → no tools and no command inference.
        on_activity: ``callback(Activity)``, sync or async, called as activities happen.
        on_token: ``callback(str)``, sync or async, called with answer text as it streams.
        with_ai: False → the local answer, with the packed context.
        top_k: sources to retrieve (≥ 1).
        kind: only sources of this chunk kind (``documentation``, ``source`` …).
        history: prior ``{"role", "content"}`` turns of the thread, for follow-ups.
        budget_tokens: token budget of the packed context.
        command_parsers: command id → ``from_question(question) -> str | None``: the command's own
            reading of its arguments from the question (the ``hash`` command's password grammar);
            injected by the caller from the command specs, so ``rag`` knows no command's grammar.
        model_client: a :class:`~rag.providers.llm.ModelClient` for ``model`` to reuse (its HTTP
            connection pool and TLS context are built once per process, not per answer); not
            closed here. ``None``: one is opened for this answer and closed after it.
        tool_budget: tool rounds, calls per round and repository read tokens the model may spend
            (default :data:`rag.answer.loop.DEFAULT_TOOL_BUDGET`: 3 rounds, 8 calls, 12,000 tokens).
            Repository tools are offered when ``tools`` has them
            (``ToolAdapter(handlers, repository=RepositoryTools(engine))``); what the model read
            through them is citable and listed in :attr:`AnswerResult.shown_sources`.
        offload: how the CPU-bound stages (retrieval, code context, packing) leave the event loop
            (:data:`Offload`; default ``asyncio.to_thread``). The bot hands in a small dedicated
            thread pool, so that many concurrent questions neither crowd the default executor
            (the state store's calls on the ack path use it) nor contend for the GIL in dozens
            of threads at once.

    Returns:
        An :class:`AnswerResult`; provider and retrieval failures are reported in
        it (``error``, ``failure_stage``), never raised.

    Raises:
        EmptyQuestionError: the question is empty or blank.
        UserError: ``top_k`` < 1, ``budget_tokens`` not positive, or ``AI_URL``/``AI_TIMEOUT_S`` malformed.
        ValueError: a ``history`` item is not ``{"role": "user"|"assistant", "content": str}``.
    """
    started = time.perf_counter()
    run = offload or asyncio.to_thread
    prepared = prepare_question(question, literals=_secret_values(engine))  # the one empty check and length policy (rag.answer.question)
    text = prepared.text
    if top_k < 1:
        raise UserError(f"top_k must be at least 1, got {top_k}.")
    validate_history(history)
    config = (model or ModelConfig.from_env()) if with_ai else None
    recorder = ActivityRecorder(on_activity)
    result = AnswerResult(question=text, activities=recorder.items, notes=list(prepared.notes))

    command, skip_code = await _run_command(result, recorder, tools, text, command_id, identity, command_parsers)

    await recorder.add("retrieval", "started", "Searching the repository", top_k=top_k, kind=kind)
    t0 = time.perf_counter()
    search = strip_command_mentions(text) if result.command else text
    try:
        result.sources = await run(engine.retrieve, search, limit=top_k, kind=kind)
        result.images = await run(engine.retrieve_images, search, limit=DEFAULT_IMAGE_LIMIT)
    except Exception as exc:  # an index problem must not cost the user the rest of the answer
        log.warning("retrieval failed", exc_info=True)
        result.error, result.failure_stage = f"repository search failed: {_one_line(exc)}", "retrieval"
    if not result.sources and not result.failure_stage:  # why nothing matched: the words no file mentions
        try:
            result.absent_terms = await run(engine.absent_terms, search)
        except Exception:  # an extra: the answer stands without it
            log.warning("absent-word check failed", exc_info=True)
    result.timings_ms["retrieval"] = _ms(t0)
    files = list(dict.fromkeys(s.path for s in result.sources))
    await recorder.add(
        "retrieval", "failed" if result.failure_stage else "completed",
        result.error or f"Found {len(result.sources)} sources in {len(files)} files",
        sources=[{"path": s.path, "start": s.start, "end": s.end, "score": round(s.score, 3)}
                 for s in result.sources[:5]],
        files=len(files), images=len(result.images), ms=round(result.timings_ms["retrieval"], 1))

    t0 = time.perf_counter()
    with_code = not (skip_code or result.failure_stage)
    try:
        packed = await run(engine.pack_context, search, sources=result.sources, budget_tokens=budget_tokens,
                           with_code=with_code)
    except UserError:
        raise
    except Exception as exc:  # code context is an extra: retry with the sources alone
        if not with_code:
            raise
        log.warning("code context failed; packing the sources alone", exc_info=True)
        result.error, result.failure_stage = f"code context failed: {type(exc).__name__}", "context"
        packed = await run(engine.pack_context, search, sources=result.sources, budget_tokens=budget_tokens,
                           with_code=False)
    result.timings_ms["context"] = _ms(t0)
    result.context = {"tokens_used": packed.tokens_used, "budget": packed.budget, "files": list(packed.files),
                      "code_contexts": packed.code_contexts, "code_context_skipped": skip_code}
    await recorder.add("context", "completed",
                       f"Packed {packed.tokens_used} of {packed.budget} tokens from {len(packed.files)} files"
                       + (" (command question: code context skipped)" if skip_code else ""),
                       **{k: v for k, v in result.context.items() if k != "files"}, files=len(packed.files))

    if config is None:
        result.mode = "local"
        result.context["text"] = packed.text
        result.answer = local_answer(result.sources, command=command, command_id=_id(result),
                                     absent=result.absent_terms)
    elif not config.enabled:
        result.mode = "no_key"
        await recorder.add("ai", "skipped", "No model configured (AI_API_KEY is not set)")
        result.answer = local_answer(result.sources, reason=NO_KEY_REASON, command=command, command_id=_id(result),
                                     absent=result.absent_terms)
    else:
        evidence = [(item.path, item.start, item.end) for item in packed.items]
        # Earlier answers' citations were checked when given; citing them again is grounded.
        evidence += [(c.path, c.start, c.end) for turn in history or ()
                     if turn.get("role") == "assistant" and isinstance(turn.get("content"), str)
                     for c in extract_citations(turn["content"])]
        literals = _secret_values(engine)
        await _model_answer(result, recorder, config, packed.text, command, tools, identity, on_token, history,
                            tool_budget or DEFAULT_TOOL_BUDGET,
                            client=model_client if model_client is not None and model_client.config == config else None,
                            redact=lambda text: redact_text(text, literals=literals)[0])
        if result.mode == "ai":  # secrets never reach the asker, from the model either (streamed text: loop.py)
            result.answer, redacted = redact_text(result.answer, literals=literals)
            if redacted:
                result.notes.append(f"{redacted} credential-shaped value(s) in the model's answer were redacted.")
                log.warning("the model's answer held %d credential-shaped value(s); redacted", redacted)
        # Lines the model read through repository tools (readFile, searchCode …) are evidence too.
        evidence += [location for r in result.tool_results for location in r.evidence]
        if result.mode == "ai":
            _check_grounding(result, evidence)
    result.timings_ms["total"] = _ms(started)
    _log_request(result, top_k=top_k, kind=kind)
    return result


def _check_grounding(result: AnswerResult, evidence: list[tuple[str | None, int | None, int | None]]) -> None:
    """Check the model answer's citations (:func:`rag.answer.citations.check_citations`); note unsupported ones."""
    check = check_citations(result.answer, sources=result.sources,
                            evidence=[(p, a, b) for p, a, b in evidence if p and a is not None and b is not None],
                            declined_phrase=NOT_DOCUMENTED)
    result.grounding = check
    if check.unsupported:
        labels = ", ".join(c.label() for c in check.unsupported[:3])
        more = f" and {len(check.unsupported) - 3} more" if len(check.unsupported) > 3 else ""
        result.notes.append(f"Not among the excerpts the model was given, so not linked: {labels}{more}.")


def _one_line(exc: BaseException) -> str:
    """``"IndexUnavailableError: index is locked"`` — first line only, at most 200 characters."""
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _id(result: AnswerResult) -> str | None:
    return result.command["id"] if result.command else None


async def _model_answer(result: AnswerResult, recorder: ActivityRecorder, config: ModelConfig, context_text: str,
                        command: ToolResult | None, tools: ToolAdapter | None, identity: Any, on_token: Any,
                        history: list[dict] | None, budget: ToolBudget = DEFAULT_TOOL_BUDGET,
                        client: ModelClient | None = None, redact: Any = None) -> None:
    """The ``ai`` path, falling back to the local answer with a one-line reason on any failure."""
    result.model = config.model
    state = LoopState(build_messages(result.question, context_text, command=command, command_id=_id(result),
                                     history=history, absent=result.absent_terms))
    t0 = time.perf_counter()
    reason = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            if client is None:
                client = await stack.enter_async_context(ModelClient(config))
            async with asyncio.timeout(config.timeout_s):
                await run_model_loop(client, state, tools=tools, identity=identity, recorder=recorder,
                                     on_token=on_token, budget=budget, redact=redact)
    except TimeoutError:
        reason = f"the model did not finish within {config.timeout_s:g} s"
    except ProviderError as exc:
        reason = str(exc)
    result.timings_ms["ai"] = _ms(t0)
    result.response_rounds, result.usage, result.trace = state.rounds, state.usage, state.trace
    result.tool_results = state.tool_results
    result.tool_budget = {**budget.to_json(), "tool_rounds": state.tool_rounds,
                          "tool_calls": len(state.tool_results), "read_tokens": state.read_tokens}
    result.notes += state.notes
    if reason is None and state.answer is None:
        reason = "the model returned no usable answer" + (f" ({state.no_answer})" if state.no_answer else "")
    if reason is None:
        result.mode, result.answer = "ai", state.answer or ""
        return
    await recorder.add("ai", "failed", f"No model answer: {reason}", round=state.rounds)
    result.mode = "fallback"
    result.error, result.failure_stage = reason[:1].upper() + reason[1:], "ai"
    written = (redact(state.partial) if redact is not None else state.partial).strip()
    if written:  # the asker watched it stream: it stays, said to be cut off, before the sources
        result.cut_off = written
        result.answer = written + "\n\n" + local_answer(
            result.sources, reason=f"The model's answer was cut off: {reason}.", command=command,
            command_id=_id(result), tool_results=state.tool_results, absent=result.absent_terms)
        return
    result.answer = local_answer(result.sources, reason=f"No model answer: {reason}.", command=command,
                                 command_id=_id(result), tool_results=state.tool_results, absent=result.absent_terms)


def _log_request(result: AnswerResult, *, top_k: int, kind: str | None) -> None:
    """One JSON line on ``slackzilla.ask``: metadata only, never the question text."""
    record = {
        "event": "ask",
        "question_chars": len(result.question),
        "top_k": top_k,
        "kind": kind,
        "mode": result.mode,
        "retrieved": [{"path": s.path, "start": s.start, "end": s.end, "score": round(s.score, 4)}
                      for s in result.sources],
        "images": len(result.images),
        "command": _id(result),
        "retrieval_ms": round(result.timings_ms.get("retrieval", 0.0), 1),
        "context_ms": round(result.timings_ms.get("context", 0.0), 1),
        "context_tokens": (result.context or {}).get("tokens_used"),
        "model": result.model,
        "rounds": result.response_rounds,
        "tool_calls": [r.name for r in result.tool_results],
        "prompt_tokens": result.usage.prompt_tokens,
        "response_tokens": result.usage.completion_tokens,
        "total_tokens": result.usage.total_tokens,
        "usage_estimated": result.usage.estimated,
        "ai_ms": round(result.timings_ms.get("ai", 0.0), 1),
        "total_ms": round(result.timings_ms.get("total", 0.0), 1),
        "failure_stage": result.failure_stage,
        "error": result.error,  # the one-line reason (provider messages are redacted); never the question
        "citations": result.grounding.to_json() if result.grounding is not None else None,
    }
    ask_log.info(json.dumps(record))
