"""The model client: one streamed chat-completion round over the ``openai`` SDK.

Why the SDK and not raw HTTP: it owns the SSE decoding, retries and error
types, and any OpenAI-compatible provider (OpenAI, Azure-style proxies, vLLM,
Ollama, OpenRouter …) speaks the same wire format. We only iterate its typed
chunks (``stream=True``); no SSE is parsed here.

What real providers do, and how each is handled in :meth:`ModelClient.complete`:

- ``: ping`` keep-alive comments — dropped by the SDK's SSE decoder.
- the usage chunk arrives with ``choices == []`` — usage is read from any chunk.
- no usage at all — estimated with :func:`rag.tokens.estimate_tokens` (one
  estimator for the whole engine) and flagged ``estimated``.
- ``"tool_calls": []`` on content deltas — harmless, nothing to accumulate.
- tool calls split across chunks — accumulated by ``index`` (id, name and
  argument text may each arrive in pieces).
- a stream that stops without ``[DONE]`` or ``finish_reason`` — the SDK ends the
  iteration silently; whatever arrived is returned (``finish_reason=None``).
- malformed SSE JSON (plain ``json.JSONDecodeError``), HTTP 4xx/5xx, connection
  failures and per-read timeouts — all become :class:`rag.errors.ProviderError`
  with a one-line reason for the user.
- a provider that hangs — the SDK's read timeout is per gap between bytes, so
  the caller must wrap the whole exchange in ``asyncio.timeout(timeout_s)``
  (``answer_question`` does).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from rag.activities import call_maybe_async
# The model configuration is parsed in rag.config (no SDK import); re-exported here.
from rag.config import (DEFAULT_AI_MODEL, DEFAULT_AI_TIMEOUT_S, DEFAULT_AI_URL, DEFAULT_MAX_RETRIES, ModelConfig,
                        normalize_base_url)
from rag.errors import ProviderError, UserError
from rag.tools.sanitize import redact_text
from rag.tokens import estimate_tokens
from rag.providers.base import error_detail
from rag.providers.tool_tags import ToolTagFilter

__all__ = [
    "DEFAULT_AI_URL",
    "DEFAULT_AI_MODEL",
    "DEFAULT_AI_TIMEOUT_S",
    "DEFAULT_MAX_RETRIES",
    "ModelConfig",
    "Usage",
    "ToolCall",
    "ModelTurn",
    "ModelClient",
    "normalize_base_url",
]

MAX_ERROR_DETAIL_CHARS = 200
"""Longest provider error detail quoted in a user-facing reason."""

TokenCallback = Callable[[str], "Awaitable[None] | None"]


@dataclass
class Usage:
    """Token usage, summed over rounds; ``estimated`` is True if any part was estimated."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.estimated or other.estimated,
        )

    def to_json(self) -> dict:
        """``{"input_tokens", "output_tokens", "total_tokens", "estimated"}``."""
        return {
            "input_tokens": self.prompt_tokens,
            "output_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "estimated": self.estimated,
        }


@dataclass
class ToolCall:
    """One tool call requested by the model; ``arguments`` is the raw JSON text as sent."""

    id: str
    name: str
    arguments: str = ""

    def to_message(self, *, arguments: str | None = None) -> dict:
        """The ``tool_calls`` entry of the assistant message that echoes this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments if arguments is None else arguments},
        }


@dataclass
class ModelTurn:
    """What one streamed request produced.

    Attributes:
        content: all content text, ``<tool_call>`` tags included (see rag.providers.tool_tags).
        tool_calls: calls accumulated by index, in index order; calls whose name
            never arrived are dropped.
        usage: the provider's usage, or an estimate.
        finish_reason: the provider's, or ``None`` when the stream just stopped.
        chunks: number of SDK chunks received.
        reasoning_chars: characters of ``reasoning_content`` seen (never forwarded).
    """

    content: str
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str | None
    chunks: int = 0
    reasoning_chars: int = 0


def provider_error(exc: BaseException) -> ProviderError:
    """Map an SDK or decoding exception to a one-line, user-facing :class:`ProviderError`."""
    if isinstance(exc, openai.APIStatusError):
        detail = " ".join(redact_text(error_detail(exc.body))[0].split())[:MAX_ERROR_DETAIL_CHARS]
        reason = f"the model provider returned HTTP {exc.status_code}"
        return ProviderError(f"{reason}: {detail}" if detail else reason)
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError("the model provider stopped responding (read timeout)")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("could not connect to the model provider")
    if isinstance(exc, json.JSONDecodeError):
        return ProviderError("the model provider sent a malformed stream event")
    return ProviderError(f"the model request failed ({type(exc).__name__})")


class _PartialCall:
    __slots__ = ("id", "name", "arguments")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def add(self, delta: Any) -> None:
        if delta.id:
            self.id = delta.id
        function = delta.function
        if function is None:
            return
        piece = function.name or ""
        # Most providers send the name once; some repeat the full name on every
        # delta, a few split it. Appending only what is new handles all three.
        if piece:
            self.name = piece if piece.startswith(self.name) else self.name + piece
        if function.arguments:
            self.arguments.append(function.arguments)


def _reasoning_text(delta: Any) -> str:
    extra = getattr(delta, "model_extra", None) or {}
    value = extra.get("reasoning_content") or extra.get("reasoning") or ""
    return value if isinstance(value, str) else ""


def estimate_usage(messages: list[dict], tools: list[dict] | None, content: str, calls: list[ToolCall]) -> Usage:
    """Estimate a round's usage when the provider sent none (rag.tokens.estimate_tokens)."""
    prompt = estimate_tokens(json.dumps(messages, ensure_ascii=False))
    if tools:
        prompt += estimate_tokens(json.dumps(tools))
    completion = estimate_tokens(content) + sum(estimate_tokens(c.name + c.arguments) for c in calls)
    return Usage(prompt, completion, prompt + completion, estimated=True)


