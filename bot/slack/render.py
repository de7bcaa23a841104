"""Slack rendering: command results, progress, answers and failures → Block Kit payloads.

Commands return :class:`commands.registry.CommandResult`; answers come from the
orchestrator. Nothing in here talks to Slack: every function returns the
``{"text", "blocks", ...}`` dict that ``chat.postMessage``, ``chat.update`` or
``respond()`` takes (text safety itself lives in :mod:`bot.slack.text`).

Limits respected (Slack Block Kit reference, chat.postMessage): a section's text ≤ 3,000
characters, ≤ 10 fields per section and ≤ 2,000 characters per field, ≤ 10
elements per context block, ≤ 50 blocks per message, ``text`` ≤ 40,000 characters
(Slack truncates beyond), and ≤ :data:`MAX_PAGE_CHARS` characters of text in a
message's blocks (Slack refuses ``msg_blocks_too_long`` from about 13,200, an
undocumented limit measured in slackapi/bolt-js#2509).

Long answers are **paginated** (:class:`AnswerMessage`): the first page replaces the
progress or streamed message and carries the sources, footer and feedback buttons;
the rest follow in the thread as "part k of n" messages, each within every limit
above, fences closed and reopened across pages as across sections. Past
:data:`MAX_PAGES` pages the remainder (Markdown, as the model wrote it) is uploaded
as a snippet instead. Every payload has a text-only twin (:func:`plain_payload`)
carrying the same text, for when Slack refuses the blocks. :class:`ProgressView`
turns the orchestrator's activities (rag.activities) into the progress message.

The final answer message, top to bottom::

    context   <@asker> asked: _question_
    section   :warning: reason              (only when a stage failed)
    section … the answer, split on safe boundaries
    context   notes (question cut, stream ended early …)
    context   the rest of the answer is attached as a file   (only on overflow)
    context   *Sources:* <web/blob/<commit>/path#Lx-Ly|path:Lx-Ly> · …
    context   `model` · 1,234 tokens · 2.4 s
    actions   👍 / 👎   (action ids sz_feedback_up / sz_feedback_down, value = answer id)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence
from urllib.parse import quote

from bot.slack import messages
from bot.slack.text import (
    MAX_SECTION_CHARS,
    break_backtick_runs,
    escape,
    link,
    markdown_to_mrkdwn_pieces,
    split_markdown,
)
from rag.secrets import redact_text

__all__ = [
    "FEEDBACK_ACTIONS",
    "FEEDBACK_BLOCK_ID",
    "MAX_BLOCKS",
    "MAX_PAGE_CHARS",
    "MAX_PAGES",
    "MAX_SECTION_CHARS",
    "MAX_TEXT_CHARS",
    "AnswerMessage",
    "ProgressView",
    "SourceRef",
    "escape",
    "render_answer",
    "render_answer_message",
    "render_failure",
    "plain_payload",
    "render_progress",
    "render_result",
    "source_link",
    "split_markdown",
]

MAX_FIELD_CHARS = 2000
MAX_FIELDS_PER_SECTION = 10
MAX_BLOCKS = 50
MAX_FALLBACK_CHARS = 3000
#: A message's ``text`` limit: Slack truncates longer text (chat.postMessage reference).
MAX_TEXT_CHARS = 40_000
#: Characters of text in one message's blocks: below the ~13,200 at which Slack starts
#: refusing ``msg_blocks_too_long`` (measured in slackapi/bolt-js#2509; not documented).
MAX_PAGE_CHARS = 12_000
#: Messages one answer is paginated into; the rest is uploaded as a snippet (~120,000 characters fit).
MAX_PAGES = 10
#: Characters kept free on a page for its "part k of n" line.
_PAGE_NOTE_RESERVE = 200
MAX_QUESTION_SHOWN = 300
#: Sections of a partial answer shown in an in-place progress update.
MAX_PARTIAL_SECTIONS = 10
#: Progress lines shown (the newest; tool-heavy answers can have many).
DEFAULT_MAX_PROGRESS_LINES = 12
#: Feedback buttons: action id → vote recorded.
FEEDBACK_ACTIONS = {"sz_feedback_up": "up", "sz_feedback_down": "down"}
FEEDBACK_BLOCK_ID = "sz_feedback"


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _context(texts: Iterable[str]) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in list(texts)[:10]]}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _heading(question: str, user_id: str | None) -> dict:
    """``<@asker> asked: _question_``; the question's mentions are made inert and a secret pasted
    into it is redacted (:func:`rag.secrets.redact_text`): a slash command's text is otherwise
    seen only by its author, this line by the whole channel."""
    question, _ = redact_text(question)
    plain = _CONTROL_CHARS.sub("", " ".join(question.split()))
    # the asker's ``` cannot open a code block in the channel's line (only the bot's own fences do)
    shown = break_backtick_runs(escape(_clip(plain, MAX_QUESTION_SHOWN), keep_user_mentions=False))
    return _context([messages.answer_heading(user_id, shown)])


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
        code = break_backtick_runs(escape(result.code))
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
    Without a commit the link points at ``HEAD``. ``web_url`` may also be a callable
    ``(source) -> (url or None, label)`` (:class:`bot.source_links.SourceLinks`: each source
    linked to its own repository, documents by title).
    """
    if callable(web_url):
        url, label = web_url(source)
        return link(url, label) if url else f"`{escape(label, keep_user_mentions=False)}`"
    label = f"{source.path}:L{source.start}-L{source.end}"
    if not web_url:
        return f"`{escape(label, keep_user_mentions=False)}`"
    url = f"{web_url.rstrip('/')}/blob/{commit or 'HEAD'}/{quote(source.path)}#L{source.start}-L{source.end}"
    return link(url, label)


