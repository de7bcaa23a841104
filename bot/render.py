"""Slack rendering: command results and answers → Block Kit payloads.

Commands return :class:`commands.registry.CommandResult`; answers come from the
orchestrator. Nothing in here talks to Slack: every function returns the
``{"text", "blocks", ...}`` dict that ``chat.postMessage`` or ``respond()`` takes.

Limits respected (Slack Block Kit reference): a section's text ≤ 3,000
characters, ≤ 10 fields per section and ≤ 2,000 characters per field, ≤ 10
elements per context block, ≤ 50 blocks per message. Answers are split on
paragraph and line boundaries and never inside a fenced code block (a fence
that must be cut is closed and reopened). Text from users or the model is
escaped (``&``, ``<``, ``>``) except well-formed user, channel and URL links;
broadcast mentions (``<!channel>``, ``<!here>``, ``<!everyone>``,
``<!subteam^…>``) are neutralised.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence
from urllib.parse import quote

from bot import messages

__all__ = [
    "MAX_BLOCKS",
    "MAX_SECTION_CHARS",
    "escape",
    "render_answer",
    "render_result",
    "source_link",
    "split_markdown",
]

MAX_SECTION_CHARS = 3000
MAX_FIELD_CHARS = 2000
MAX_FIELDS_PER_SECTION = 10
MAX_BLOCKS = 50
MAX_FALLBACK_CHARS = 3000

# Links Slack renders and that are safe to keep: users, channels, http(s)/mailto URLs.
_SAFE_LINK = re.compile(r"<(?:@[UW][A-Z0-9]+|#C[A-Z0-9]+(?:\|[^<>]*)?|(?:https?://|mailto:)[^<>|\s]+(?:\|[^<>]*)?)>")
_BROADCAST = re.compile(r"<!(channel|here|everyone|subteam\^[A-Z0-9]+)(?:\|[^<>]*)?>")
_FENCE = re.compile(r"^\s*```")


def escape(text: str) -> str:
    """Escape ``&``, ``<``, ``>`` for mrkdwn, keeping safe links and neutralising broadcasts.

    ``<!channel>`` becomes ``@\u200bchannel`` (readable, never notifies).
    """
    text = _BROADCAST.sub(lambda m: "@\u200b" + m.group(1).split("^")[0], text or "")
    out: list[str] = []
    pos = 0
    for match in _SAFE_LINK.finditer(text):
        out.append(_escape_plain(text[pos:match.start()]))
        out.append(match.group(0))
        pos = match.end()
    out.append(_escape_plain(text[pos:]))
    return "".join(out)


def _escape_plain(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def split_markdown(text: str, *, limit: int = MAX_SECTION_CHARS) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, never leaving a code fence open.

    Pieces break at line ends. When a fenced block has to be cut, the piece is
    closed with ```` ``` ```` and the next one reopens it. A single line longer
    than the limit is cut into several lines.
    """
    if len(text) <= limit:
        return [text] if text.strip() else []
    width = limit - 8  # room for the closing "\n```"
    lines: list[str] = []
    for line in text.split("\n"):
        while len(line) > width - 4:
            lines.append(line[: width - 4])
            line = line[width - 4:]
        lines.append(line)
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    in_fence = False
    for line in lines:
        if current and size + len(line) + 1 > width:
            body = "\n".join(current)
            pieces.append(body + "\n```" if in_fence else body)
            current, size = (["```"], 4) if in_fence else ([], 0)
        current.append(line)
        size += len(line) + 1
        if _FENCE.match(line):
            in_fence = not in_fence
    if current:
        pieces.append("\n".join(current))
    return [piece for piece in pieces if piece.strip() and piece.strip() != "```"]


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _context(texts: Iterable[str]) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in list(texts)[:10]]}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_result(result, *, slash: str) -> dict:
    """Render a ``CommandResult`` as a ``respond()`` payload.

    Returns:
        ``{"text", "blocks", "response_type": "ephemeral" | "in_channel"}``;
        failures start with a warning sign and always carry their reason.
    """
    text = escape(result.text or "")
    if not result.ok:
        text = messages.failure(text) if text else messages.command_failed(slash, "no reason given")
    blocks: list[dict] = []
    if result.title:
        blocks.append(_section(f"*{escape(result.title)}*"))
    for piece in split_markdown(text):
        blocks.append(_section(piece))
    fields = [
        {"type": "mrkdwn", "text": _clip(f"*{escape(name)}*\n{escape(value)}", MAX_FIELD_CHARS)}
        for name, value in result.fields
    ]
    for start in range(0, len(fields), MAX_FIELDS_PER_SECTION):
        blocks.append({"type": "section", "fields": fields[start:start + MAX_FIELDS_PER_SECTION]})
    if result.code:
        code = escape(result.code.replace("```", "`\u200b``"))
        for piece in split_markdown(code, limit=MAX_SECTION_CHARS - 8):
            blocks.append(_section(f"```{piece}```"))
    fallback = "\n".join(filter(None, [escape(result.title or ""), text, escape(result.code or "")]))
    return {
        "text": _clip(fallback, MAX_FALLBACK_CHARS),
        "blocks": _cap_blocks(blocks),
        "response_type": "ephemeral" if result.ephemeral else "in_channel",
    }


