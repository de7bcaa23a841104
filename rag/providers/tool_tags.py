"""Tool calls written as text: ``<tool_call>name</tool_call>``.

Some models (Hermes/Qwen-style chat templates served without a tool parser)
write their tool call into the content instead of ``tool_calls``. The
orchestrator calls such a tool once (see rag.answer.loop); the tags themselves
must never reach the user, even while the answer streams, so
:class:`ToolTagFilter` holds back any text that could be the start of a tag.

Accepted forms inside the tag: a bare tool name (``getStatus``), a name
followed by JSON arguments (``getLogs {"limit": 3}``), or a JSON object
``{"name": "getLogs", "arguments": {...}}`` (``parameters`` is accepted too).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["TextualToolCall", "ToolTagFilter", "parse_textual_tool_calls", "strip_tool_tags"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
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


def strip_tool_tags(text: str) -> str:
    """``text`` without tool-call tags (an unterminated trailing tag is removed too)."""
    return _TAG_RE.sub("", text)


class ToolTagFilter:
    """Streaming filter that removes ``<tool_call>…</tool_call>`` from text deltas.

    ``feed(piece)`` returns the text safe to show now; a suffix that might start
    a tag is held until the next piece decides; ``flush()`` returns what is left
    at the end (nothing if a tag was still open).
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._inside = False

    def feed(self, piece: str) -> str:
        """Add a delta; return the visible text it releases."""
        self._buffer += piece
        out: list[str] = []
        while True:
            if self._inside:
                end = self._buffer.find(CLOSE_TAG)
                if end < 0:
                    # keep only what could still hold the closing tag
                    self._buffer = self._buffer[-(len(CLOSE_TAG) - 1):]
                    break
                self._buffer = self._buffer[end + len(CLOSE_TAG):]
                self._inside = False
                continue
            start = self._buffer.find(OPEN_TAG)
            if start >= 0:
                out.append(self._buffer[:start])
                self._buffer = self._buffer[start + len(OPEN_TAG):]
                self._inside = True
                continue
            hold = _partial_prefix(self._buffer, OPEN_TAG)
            out.append(self._buffer[: len(self._buffer) - hold])
            self._buffer = self._buffer[len(self._buffer) - hold:]
            break
        return "".join(out)

    def flush(self) -> str:
        """The held-back text at the end of the stream."""
        rest = "" if self._inside else self._buffer
        self._buffer = ""
        return rest


def _partial_prefix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
