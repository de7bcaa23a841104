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
  argument text may each arrive in pieces); deltas without ``index`` continue the
  last call unless a new ``id`` or another tool's name starts a new one; arguments
  sent as a JSON object (llama-server, TGI) are serialised.
- ``event: ping`` blocks and bare ``retry:`` fields — dropped by a filter on the
  SDK's own SSE decoder (the SDK would fail to read their empty data as JSON).
- keep-alives after ``finish_reason`` — the stream is closed once usage arrived or
  :data:`FINISH_GRACE_S` passed, so a complete answer is never lost to the deadline.
- ``429`` with a long ``Retry-After`` — not retried past :data:`MAX_RETRY_WAIT_S`;
  the reason tells the user when to try again. A ``400`` naming ``stream_options``
  — asked again once without it (usage is then estimated), remembered per client.
- an error event inside the stream — its message is kept in the reason.
- ``<think>…</think>`` in the content — neither streamed nor returned.
- bytes that are not UTF-8 — decoded as U+FFFD, as the SSE standard says (the SDK would
  raise); JSON escapes of lone UTF-16 surrogates (``"\\ud800"``) in content, tool names and
  arguments — U+FFFD too (no terminal, JSON encoder or Slack can carry them).
- a stream that stops without ``[DONE]`` or ``finish_reason`` — the SDK ends the
  iteration silently; whatever arrived is returned (``finish_reason=None``).
- malformed SSE JSON (plain ``json.JSONDecodeError``), a chunk of the wrong shape (the SDK
  builds chunks without validating them: a ``null`` event, a number where text belongs; see
  :func:`_chunk_problem`), HTTP 4xx/5xx, connection failures and per-read timeouts — all
  become :class:`rag.errors.ProviderError` with a one-line reason for the user.
- usage counts that are not non-negative numbers (``"lots"``, ``1e400``) — estimated, as if absent.
- a provider that hangs — the SDK's read timeout is per gap between bytes, so
  the caller must wrap the whole exchange in ``asyncio.timeout(timeout_s)``
  (``answer_question`` does).
"""
from __future__ import annotations

import asyncio
import codecs
import email.utils
import json
import math
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai
from openai._streaming import SSEDecoder  # the SDK's own SSE decoder, filtered below (no SSE parsing here)

from rag.activities import call_maybe_async
# The model configuration is parsed in rag.config (no SDK import); re-exported here.
from rag.config import (DEFAULT_AI_MODEL, DEFAULT_AI_TIMEOUT_S, DEFAULT_AI_URL, DEFAULT_MAX_RETRIES, ModelConfig,
                        normalize_base_url)
from rag.errors import ProviderError, UserError
from rag.tools.sanitize import REDACTED, redact_text
from rag.tokens import estimate_tokens
from rag.providers.base import error_detail
from rag.providers.tool_tags import REASONING_TAGS, TOOL_CALL_TAGS, TagFilter, strip_reasoning

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
FINISH_GRACE_S = 2.0
"""After ``finish_reason`` arrives, how long to wait for the usage chunk (or the end of the
stream) before closing it: a provider that keeps sending keep-alives after the answer is
complete must not hold the answer until the deadline."""
MAX_RETRY_WAIT_S = 10.0
"""Longest ``Retry-After`` the SDK may sleep before retrying inside one answer; a provider
asking for longer gets no retry and the user is told when to try again."""

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


def _error_detail(body: Any, fallback: str = "", *, api_key: str | None = None) -> str:
    """The provider's error message (:func:`rag.providers.base.error_detail`), redacted (``api_key``, the
    configured key, too: some gateways quote it whole in a 401), on one line, bounded."""
    detail = error_detail(body) or fallback
    if api_key:
        detail = detail.replace(api_key, REDACTED)
    return " ".join(redact_text(detail)[0].split())[:MAX_ERROR_DETAIL_CHARS]


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` (or ``retry-after-ms``) header asks for; ``None`` if absent or unreadable.

    Accepts both forms of RFC 9110 §10.2.3: a number of seconds or an HTTP date.
    """
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000
            return value if math.isfinite(value) and value >= 0 else None
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _wait_words(seconds: float) -> str:
    if seconds >= 90:
        return f"{math.ceil(seconds / 60)} minutes"
    return f"{math.ceil(seconds)} seconds" if seconds >= 2 else "a moment"


