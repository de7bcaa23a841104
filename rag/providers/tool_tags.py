"""Tool calls and reasoning written as text: ``<tool_call>name</tool_call>``, ``<think>…</think>``.

Some models (Hermes/Qwen-style chat templates served without a tool parser)
write their tool call into the content instead of ``tool_calls``. The
orchestrator calls such a tool once (see rag.answer.loop); the tags themselves
must never reach the user, even while the answer streams, so
:class:`ToolTagFilter` holds back any text that could be the start of a tag.

Accepted forms inside the tag: a bare tool name (``getStatus``), a name
followed by JSON arguments (``getLogs {"limit": 3}``), or a JSON object
``{"name": "getLogs", "arguments": {...}}`` (``parameters`` is accepted too).
:func:`parse_bare_tool_call` reads the same JSON object when it is the whole
content, untagged (some models answer with nothing else).

Reasoning models served without a reasoning parser (DeepSeek-R1, QwQ, Qwen3
through llama.cpp or vLLM) write their chain of thought into the content between
``<think>`` and ``</think>``: it is neither streamed nor kept (:data:`REASONING_TAGS`,
:func:`strip_reasoning`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["REASONING_TAGS", "TOOL_CALL_TAGS", "TagFilter", "TextualToolCall", "ToolTagFilter",
           "parse_bare_tool_call", "parse_textual_tool_calls", "strip_reasoning", "strip_tool_tags"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
TOOL_CALL_TAGS: tuple[tuple[str, str], ...] = ((OPEN_TAG, CLOSE_TAG),)
REASONING_TAGS: tuple[tuple[str, str], ...] = (("<think>", "</think>"), ("<thinking>", "</thinking>"))
_REASONING_RE = re.compile(r"<(think|thinking)>.*?(?:</\1>|\Z)\s*", re.S)
_TAG_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_NAME_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(.*)", re.S)


@dataclass(frozen=True)
class TextualToolCall:
    """A tool call found in content text: ``name`` and raw JSON ``arguments`` text."""

    name: str
    arguments: str = "{}"


def parse_textual_tool_calls(text: str) -> list[TextualToolCall]:
    """Every complete ``<tool_call>…</tool_call>`` in ``text``, in order.

    Unparseable tag bodies are skipped; arguments that are not JSON are passed
    on as they are (the adapter then answers with a structured error).
    """
    calls: list[TextualToolCall] = []
    for match in re.finditer(r"<tool_call>(.*?)</tool_call>", text, re.S):
        body = match.group(1).strip()
        if body.startswith("{"):
            try:
                data = json.loads(body)
            except json.JSONDecodeError:
                continue
            name = data.get("name") if isinstance(data, dict) else None
            if not isinstance(name, str) or not name:
                continue
            args = data.get("arguments", data.get("parameters", {}))
            calls.append(TextualToolCall(name, args if isinstance(args, str) else json.dumps(args)))
            continue
        found = _NAME_RE.fullmatch(body)
        if found:
            calls.append(TextualToolCall(found.group(1), found.group(2).strip() or "{}"))
    return calls


def parse_bare_tool_call(text: str, tool_names: set[str] | frozenset[str]) -> TextualToolCall | None:
    """The tool call when the whole ``text`` is one untagged JSON call of a known tool.

    ``{"name": "getStatus", "arguments": {}}`` (``parameters`` accepted, a ```json fence
    around it too) whose ``name`` is in ``tool_names``; anything else is ``None``, so a
    JSON answer the user asked for is never taken for a call.
    """
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
    if fenced:
        body = fenced.group(1)
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or set(data) - {"name", "arguments", "parameters", "type", "id"}:
        return None
    name = data.get("name")
    if not isinstance(name, str) or name not in tool_names:
        return None
    args = data.get("arguments", data.get("parameters", {}))
    return TextualToolCall(name, args if isinstance(args, str) else json.dumps(args))


def strip_tool_tags(text: str) -> str:
    """``text`` without tool-call tags (an unterminated trailing tag is removed too)."""
    return _TAG_RE.sub("", text)


def strip_reasoning(text: str) -> str:
    """``text`` without ``<think>…</think>`` blocks (an unterminated one is removed to the end)."""
    if "<think" not in text:
        return text
    return _REASONING_RE.sub("", text).lstrip() if text.lstrip().startswith("<think") else _REASONING_RE.sub("", text)


class TagFilter:
    """Streaming filter that removes tagged spans (``<tool_call>…</tool_call>``, ``<think>…</think>``).

    ``feed(piece)`` returns the text safe to show now; a suffix that might start
    a tag is held until the next piece decides; ``flush()`` returns what is left
    at the end (nothing if a tag was still open).

    Args:
        tags: ``(open, close)`` pairs; default :data:`TOOL_CALL_TAGS`.
    """

    def __init__(self, tags: tuple[tuple[str, str], ...] = TOOL_CALL_TAGS) -> None:
        self._tags = tags
        self._buffer = ""
        self._close: str | None = None  # the closing tag awaited while inside a span

    def feed(self, piece: str) -> str:
        """Add a delta; return the visible text it releases."""
        self._buffer += piece
        out: list[str] = []
        while True:
            if self._close is not None:
                end = self._buffer.find(self._close)
                if end < 0:
                    # keep only what could still hold the closing tag
                    self._buffer = self._buffer[-(len(self._close) - 1):]
                    break
                self._buffer = self._buffer[end + len(self._close):]
                self._close = None
                continue
            found = [(self._buffer.find(open_), open_, close) for open_, close in self._tags]
            found = [f for f in found if f[0] >= 0]
            if found:
                start, open_, close = min(found)
                out.append(self._buffer[:start])
                self._buffer = self._buffer[start + len(open_):]
                self._close = close
                continue
            hold = max(_partial_prefix(self._buffer, open_) for open_, _ in self._tags)
            out.append(self._buffer[: len(self._buffer) - hold])
            self._buffer = self._buffer[len(self._buffer) - hold:]
            break
        return "".join(out)

    def flush(self) -> str:
        """The held-back text at the end of the stream."""
        rest = "" if self._close is not None else self._buffer
        self._buffer = ""
        return rest


class ToolTagFilter(TagFilter):
    """:class:`TagFilter` for ``<tool_call>`` tags only."""

    def __init__(self) -> None:
        super().__init__(TOOL_CALL_TAGS)


def _partial_prefix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