class ModelClient:
    """A streamed chat-completion client for one configuration.

    Example::

        async with ModelClient(config) as client:
            turn = await client.complete(messages, tools=adapter.definitions(), on_token=print)

    Args:
        config: endpoint, key, model and timeouts.
        http_client: optional ``httpx2.AsyncClient`` passed to the SDK (a test or
            proxy seam; tests here point ``base_url`` at a local server instead).
    """

    def __init__(self, config: ModelConfig, *, http_client: Any = None) -> None:
        if not config.enabled:
            raise UserError("AI_API_KEY is not set: the model cannot be called.")
        self.config = config
        kwargs: dict[str, Any] = {}
        if http_client is not None:
            kwargs["http_client"] = http_client
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            **kwargs,
        )

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the SDK's HTTP connections."""
        await self._client.close()

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        on_token: TokenCallback | None = None,
    ) -> ModelTurn:
        """Send one streamed request and accumulate what comes back.

        Args:
            messages: chat messages (``{"role", "content", ...}``).
            tools: tool definitions; ``None`` or empty sends no tools at all.
            on_token: called with each visible text delta (``<tool_call>`` tags are
                held back, see rag.providers.tool_tags); may be sync or async.

        Returns:
            The :class:`ModelTurn`.

        Raises:
            ProviderError: HTTP error, connection failure, read timeout or malformed
                stream (one-line reason).
        """
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = tools
        content: list[str] = []
        partial: dict[int, _PartialCall] = {}
        usage_seen: Any = None
        finish_reason: str | None = None
        chunks = reasoning_chars = 0
        visible = ToolTagFilter()
        try:
            stream = await self._client.chat.completions.create(**request)
            try:
                async for chunk in stream:
                    chunks += 1
                    if chunk.usage is not None:
                        usage_seen = chunk.usage
                    for choice in chunk.choices or []:
                        if choice.index not in (0, None) or choice.delta is None:
                            continue
                        delta = choice.delta
                        if delta.content:
                            content.append(delta.content)
                            await _emit(on_token, visible.feed(delta.content))
                        reasoning_chars += len(_reasoning_text(delta))
                        for position, call in enumerate(delta.tool_calls or []):
                            index = call.index if call.index is not None else position
                            partial.setdefault(index, _PartialCall()).add(call)
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
            finally:
                await stream.close()
        except (openai.OpenAIError, json.JSONDecodeError) as exc:
            raise provider_error(exc) from exc
        await _emit(on_token, visible.flush())
        calls = [
            ToolCall(id=p.id or f"call_{index}", name=p.name, arguments="".join(p.arguments))
            for index, p in sorted(partial.items())
            if p.name
        ]
        text = "".join(content)
        if usage_seen is not None:
            usage = Usage(
                int(usage_seen.prompt_tokens or 0),
                int(usage_seen.completion_tokens or 0),
                int(usage_seen.total_tokens or 0)
                or int(usage_seen.prompt_tokens or 0) + int(usage_seen.completion_tokens or 0),
            )
        else:
            usage = estimate_usage(messages, tools, text, calls)
        return ModelTurn(text, calls, usage, finish_reason, chunks, reasoning_chars)


async def _emit(callback: TokenCallback | None, text: str) -> None:
    if text:
        await call_maybe_async(callback, text)