def source_link(source, *, web_url: str | None, commit: str | None) -> str:
    """``<web/blob/<commit>/path#Lx-Ly|path:Lx-Ly>`` when ``web_url`` is set, else `` `path:Lx-Ly` ``.

    ``source`` needs ``path``, ``start`` and ``end`` (a :class:`rag.types.Source`).
    Without a commit the link points at ``HEAD``.
    """
    label = f"{source.path}:L{source.start}-L{source.end}"
    if not web_url:
        return f"`{escape(label)}`"
    url = f"{web_url.rstrip('/')}/blob/{commit or 'HEAD'}/{quote(source.path)}#L{source.start}-L{source.end}"
    return f"<{url}|{escape(label)}>"


def render_answer(
    answer: str,
    *,
    sources: Sequence,
    question: str,
    user_id: str | None,
    web_url: str | None = None,
    commit: str | None = None,
    model: str | None = None,
    tokens: int | None = None,
    seconds: float | None = None,
    notice: str | None = None,
    notes: Sequence[str] = (),
) -> dict:
    """Render an answer with its sources and a footer.

    Args:
        answer: the answer text (model Markdown or the local answer); escaped here.
        sources: retrieved chunks (objects with ``path``, ``start``, ``end``).
        question: the user's question, shown above the answer (escaped here).
        notice: an optional line above the answer (already mrkdwn), e.g. why the
            model was not used.
        notes: remarks shown small under the answer (escaped here).

    Returns:
        ``{"text", "blocks", "unfurl_links": False, "unfurl_media": False}``.
    """
    blocks: list[dict] = [_context([messages.answer_heading(user_id, escape(_clip(question, 300)))])]
    if notice:
        blocks.append(_section(notice))
    for piece in split_markdown(escape(answer)):
        blocks.append(_section(piece))
    if notes:
        blocks.append(_context([_clip(escape(" ".join(notes)), MAX_SECTION_CHARS)]))
    blocks.append(_context([_sources_text(sources, web_url=web_url, commit=commit)]))
    blocks.append(_context([messages.answer_footer(model=model, tokens=tokens, seconds=seconds)]))
    return {
        "text": _clip(escape(answer or question), MAX_FALLBACK_CHARS),
        "blocks": _cap_blocks(blocks, keep_tail=2),
        "unfurl_links": False,
        "unfurl_media": False,
    }


def _sources_text(sources: Sequence, *, web_url: str | None, commit: str | None) -> str:
    """``*Sources:* link · link …``, whole links only, within one context element's limit."""
    if not sources:
        return messages.no_sources()
    text = messages.sources_label()
    unique = list({(s.path, s.start, s.end): s for s in sources}.values())  # first-seen order
    for shown, source in enumerate(unique):
        link = source_link(source, web_url=web_url, commit=commit)
        separator = " " if shown == 0 else " · "
        if len(text) + len(separator) + len(link) > MAX_SECTION_CHARS - 20:
            return f"{text} · +{len(unique) - shown} more"
        text += separator + link
    return text


def _cap_blocks(blocks: list[dict], *, keep_tail: int = 0) -> list[dict]:
    """Keep at most ``MAX_BLOCKS`` blocks; when cutting, keep the last ``keep_tail`` and say so."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    tail = blocks[-keep_tail:] if keep_tail else []
    head = blocks[: MAX_BLOCKS - 1 - len(tail)]
    return head + [_context(["_…answer shortened to fit one Slack message._"])] + tail