def sources_text(sources: Sequence, *, web_url: str | None, commit: str | None, searched: int = 0) -> str:
    """``*Sources:* link · link …``: one link per distinct source, whole links only, within
    one context element's limit. With no sources, ``searched`` > 0 says that many excerpts
    were read and none answers (the model declined)."""
    if not sources:
        return messages.no_answering_source(searched) if searched else messages.no_sources()
    text = messages.sources_label()
    unique = list({(s.path, s.start, s.end): s for s in sources}.values())  # first-seen order
    links = list(dict.fromkeys(source_link(s, web_url=web_url, commit=commit) for s in unique))
    for shown, piece in enumerate(links):  # an issue's chunks share one link (#12 title (state))
        separator = " " if shown == 0 else " · "
        if len(text) + len(separator) + len(piece) > MAX_SECTION_CHARS - 20:
            return f"{text} · +{len(links) - shown} more"
        text += separator + piece
    return text


def _feedback_block(answer_id: str) -> dict:
    buttons = [("sz_feedback_up", messages.feedback_button("up")),
               ("sz_feedback_down", messages.feedback_button("down"))]
    return {
        "type": "actions",
        "block_id": FEEDBACK_BLOCK_ID,
        "elements": [
            {"type": "button", "action_id": action_id, "value": answer_id,
             "text": {"type": "plain_text", "text": label, "emoji": True}}
            for action_id, label in buttons
        ],
    }


def _block_chars(blocks: Sequence[dict]) -> int:
    """Characters of text in ``blocks`` (what Slack's ``msg_blocks_too_long`` counts, roughly)."""
    total = 0
    for block in blocks:
        if block.get("type") == "section":
            total += len(block.get("text", {}).get("text", ""))
        elif block.get("type") == "context":
            total += sum(len(e.get("text", "")) for e in block.get("elements", []))
        elif block.get("type") == "actions":
            total += 60 * len(block.get("elements", []))
    return total


def plain_payload(payload: dict) -> dict:
    """The text-only twin of a Block Kit payload: every section's and context's text, in order,
    as mrkdwn ``text`` (≤ :data:`MAX_TEXT_CHARS`), no blocks — for when Slack refuses the blocks."""
    texts = []
    for block in payload.get("blocks") or []:
        if block.get("type") == "section" and block.get("text"):
            texts.append(block["text"].get("text", ""))
        elif block.get("type") == "context":
            texts.append(" ".join(e.get("text", "") for e in block.get("elements", [])))
    text = "\n".join(t for t in texts if t) or payload.get("text", "")
    return {"text": _clip(text, MAX_TEXT_CHARS), "unfurl_links": False, "unfurl_media": False}


