"""The model/tool loop of one answer.

Round by round (the seed's algorithm):

1. Send the messages with the tool definitions; stream visible text to ``on_token``.
2. If the model called tools (accumulated by index, see rag.providers.llm), echo its
   assistant message, run the calls **sequentially** through the adapter and
   append each result as a ``tool`` message labelled as live runtime evidence;
   go to 1. A call whose arguments are not JSON gets the adapter's structured
   error and the loop goes on.
3. A model that writes ``<tool_call>name</tool_call>`` as text instead gets
   that tool called once per answer, exactly as if it had used ``tool_calls``.
   So does one whose whole answer is an untagged JSON call of a known tool
   (``{"name": "getStatus", "arguments": {}}``): it is run, never posted.
4. At most :attr:`ToolBudget.max_calls_per_round` calls of one round run; the others get
   a ``refused`` result (every call still gets its tool message).
5. After :attr:`ToolBudget.max_rounds` tool rounds, append the tool-limit system
   prompt and make one final request with tools disabled.
6. Otherwise the round's text (tags removed) is the answer.

Repository tools (``searchCode``, ``readFile`` …, offered when the adapter has an
engine) also spend :attr:`ToolBudget.max_read_tokens`: each call may return at most
what is left (its output is trimmed to fit), and once it is spent further calls get a
``budget_exhausted`` tool error saying so. ``LoopState.read_tokens`` counts what was read.

The loop writes into a :class:`LoopState` owned by the caller, so whatever
was gathered (usage, rounds, tool results) survives a deadline or a provider
failure raised out of it.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from rag.activities import ActivityRecorder, call_maybe_async
from rag.config import DEFAULT_TOOL_CALLS_PER_ROUND, DEFAULT_TOOL_READ_TOKENS, DEFAULT_TOOL_ROUNDS
from rag.answer.prompting import limit_prompt_message, tool_message
from rag.providers.llm import ModelClient, ToolCall, Usage
from rag.providers.tool_tags import parse_bare_tool_call, parse_textual_tool_calls, strip_tool_tags
from rag.tools.adapter import ToolAdapter, ToolResult

__all__ = ["MAX_TOOL_CALLS_PER_ROUND", "MAX_TOOL_ROUNDS", "DEFAULT_MAX_READ_TOKENS", "ToolBudget", "LoopState",
           "run_model_loop"]

MAX_TOOL_ROUNDS = DEFAULT_TOOL_ROUNDS
"""Tool rounds before the tool-limit prompt (the seed's limit; ``AI_TOOL_ROUNDS``)."""
MAX_TOOL_CALLS_PER_ROUND = DEFAULT_TOOL_CALLS_PER_ROUND
"""Tool calls run per round; more are refused (30 ``runCommand`` hash calls in one round
once cost 16 s of CPU for one answer; ``AI_TOOL_CALLS_PER_ROUND``)."""
DEFAULT_MAX_READ_TOKENS = DEFAULT_TOOL_READ_TOKENS
"""Tokens one answer may read through repository tools (three times the packed context's 4,000;
``AI_TOOL_READ_TOKENS``)."""
ROUND_SEPARATOR = "\n\n"
"""Streamed between rounds when an earlier round already showed text."""


@dataclass(frozen=True)
class ToolBudget:
    """How much tool use one answer may spend; pass one to ``answer_question(tool_budget=…)``.

    Attributes:
        max_rounds: model rounds with tools enabled before the tool-limit prompt and a final
            answer without tools (default :data:`MAX_TOOL_ROUNDS` = 3; ``0`` → no tools at all).
        max_calls_per_round: tool calls run per round, the others refused (default
            :data:`MAX_TOOL_CALLS_PER_ROUND` = 8).
        max_read_tokens: estimated tokens all repository tool outputs of the answer may hold
            together (default :data:`DEFAULT_MAX_READ_TOKENS` = 12,000); live tools do not count.

    Raises:
        ValueError: a negative value, or ``max_calls_per_round`` < 1.
    """

    max_rounds: int = MAX_TOOL_ROUNDS
    max_calls_per_round: int = MAX_TOOL_CALLS_PER_ROUND
    max_read_tokens: int = DEFAULT_MAX_READ_TOKENS

    def __post_init__(self) -> None:
        if self.max_rounds < 0 or self.max_calls_per_round < 1 or self.max_read_tokens < 0:
            raise ValueError(f"invalid tool budget: need max_rounds >= 0, max_calls_per_round >= 1, "
                             f"max_read_tokens >= 0 (got {self.max_rounds}, {self.max_calls_per_round}, "
                             f"{self.max_read_tokens})")

    def to_json(self) -> dict:
        return {"max_rounds": self.max_rounds, "max_calls_per_round": self.max_calls_per_round,
                "max_read_tokens": self.max_read_tokens}


DEFAULT_TOOL_BUDGET = ToolBudget()


@dataclass
class LoopState:
    """Everything the loop gathers; read it even after an exception.

    Attributes:
        messages: the conversation sent to the model (grows each round).
        usage: summed over rounds.
        rounds: requests sent to the model.
        trace: one record per round and per tool call (JSON-safe, no content).
        tool_results: tool results in call order.
        answer: the final text, ``None`` until a round produced usable text.
        notes: one-line remarks for the user (e.g. a stream cut short).
        tool_rounds: rounds in which tools were run.
        read_tokens: estimated tokens returned by repository tools (see :class:`ToolBudget`).
        no_answer: when the last round gave no usable text, why, in a few words for the user
            (``"it kept calling tools after its 3 tool rounds"``); ``None`` otherwise.
        partial: the visible text of a round that failed while it streamed (the connection lost, a
            malformed event, the deadline passed), as the model wrote it (not yet redacted); ``""``
            when no round failed or the failed one had written nothing.
    """

    messages: list[dict]
    usage: Usage = field(default_factory=Usage)
    rounds: int = 0
    trace: list[dict] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    answer: str | None = None
    notes: list[str] = field(default_factory=list)
    tool_rounds: int = 0
    read_tokens: int = 0
    no_answer: str | None = None
    partial: str = ""


PEM_BEGIN, PEM_END = "-----BEGIN ", "-----END "
"""The armour lines of a PEM block (RFC 7468), the one credential that spans lines."""


class _TokenStream:
    """Forwards visible text, redacted; separates rounds so interim text never runs into the answer.

    With ``redact`` (``text -> redacted text``, :func:`rag.secrets.redact_text` with the repository's
    secret-file values) the text is held back from its last whitespace: a credential is one unbroken
    run of characters, so what is forwarded is the redaction of everything up to a word boundary (a
    PEM block, up to its end line), and a secret the model writes is replaced before any part of it
    is sent. Should a later redaction rewrite text already forwarded (a value split by a space, say),
    nothing more of that round is forwarded: the final answer, redacted as a whole, replaces what was
    streamed.
    """

    def __init__(self, on_token: Any, redact: Any = None) -> None:
        self._on_token = on_token
        self._redact = redact
        self._emitted = False
        self._round_started = False
        self._raw = ""      # this round's text as the model wrote it
        self._settled = 0   # raw[:settled] is whole lines, forwarded as redacted, final
        self._sent = ""     # the redaction of raw[settled:…] forwarded so far
        self._stalled = False
        self._visible: list[str] = []  # this round's visible text, streamed or not

    def round_text(self) -> str:
        """The visible text of the current round so far, as the model wrote it (not redacted)."""
        return "".join(self._visible)

    async def feed(self, text: str) -> None:
        if text:
            self._visible.append(text)
        if self._on_token is None or not text:
            return
        if self._redact is None:
            await self._forward(text)
            return
        self._raw += text
        raw = self._raw
        block = raw.rfind(PEM_BEGIN)
        if block >= 0:
            end = raw.find(PEM_END, block)
            if end < 0 or raw.find("-----", end + len(PEM_END)) < 0:
                raw = raw[:block]  # a PEM block (a private key) spans lines: held back until its end line
        cut = max(raw.rfind(" "), raw.rfind("\n"), raw.rfind("\t"))
        if cut >= self._settled:
            await self._release(cut + 1)

    async def _release(self, upto: int) -> None:
        """Forward the redaction of ``raw[:upto]``; only the lines not yet settled are redacted again
        (the patterns of :func:`rag.secrets.redact_text` hold within a line, but for PEM blocks, which
        :meth:`feed` releases whole), so a long answer costs linear time, not quadratic."""
        if self._stalled:
            return
        segment = self._raw[self._settled:upto]
        clean = self._redact(segment)
        if not clean.startswith(self._sent):
            self._stalled = True
            return
        delta = clean[len(self._sent):]
        if delta:
            await self._forward(delta)
        self._sent = clean
        newline = segment.rfind("\n")
        if newline >= 0 and PEM_BEGIN not in segment:
            lines = self._redact(segment[:newline + 1])
            if clean.startswith(lines):
                self._settled += newline + 1
                self._sent = clean[len(lines):]

    async def _forward(self, text: str) -> None:
        if self._emitted and not self._round_started:
            text = ROUND_SEPARATOR + text
        self._round_started = True
        self._emitted = True
        await call_maybe_async(self._on_token, text)

    async def end_round(self) -> None:
        """Forward what the round held back (redacted), and start a new round."""
        if self._redact is not None and self._on_token is not None and self._raw:
            await self._release(len(self._raw))
        self._raw, self._settled, self._sent, self._stalled = "", 0, "", False
        self._round_started = False
        self._visible = []


def _echo_arguments(arguments: str) -> str:
    """Arguments as echoed back in the assistant message: invalid JSON becomes ``{}``.

    Some OpenAI-compatible servers reject a conversation whose earlier tool call
    holds invalid JSON; the tool message explains the error instead.
    """
    try:
        json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return "{}"
    return arguments or "{}"


async def run_model_loop(client: ModelClient, state: LoopState, *, tools: ToolAdapter | None,
                         identity: Any, recorder: ActivityRecorder, on_token: Any = None,
                         max_tool_rounds: int | None = None, budget: ToolBudget | None = None,
                         redact: Any = None) -> None:
    """Run rounds until an answer, filling ``state``.

    Args:
        budget: the answer's :class:`ToolBudget` (default :data:`DEFAULT_TOOL_BUDGET`).
        max_tool_rounds: overrides ``budget.max_rounds`` (kept for older callers).
        redact: ``text -> text``, applied to what reaches ``on_token`` (credentials the model writes
            are replaced before any part of them is streamed; see :class:`_TokenStream`).

    Raises:
        ProviderError: the provider failed (``state`` keeps what was gathered).
    """
    budget = budget or DEFAULT_TOOL_BUDGET
    if max_tool_rounds is None:
        max_tool_rounds = budget.max_rounds
    max_calls = budget.max_calls_per_round
    definitions = tools.definitions() if tools is not None else None
    tool_names = frozenset(d["function"]["name"] for d in definitions or [])
    textual_used = False
    stream = _TokenStream(on_token, redact)
    model = client.config.model
    for index in range(max_tool_rounds + 1):
        number = index + 1
        tools_enabled = definitions is not None and index < max_tool_rounds
        if definitions is not None and index == max_tool_rounds:
            state.messages.append(limit_prompt_message())
            await recorder.add("ai", "started", f"Tool limit reached; asking {model} for a final answer",
                               round=number, model=model, tools_enabled=False)
        else:
            await recorder.add("ai", "started", f"Asking {model} (round {number})",
                               round=number, model=model, tools_enabled=tools_enabled)
        try:
            turn = await client.complete(state.messages, tools=definitions if tools_enabled else None,
                                         on_token=stream.feed)
        except BaseException:  # a provider error, or the deadline's cancellation: keep what was written
            state.partial = stream.round_text()
            raise
        await stream.end_round()
        state.rounds += 1
        state.usage = state.usage + turn.usage
        if turn.reasoning_chars:
            await recorder.add("reasoning", "completed", f"{model} reasoned before answering",
                               round=number, chars=turn.reasoning_chars)
        calls = list(turn.tool_calls) if tools_enabled else []
        textual = False
        if not calls and tools_enabled and not textual_used:
            found = parse_textual_tool_calls(turn.content)
            bare = None if found else parse_bare_tool_call(turn.content, tool_names)
            if bare is not None:
                found = [bare]
            if found:
                textual_used = textual = True
                calls = [ToolCall(f"call_text_{uuid.uuid4().hex[:12]}", found[0].name, found[0].arguments)]
        state.trace.append({
            "round": number, "tools_enabled": tools_enabled, "finish_reason": turn.finish_reason,
            "chunks": turn.chunks, "content_chars": len(turn.content), "tool_calls": [c.name for c in calls],
            "textual_tool_call": textual, "usage": turn.usage.to_json(),
        })
        await recorder.add("ai", "completed",
                           f"{model} asked for {len(calls)} tool call(s)" if calls
                           else f"{model} answered ({len(turn.content)} characters)",
                           round=number, tool_calls=len(calls), finish_reason=turn.finish_reason,
                           tokens=turn.usage.total_tokens)
        if calls and tools is not None:
            visible = strip_tool_tags(turn.content).strip()
            state.messages.append({
                "role": "assistant",
                "content": visible or None,
                "tool_calls": [c.to_message(arguments=_echo_arguments(c.arguments)) for c in calls],
            })
            state.tool_rounds += 1
            for position, call in enumerate(calls):
                result = await _run_call(tools, call, position=position, count=len(calls), state=state,
                                         budget=budget, max_calls=max_calls, identity=identity)
                await recorder.record(result.activity)
                state.tool_results.append(result)
                state.read_tokens += result.tokens_read
                state.messages.append(tool_message(call.id, result))
                state.trace.append({"round": number, "tool": result.name, "ok": result.ok,
                                    "error_code": result.error_code, "duration_ms": round(result.duration_ms, 1),
                                    "truncated": result.truncated, "redactions": result.redactions})
            continue
        answer = strip_tool_tags(turn.content).strip()
        written_call = bool(answer) and parse_bare_tool_call(answer, tool_names) is not None
        if written_call:
            answer = ""  # a tool call written as the answer, once tools are off: never posted
        if answer and turn.finish_reason is None:
            state.notes.append("The model's stream ended early; the answer may be incomplete.")
        elif answer and turn.finish_reason == "length":
            state.notes.append("The model hit its output limit; the answer is cut short.")
        state.answer = answer or None
        if state.answer is None:
            state.no_answer = _why_no_answer(turn, written_call=written_call, tool_rounds=state.tool_rounds)
        return


def _why_no_answer(turn: Any, *, written_call: bool, tool_rounds: int) -> str:
    """Why a last round (a :class:`~rag.providers.llm.ModelTurn`) gave no answer, in a few words for the user."""
    if turn.tool_calls or written_call:
        how = "kept calling tools" if turn.tool_calls else "wrote a tool call as its answer"
        if tool_rounds:
            return f"it {how} after its {tool_rounds} tool round{'' if tool_rounds == 1 else 's'}"
        return f"it {how}, with no tools offered"
    if turn.finish_reason == "length":
        return "it hit its output limit before writing any answer"
    if turn.finish_reason == "content_filter":
        return "the provider's content filter withheld it"
    if turn.reasoning_chars:
        return "it reasoned but wrote no answer"
    return "its reply was empty"


async def _run_call(tools: ToolAdapter, call: ToolCall, *, position: int, count: int, state: LoopState,
                    budget: ToolBudget, max_calls: int, identity: Any) -> ToolResult:
    """One tool call of a round, or its refusal (over the per-round cap, or the read budget spent)."""
    if position >= max_calls:
        return tools.refuse(call.name, "refused", f"not run: at most {max_calls} tool calls per round; "
                                                  f"this round asked for {count}", arguments_json=call.arguments)
    if not tools.is_repository_tool(call.name):
        return await tools.call(call.name, call.arguments, identity=identity)
    remaining = budget.max_read_tokens - state.read_tokens
    if remaining <= 0:
        return tools.refuse(call.name, "budget_exhausted",
                            f"not run: this answer's repository read budget ({budget.max_read_tokens} tokens) is "
                            f"spent; answer now from what you have already read, citing it",
                            arguments_json=call.arguments)
    return await tools.call(call.name, call.arguments, identity=identity, max_read_tokens=remaining)