def provider_error(exc: BaseException, *, api_key: str | None = None) -> ProviderError:
    """Map an SDK or decoding exception to a one-line, user-facing :class:`ProviderError`.

    HTTP errors quote the provider's message (redacted, ``api_key`` included); a 429 says when
    to try again (its ``Retry-After``); an error sent inside the stream keeps the provider's message.
    """
    if isinstance(exc, openai.APIStatusError):
        detail = _error_detail(exc.body, api_key=api_key)
        reason = f"the model provider returned HTTP {exc.status_code}"
        reason = f"{reason}: {detail}" if detail else reason
        if exc.status_code == 429:
            wait = retry_after_seconds(getattr(exc.response, "headers", None))
            when = f"try again in {_wait_words(wait)}" if wait is not None else "try again shortly"
            reason = f"{reason} (the provider is rate-limiting requests; {when})"
        return ProviderError(reason)
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError("the model provider stopped responding (read timeout)")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("could not connect to the model provider")
    if isinstance(exc, json.JSONDecodeError):
        return ProviderError("the model provider sent a malformed stream event")
    if isinstance(exc, openai.APIError) and type(exc) is openai.APIError:  # an error event inside the stream
        detail = _error_detail(exc.body, fallback=exc.message, api_key=api_key)
        return ProviderError(f"the model provider reported an error: {detail}" if detail
                             else "the model provider reported an error mid-stream")
    return ProviderError(f"the model request failed ({type(exc).__name__})")


def _rejects_stream_options(exc: BaseException) -> bool:
    """A 400/422 that names ``stream_options`` (providers that do not know the field)."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return False
    text = f"{exc.message} {json.dumps(exc.body, default=str) if exc.body is not None else ''}"
    return re.search(r"stream_options|include_usage", text) is not None


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """``text`` with lone UTF-16 surrogates (from JSON escapes such as ``"\\ud800"``) replaced by U+FFFD."""
    return _SURROGATE_RE.sub("\ufffd", text)


class _TolerantSSEDecoder(SSEDecoder):
    """The SDK's SSE decoder, minus events that carry no data, over valid UTF-8.

    Some providers send ``event: ping`` blocks or a bare ``retry: 3000`` field between
    chunks; the SDK hands them on and then fails to read their empty data as JSON. An
    event with empty data, or a ``ping``/``heartbeat`` event, is a keep-alive: dropped.
    Bytes that are not UTF-8 reach the SDK as U+FFFD (its decoder would raise
    ``UnicodeDecodeError``; the SSE standard decodes with replacement).
    """

    @staticmethod
    def _keeps(sse: Any) -> bool:
        if sse.event in ("ping", "heartbeat", "keepalive", "keep-alive"):
            return False
        return bool(sse.data.strip())

    def iter_bytes(self, iterator):  # type: ignore[override]
        return (sse for sse in super().iter_bytes(_valid_utf8_sync(iterator)) if self._keeps(sse))

    async def aiter_bytes(self, iterator):  # type: ignore[override]
        async for sse in super().aiter_bytes(_valid_utf8(iterator)):
            if self._keeps(sse):
                yield sse


def _valid_utf8_sync(iterator: Iterator[bytes]) -> Iterator[bytes]:
    """The byte chunks re-encoded as valid UTF-8 (a character split across chunks is kept whole)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for piece in iterator:
        yield decoder.decode(piece).encode("utf-8")
    yield decoder.decode(b"", final=True).encode("utf-8")