@dataclass(frozen=True)
class AnswerMessage:
    """A rendered answer, paginated.

    Attributes:
        pages: Block Kit payloads ``{"text", "blocks", "unfurl_links": False, "unfurl_media": False}``,
            each within Slack's limits (module docstring); the first replaces the progress or
            streamed message, the others are posted in the thread after it, in order.
        overflow: the part of the answer (Markdown, as the model wrote it) beyond
            :data:`MAX_PAGES` pages, to upload as a snippet; ``None`` when everything fits.
        sections: how many answer sections the pages hold.
        supplement: the first page without the answer text (sources, footer, feedback
            buttons), posted when the streamed reply already shows the whole answer but
            could not be replaced.
    """

    pages: tuple[dict, ...]
    overflow: str | None = None
    sections: int = 0
    supplement: dict | None = None

    @property
    def payload(self) -> dict:
        """The first page."""
        return self.pages[0]


def _paginate(pieces: list, *, first_room: int, first_blocks: int, max_pages: int) -> tuple[list[list], int | None]:
    """Group pieces into pages: ``(pages, index of the first piece left over or None)``."""
    pages: list[list] = [[]]
    room, blocks = first_room, first_blocks
    for index, piece in enumerate(pieces):
        if pages[-1] and (len(piece.text) > room or blocks < 1):
            if len(pages) == max_pages:
                return pages, index
            pages.append([])
            room, blocks = MAX_PAGE_CHARS - _PAGE_NOTE_RESERVE, MAX_BLOCKS - 1
        pages[-1].append(piece)
        room -= len(piece.text)
        blocks -= 1
    return pages, None


def render_answer_message(
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
    answer_id: str | None = None,
    max_blocks: int = MAX_BLOCKS,
    max_pages: int = MAX_PAGES,
    searched: int = 0,
    memory_off: bool = False,
) -> AnswerMessage:
    """Render an answer (the layout in the module docstring), paginated within Slack's limits.

    Args:
        answer: the answer as Markdown (model output or the local answer); it is
            escaped, its mentions made inert and its Markdown converted here.
        sources: retrieved chunks (objects with ``path``, ``start``, ``end``).
        question: the asker's question (escaped here, mentions made inert).
        notice: an optional line above the answer, already mrkdwn (e.g. why the model was not used).
        notes: remarks shown small under the answer (escaped here).
        answer_id: adds the 👍/👎 buttons carrying this id.
        searched: with no ``sources``, the number of excerpts the model read without finding
            an answer (it declined); shown instead of "no matching files".
        max_blocks: block budget of one page (Slack's limit is 50).
        max_pages: messages at most; the rest becomes :attr:`AnswerMessage.overflow`.
        memory_off: the state store is unavailable: the footer says so.

    Returns:
        An :class:`AnswerMessage`.
    """
    head = [_heading(question, user_id)]
    if notice:
        head.append(_section(_clip(notice, MAX_SECTION_CHARS)))
    tail: list[dict] = []
    if notes:
        tail.append(_context([_clip(escape(" ".join(notes), keep_user_mentions=False), MAX_SECTION_CHARS)]))
    tail.append(_context([sources_text(sources, web_url=web_url, commit=commit, searched=searched)]))
    tail.append(_context([messages.answer_footer(model=model, tokens=tokens, seconds=seconds,
                                                 memory_off=memory_off)]))
    if answer_id:
        tail.append(_feedback_block(answer_id))
    supplement_blocks = list(tail)
    pieces = markdown_to_mrkdwn_pieces(answer or "")
    fixed = head + tail
    first_room = MAX_PAGE_CHARS - _block_chars(fixed) - 2 * _PAGE_NOTE_RESERVE
    first_blocks = max_blocks - len(fixed) - 2  # the "continues" line and the overflow note
    groups, rest = _paginate(pieces, first_room=first_room, first_blocks=first_blocks, max_pages=max_pages)
    overflow = None
    if rest is not None:
        lines = (answer or "").replace("\r\n", "\n").split("\n")
        overflow = "\n".join(lines[pieces[rest].first_line:])
        tail.insert(1 if notes else 0, _context([messages.answer_overflow()]))
    total = len(groups)
    pages: list[dict] = []
    for number, group in enumerate(groups, start=1):
        body = [_section(piece.text) for piece in group]
        if number == 1:
            blocks = head + body + ([_context([messages.answer_continues_below(total)])] if total > 1 else []) + tail
            fallback = group[0].text if group else escape(question, keep_user_mentions=False)
        else:
            blocks = body + [_context([messages.answer_part(number, total)])]
            fallback = group[0].text
        pages.append({"text": _clip(fallback, MAX_FALLBACK_CHARS), "blocks": blocks,
                      "unfurl_links": False, "unfurl_media": False})
    supplement = {"text": _clip(plain_payload({"blocks": supplement_blocks})["text"], MAX_FALLBACK_CHARS),
                  "blocks": supplement_blocks, "unfurl_links": False, "unfurl_media": False}
    return AnswerMessage(pages=tuple(pages), overflow=overflow, sections=sum(len(g) for g in groups),
                         supplement=supplement)


def render_answer(answer: str, **kwargs) -> dict:
    """:func:`render_answer_message`'s payload (the overflow, if any, is dropped)."""
    return render_answer_message(answer, **kwargs).payload


def render_progress(*, header: str, lines: Sequence[str], question: str, user_id: str | None,
                    partial: str | None = None, footer: str | None = None) -> dict:
    """The progress message: heading, what is happening, and (in-place mode) the answer so far.

    Args:
        header: first line (mrkdwn, e.g. ``:mag: Searching *repo* …``).
        lines: one mrkdwn line per step so far (already escaped).
        partial: the answer so far as Markdown (shown when streaming is unavailable);
            at most a few sections are shown, the rest follows in the final message.
        footer: a small last line (mrkdwn), e.g. the model and the time taken.
    """
    status = "\n".join([header, *lines])
    blocks = [_heading(question, user_id), _section(_clip(status, MAX_SECTION_CHARS))]
    if partial:
        pieces = markdown_to_mrkdwn_pieces(partial)
        room = MAX_PAGE_CHARS - _block_chars(blocks) - _PAGE_NOTE_RESERVE * 2
        shown = 0
        for piece in pieces[:MAX_PARTIAL_SECTIONS]:
            if len(piece.text) > room:
                break
            blocks.append(_section(piece.text))
            room -= len(piece.text)
            shown += 1
        if shown < len(pieces):
            blocks.append(_context([messages.answer_continues()]))
    if footer:
        blocks.append(_context([footer]))
    return {"text": _clip(header, MAX_FALLBACK_CHARS), "blocks": blocks,
            "unfurl_links": False, "unfurl_media": False}



def render_failure(reason: str, *, question: str, user_id: str | None, sources: Sequence = (),
                   web_url: str | None = None, commit: str | None = None,
                   lines: Sequence[str] = ()) -> dict:
    """A visible failure: what went wrong, what still worked (the steps done, the sources).

    Args:
        reason: one line, already mrkdwn-safe (callers escape text they did not write).
        sources: what retrieval found before the failure (may be empty).
        lines: progress lines of the steps that did complete.
    """
    blocks = [_heading(question, user_id), _section(_clip(messages.failure(reason), MAX_SECTION_CHARS))]
    if lines:
        blocks.append(_context([_clip("\n".join(lines), MAX_SECTION_CHARS)]))
    blocks.append(_context([messages.still_worked(bool(sources))]))
    if sources:
        blocks.append(_context([sources_text(sources, web_url=web_url, commit=commit)]))
    return {"text": _clip(messages.failure(reason), MAX_FALLBACK_CHARS), "blocks": blocks,
            "unfurl_links": False, "unfurl_media": False}