async def _valid_utf8(iterator: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """:func:`_valid_utf8_sync` for the SDK's async byte stream."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    async for piece in iterator:
        yield decoder.decode(piece).encode("utf-8")
    yield decoder.decode(b"", final=True).encode("utf-8")


class _ProviderClient(openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` with two provider quirks handled through the SDK's own hooks.

    - its SSE decoder drops keep-alive events (:class:`_TolerantSSEDecoder`);
    - a 429/503 whose ``Retry-After`` exceeds :data:`MAX_RETRY_WAIT_S` is not retried
      (the SDK would sleep up to 2 minutes, past the answer's deadline); the error says
      when to try again instead.
    """

    def _make_sse_decoder(self):  # noqa: D401 - SDK hook
        return _TolerantSSEDecoder()

    def _should_retry(self, response) -> bool:  # SDK hook (openai._base_client.BaseClient)
        wait = retry_after_seconds(response.headers)
        if wait is not None and wait > MAX_RETRY_WAIT_S:
            return False
        return super()._should_retry(response)


async def _chunks_until_finished(stream: Any, is_finished: Callable[[], bool]) -> AsyncIterator[Any]:
    """The stream's chunks; once ``is_finished()``, each further chunk is awaited at most
    :data:`FINISH_GRACE_S` (a stream kept open by keep-alives then ends here)."""
    iterator = stream.__aiter__()
    while True:
        try:
            if is_finished():
                item = await asyncio.wait_for(iterator.__anext__(), FINISH_GRACE_S)
            else:
                item = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except (asyncio.TimeoutError, TimeoutError):
            return
        yield item


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
            piece = _valid_text(piece)
            self.name = piece if piece.startswith(self.name) else self.name + piece
        arguments = function.arguments
        if isinstance(arguments, (dict, list)):
            # llama-server and TGI send the arguments as a JSON value, not as text.
            arguments = json.dumps(arguments, ensure_ascii=False)
        elif arguments is not None and not isinstance(arguments, str):
            arguments = str(arguments)
        if arguments:
            self.arguments.append(_valid_text(arguments))

    def starts_another(self, delta: Any) -> bool:
        """Whether an index-less delta begins a new call rather than continuing this one.

        A delta with a different ``id``, or one naming another tool after this call's
        arguments began, is a new call (``getStatus`` then ``getMetrics``); a repeated or
        split name and argument pieces continue this call.
        """
        if delta.id and self.id and delta.id != self.id:
            return True
        function = delta.function
        name = (function.name or "") if function is not None else ""
        return bool(name and self.arguments and name != self.name)


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


def _chunk_problem(chunk: Any) -> str | None:
    """What makes a streamed chunk unreadable, or ``None`` when it has the shape of a ``chat.completion.chunk``.

    The SDK builds chunks without validating them (``construct``), so a provider's ``data: null``
    or a number where text belongs would otherwise raise ``AttributeError``/``TypeError`` out of
    :meth:`ModelClient.complete`. Returns a few words for the user (``"content that is not text"``).
    """
    if not isinstance(chunk, openai.BaseModel) or not hasattr(chunk, "choices"):
        return "an event that is not an object"
    if chunk.choices is not None and not isinstance(chunk.choices, list):
        return "choices that are not a list"
    for choice in chunk.choices or []:
        if not isinstance(choice, openai.BaseModel):
            return "a choice that is not an object"
        delta = getattr(choice, "delta", None)
        if delta is None:
            continue
        if not isinstance(delta, openai.BaseModel):
            return "a delta that is not an object"
        if getattr(delta, "content", None) is not None and not isinstance(delta.content, str):
            return "content that is not text"
        calls = getattr(delta, "tool_calls", None)
        if calls is not None and not isinstance(calls, list):
            return "tool_calls that are not a list"
        for call in calls or []:
            function = getattr(call, "function", None) if isinstance(call, openai.BaseModel) else call
            if not isinstance(call, openai.BaseModel) or not isinstance(function, (openai.BaseModel, type(None))):
                return "a tool call that is not an object"
            if not isinstance(getattr(call, "id", None), (str, type(None))) or (
                    function is not None and not isinstance(getattr(function, "name", None), (str, type(None)))):
                return "a tool call whose id or name is not text"
    return None


def _reported_usage(usage: Any) -> Usage | None:
    """The provider's usage, or ``None`` when a count is not a non-negative finite number (then estimated)."""
    counts = []
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = getattr(usage, name, None)
        value = 0 if value is None else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            return None
        counts.append(int(value))
    prompt, completion, total = counts
    return Usage(prompt, completion, total or prompt + completion)


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
        self._client = _ProviderClient(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            **kwargs,
        )
        self._stream_options = True  # cleared when the provider rejects ``stream_options``

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
            ProviderError: HTTP error, connection failure, a connection lost mid-stream,
                read timeout or malformed stream: bad JSON or a chunk of the wrong shape (one-line reason).
        """
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "stream": True,
        }
        if self._stream_options:
            request["stream_options"] = {"include_usage": True}
        if tools:
            request["tools"] = tools
        content: list[str] = []
        partial: dict[int, _PartialCall] = {}
        usage_seen: Any = None
        finish_reason: str | None = None
        chunks = reasoning_chars = 0
        visible = TagFilter(TOOL_CALL_TAGS + REASONING_TAGS)
        stream = None
        try:
            try:
                stream = await self._client.chat.completions.create(**request)
            except openai.APIStatusError as exc:
                if "stream_options" not in request or not _rejects_stream_options(exc):
                    raise
                # Some OpenAI-compatible servers refuse the field: ask again without it (usage is estimated).
                self._stream_options = False
                del request["stream_options"]
                stream = await self._client.chat.completions.create(**request)
            try:
                async for chunk in _chunks_until_finished(stream, lambda: finish_reason is not None):
                    chunks += 1
                    problem = _chunk_problem(chunk)
                    if problem is not None:
                        raise ProviderError(f"the model provider sent a malformed stream event ({problem}, after "
                                            f"{chunks - 1} chunk{'' if chunks == 2 else 's'})")
                    if chunk.usage is not None:
                        usage_seen = chunk.usage
                    for choice in chunk.choices or []:
                        if choice.index not in (0, None) or choice.delta is None:
                            continue
                        delta = choice.delta
                        if delta.content:
                            piece = _valid_text(delta.content)
                            content.append(piece)
                            await _emit(on_token, visible.feed(piece))
                        reasoning_chars += len(_reasoning_text(delta))
                        for call in delta.tool_calls or []:
                            if call.index is not None:
                                index = call.index
                            elif not partial:
                                index = 0
                            else:  # no index: continue the last call unless this delta starts another
                                index = max(partial)
                                if partial[index].starts_another(call):
                                    index += 1
                            partial.setdefault(index, _PartialCall()).add(call)
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
                    if finish_reason is not None and usage_seen is not None:
                        break  # complete: nothing more is needed from this stream
            finally:
                await stream.close()
        except (openai.OpenAIError, json.JSONDecodeError) as exc:
            if stream is not None and type(exc) is openai.APIConnectionError:
                # The provider answered; the connection dropped while the answer streamed.
                raise ProviderError(
                    f"the connection to the model provider was lost mid-answer (after {chunks} "
                    f"chunk{'' if chunks == 1 else 's'}; the provider or a proxy closed the stream)") from exc
            raise provider_error(exc, api_key=self.config.api_key) from exc
        await _emit(on_token, visible.flush())
        calls = [
            ToolCall(id=p.id or f"call_{index}", name=p.name, arguments="".join(p.arguments))
            for index, p in sorted(partial.items())
            if p.name
        ]
        raw = "".join(content)
        text = strip_reasoning(raw)
        reasoning_chars += len(raw) - len(text) if text != raw else 0
        usage = _reported_usage(usage_seen) if usage_seen is not None else None
        if usage is None:
            usage = estimate_usage(messages, tools, text, calls)
        return ModelTurn(text, calls, usage, finish_reason, chunks, reasoning_chars)


async def _emit(callback: TokenCallback | None, text: str) -> None:
    if text:
        await call_maybe_async(callback, text)