def _cap_blocks(blocks: list[dict], *, keep_tail: int = 0) -> list[dict]:
    """Keep at most ``MAX_BLOCKS`` blocks; when cutting, keep the last ``keep_tail`` and say so."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    tail = blocks[-keep_tail:] if keep_tail else []
    head = blocks[: MAX_BLOCKS - 1 - len(tail)]
    return head + [_context(["_…answer shortened to fit one Slack message._"])] + tail


@dataclass(frozen=True)
class SourceRef:
    """A source as the retrieval activity reports it (enough for a link)."""

    path: str
    start: int
    end: int


class ProgressView:
    """The state of the progress message, built from the orchestrator's activities."""

    def __init__(self, *, repo: str, question: str, user_id: str | None, follow_up: bool = False,
                 max_lines: int = DEFAULT_MAX_PROGRESS_LINES) -> None:
        self.header = messages.searching(escape(repo), follow_up=follow_up)
        self._done_header = messages.searching(escape(repo), follow_up=follow_up, done=True)
        self.question = question
        self.user_id = user_id
        self.sources: list[SourceRef] = []
        self._answer_parts: list[str] = []
        self.show_partial = False
        self.writing: str | None = None  # "thread" or "in_place" once text arrives
        self._steps: dict[str, str] = {}
        self._max_lines = max_lines

    @property
    def answer_text(self) -> str:
        """The answer text received so far (joined lazily, once per render)."""
        if len(self._answer_parts) > 1:
            self._answer_parts = ["".join(self._answer_parts)]
        return self._answer_parts[0] if self._answer_parts else ""

    def add_text(self, text: str) -> None:
        self._answer_parts.append(text)

    def apply(self, activity) -> None:
        """Turn one :class:`rag.activities.Activity` into (or update) a progress line."""
        meta = activity.metadata or {}
        key, text = activity.stage, escape(activity.message, keep_user_mentions=False)
        if activity.stage == "retrieval" and activity.status == "completed":
            self.sources = [SourceRef(str(s["path"]), int(s["start"]), int(s["end"]))
                            for s in meta.get("sources") or [] if {"path", "start", "end"} <= set(s)]
            top = ", ".join(f"`{escape(s.path)}:L{s.start}-L{s.end}`" for s in self.sources[:3])
            text += f": {top}" if top else ""
        elif activity.stage == "tool" and meta.get("type") == "repository":
            key = f"tool:{activity.id}"  # "searching `retry backoff`… 6 hits", "reading `lib/pool.js:80-140`"
        elif activity.stage == "tool":
            key = f"tool:{activity.id}"
            code = meta.get("error_code")
            text = f"`{escape(str(meta.get('tool', 'tool')))}` {float(meta.get('duration_ms') or 0):.0f} ms" + (
                f" ({escape(str(code))})" if code else "")
        elif activity.stage in ("ai", "reasoning"):
            key = f"{activity.stage}:{meta.get('round', '')}"
        self._steps[key] = messages.progress_line(activity.stage, text, status=activity.status)

    def lines(self, *, include_writing: bool = True) -> list[str]:
        """The progress lines (the newest ``max_lines`` steps), then what is being written."""
        steps = list(self._steps.values())
        if len(steps) > self._max_lines:
            steps = ["…"] + steps[-self._max_lines:]
        if self.writing and include_writing:
            steps.append(messages.writing_answer(in_thread=self.writing == "thread"))
        return steps

    def payload(self) -> dict:
        return render_progress(header=self.header, lines=self.lines(), question=self.question, user_id=self.user_id,
                               partial=self.answer_text if self.show_partial else None)

    def done_payload(self, *, ok: bool, reason: str | None, footer: str, where: str = "stream") -> dict:
        """The progress message once the answer went out ``where`` (a delivery mode of
        :mod:`bot.slack.delivery`: in the thread, below, privately …), or failed."""
        steps = list(self._steps.values())[-self._max_lines:]
        if ok:
            steps.append(messages.answered_where(where))
        elif where == "lost":
            steps.append(messages.answered_where(where))
        else:
            steps.append(messages.failure(reason or "the answer failed"))
        return render_progress(header=self._done_header, lines=steps, question=self.question,
                               user_id=self.user_id, footer=footer)
