"""Slack text safety: escaping, neutralising mentions, Markdown → mrkdwn, fence-safe splitting.

Slack renders two dialects and both need care with text we did not write
(the asker's question, the model's answer, repository paths):

* **mrkdwn** (section blocks, ``text``): ``&``, ``<`` and ``>`` are control
  characters and must be sent as ``&amp;``, ``&lt;``, ``&gt;`` except in links
  (Slack "Formatting text for app surfaces", *Escaping text*). :func:`escape`
  does that and keeps well-formed URL and channel links.
* **markdown** (``chat.appendStream`` ``markdown_text``): standard Markdown, so
  nothing is escaped, but mention syntax is still neutralised
  (:func:`neutralise_markdown`).

Mention policy (documented decision for issue 8):

* Broadcasts — ``<!channel>``, ``<!here>``, ``<!everyone>``, ``<!subteam^…>`` and
  the plain words ``@channel``/``@here``/``@everyone`` — never notify anyone: they
  become ``@\u200bchannel`` (a zero-width space after the ``@``), readable and inert.
* User mentions ``<@U…>`` are kept only in text *we* build (``<@asker> asked: …``,
  command results). Text from the model or the asker is rendered with
  ``keep_user_mentions=False``: ``<@U123>`` becomes ``@\u200bU123``, so a prompt
  injection in the repository cannot make the bot ping people.
* Channel links ``<#C…>`` and URL links ``<https://…|label>`` stay (they notify nobody).

Answers are split into pieces of at most 3,000 characters (a section's text
limit, Slack Block Kit reference) on line boundaries, preferring blank lines;
a fenced code block that must be cut is closed with ```` ``` ```` and reopened
in the next piece, so every piece has balanced fences. Markdown's language tag
on a fence (```` ```js ````) is dropped: mrkdwn would show it as code text.

Fences (issue 13). Markdown fences follow CommonMark (spec 0.31, "Fenced code blocks"):
a fence is 3+ backticks or tildes indented at most 3 spaces; a backtick fence's info
string holds no backtick; the block ends at a line of the same character, at least as
long, and nothing else — so a ```` ````md ```` block may hold ```` ``` ```` lines and
```` ```js ```` inside a ```` ``` ```` block is content. One deliberate step beyond the
spec: inside a block, a fence line *with* a language tag (```` ```bash ````) opens an
inner block whose bare closing line is content too — what a model means when it writes
Markdown inside code (a template literal, a README snippet in a string), and where
CommonMark would end the outer block early. Slack's mrkdwn knows one fence
only: any ```` ``` ```` — at a line start or mid-line — ends its code block. So every
run of three or more backticks that is *content* (in code or in prose) gets a zero-width
space between its backticks (:func:`break_backtick_runs`: ```` `\u200b`\u200b` ````): it
looks the same, and the only ```` ``` ```` Slack sees are the fences written here. Code
copied from Slack then carries those invisible characters on such lines (rare: lines of
backticks inside code).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FENCE",
    "MAX_SECTION_CHARS",
    "break_backtick_runs",
    "Piece",
    "escape",
    "link",
    "markdown_to_mrkdwn_pieces",
    "neutralise_markdown",
    "split_markdown",
    "ZWSP",
    "stream_safe_length",
]

MAX_SECTION_CHARS = 3000
FENCE = "```"
#: Characters kept free in a piece for the closing ``"\n```"`` of a cut code block.
_FENCE_RESERVE = len("\n" + FENCE) + 4
#: A trailing ``<…`` or ``@word`` shorter than this is held back while streaming.
MAX_HELD_CHARS = 80
ZWSP = "\u200b"

# Slack reads the keyword case-insensitively (``<!CHANNEL>`` and ``<!Here>`` notify too).
_BROADCAST = re.compile(r"<!(channel|here|everyone|subteam\^[A-Za-z0-9]+)(?:\|([^<>\n]*))?>", re.IGNORECASE)
_USER_MENTION = re.compile(r"<@([UW][A-Za-z0-9]+)(?:\|[^<>\n]*)?>")
_PLAIN_BROADCAST = re.compile(r"(?<![\w@])@(channel|here|everyone)\b", re.IGNORECASE)
_URL_OR_CHANNEL_LINK = re.compile(
    r"<(?:#C[A-Z0-9]+(?:\|[^<>\n]*)?|(?:https?://|mailto:)[^<>|\s]+(?:\|[^<>\n]*)?)>")
_ANY_SAFE_LINK = re.compile(
    r"<(?:@[UW][A-Z0-9]+(?:\|[^<>\n]*)?|#C[A-Z0-9]+(?:\|[^<>\n]*)?|(?:https?://|mailto:)[^<>|\s]+(?:\|[^<>\n]*)?)>")
_FENCE_LINE = re.compile(r"^\s{0,3}(```|~~~)")
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_FENCE_CLOSE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*$")
_BACKTICK_RUN = re.compile(r"`{3,}")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?=\S)")
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|mailto:)[^)\s|<>]+)\)")
#: A CommonMark code span: a run of n backticks, content, a run of exactly n backticks.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def break_backtick_runs(text: str) -> str:
    """Put a zero-width space between the backticks of every run of three or more, so that
    Slack's mrkdwn never reads it as a fence (see the module docstring)."""
    return _BACKTICK_RUN.sub(lambda m: ZWSP.join(m.group(0)), text)


def _fence_opening(line: str) -> tuple[str, int] | None:
    """``(character, length)`` when ``line`` opens a fenced code block (CommonMark), else ``None``."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    fence = match.group("fence")
    if fence[0] == "`" and "`" in match.group("info"):
        return None
    return fence[0], len(fence)


class _FenceTracker:
    """Which lines open and close fenced blocks (see the module docstring): ``feed(line)`` says
    whether the line is a fence of the outermost block; ``inside`` whether a block is open."""

    def __init__(self) -> None:
        self.opening: tuple[str, int] | None = None
        self._inner: list[int] = []  # lengths of inner blocks opened with a language tag

    @property
    def inside(self) -> bool:
        return self.opening is not None

    def feed(self, line: str) -> bool:
        if self.opening is None:
            self.opening = _fence_opening(line)
            return self.opening is not None
        match = _FENCE_CLOSE.match(line)
        if match and match.group("fence")[0] == self.opening[0]:
            length = len(match.group("fence"))
            if self._inner:
                if length >= self._inner[-1]:
                    self._inner.pop()
                return False
            if length >= self.opening[1]:
                self.opening = None
                return True
            return False
        inner = _fence_opening(line)
        if inner is not None and inner[0] == self.opening[0] and line.strip() != inner[0] * inner[1]:
            self._inner.append(inner[1])
        return False


def _inert(name: str) -> str:
    return "@" + ZWSP + name


def _neutralise(text: str, *, keep_user_mentions: bool) -> str:
    """Broadcasts (and, unless kept, user mentions) → inert ``@\u200bname`` text."""
    text = _BROADCAST.sub(lambda m: _inert((m.group(2) or m.group(1).split("^")[0]).lstrip("@")), text)
    if not keep_user_mentions:
        text = _USER_MENTION.sub(lambda m: _inert(m.group(1)), text)
    return _PLAIN_BROADCAST.sub(lambda m: _inert(m.group(1)), text)


def _escape_plain(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape(text: str | None, *, keep_user_mentions: bool = True) -> str:
    """Escape ``&``, ``<``, ``>`` for mrkdwn, keeping safe links and neutralising broadcasts.

    Args:
        text: any text (``None`` → ``""``).
        keep_user_mentions: keep ``<@U…>`` as a mention (our own text) or make it
            inert ``@\u200bU…`` (text from the model or the asker).

    Example::

        escape("a < b <!here> <@U1> <https://x.io|x>")
        # 'a &lt; b @\u200bhere <@U1> <https://x.io|x>'
    """
    text = _neutralise(text or "", keep_user_mentions=keep_user_mentions)
    safe = _ANY_SAFE_LINK if keep_user_mentions else _URL_OR_CHANNEL_LINK
    out: list[str] = []
    pos = 0
    for match in safe.finditer(text):
        out.append(_escape_plain(text[pos:match.start()]))
        out.append(match.group(0))
        pos = match.end()
    out.append(_escape_plain(text[pos:]))
    return "".join(out)


_URL_BREAKERS = re.compile(r"[<>|\s]")


def link(url: str, label: str) -> str:
    """A Slack link ``<url|label>`` whose parts cannot break out of it.

    ``<``, ``>``, ``|`` and white space in ``url`` are percent-encoded (RFC 3986 §2.1), so text after
    them cannot become a broadcast or a second link; ``label`` (user or repository text: a
    document's title, a path) is plain text, its mentions, broadcasts and links inert and its
    ``&``, ``<``, ``>`` escaped (a link inside a link's label would end it early).
    """
    url = _URL_BREAKERS.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), url)
    return f"<{url}|{_escape_plain(_neutralise(label, keep_user_mentions=False))}>"


def neutralise_markdown(text: str) -> str:
    """Make broadcasts and user mentions inert in Markdown (``markdown_text``); nothing else changes."""
    return _neutralise(text, keep_user_mentions=False)


def stream_safe_length(text: str) -> int:
    """How much of a growing ``text`` can be released now without cutting a mention token.

    A trailing unclosed ``<…`` or ``@word`` (shorter than :data:`MAX_HELD_CHARS`) is
    held back until more text arrives, so ``<!chan`` + ``nel>`` is neutralised as
    a whole. Release everything at the end of the stream.
    """
    cut = len(text)
    lt = text.rfind("<")
    if lt != -1 and ">" not in text[lt:] and cut - lt <= MAX_HELD_CHARS:
        cut = lt
    at = text.rfind("@", 0, cut)
    if at != -1 and re.fullmatch(r"@\w*", text[at:cut]) and cut - at <= MAX_HELD_CHARS:
        cut = at
    return cut


def _inline_to_mrkdwn(text: str) -> str:
    """One line outside code: escape, neutralise, then Markdown emphasis/links → mrkdwn.

    A code span becomes Slack inline code (literal, escaped, never converted); one whose content
    holds a backtick (which Slack's inline code cannot) is kept as literal text instead.
    """
    out: list[str] = []
    pos = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_prose_to_mrkdwn(text[pos:span.start()]))
        content = span.group(2)
        if len(content) > 2 and content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]  # CommonMark strips one space each side
        if "`" in content:
            out.append(break_backtick_runs(_escape_plain(span.group(0))))
        else:
            out.append(f"`{_escape_plain(content)}`")
        pos = span.end()
    out.append(_prose_to_mrkdwn(text[pos:]))
    return "".join(out)


def _prose_to_mrkdwn(part: str) -> str:
    if not part:
        return ""
    part = escape(part, keep_user_mentions=False)
    part = _MD_LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", part)
    bolds: list[str] = []

    def hold(match: re.Match) -> str:
        bolds.append(match.group(1))
        return f"\x00{len(bolds) - 1}\x00"

    part = _BOLD.sub(hold, part)
    part = _ITALIC.sub(r"_\1_", part)
    part = _STRIKE.sub(r"~\1~", part)
    part = re.sub(r"\x00(\d+)\x00", lambda m: f"*{bolds[int(m.group(1))]}*", part)
    return break_backtick_runs(part)


def _render_line(line: str, *, in_code: bool) -> str:
    if in_code:
        return break_backtick_runs(_escape_plain(line))
    heading = _HEADING.match(line)
    if heading:
        title = _inline_to_mrkdwn(heading.group(1)).strip("*")
        return f"*{title}*"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_inline_to_mrkdwn(line[bullet.end():])}"
    return _inline_to_mrkdwn(line)


def _cut_long(line: str, width: int) -> list[str]:
    """Cut a rendered line longer than ``width``: at a space if one is near, never inside
    an entity (``&amp;``) or a ``<link|label>``."""
    parts: list[str] = []
    while len(line) > width:
        cut = width
        space = line.rfind(" ", width // 2, width)
        if space > 0:
            cut = space + 1
        amp = line.rfind("&", max(0, cut - 6), cut)
        if amp > 0 and ";" not in line[amp:cut]:
            cut = amp
        lt, gt = line.rfind("<", 0, cut), line.rfind(">", 0, cut)
        if lt > gt and lt > width // 4:
            cut = lt
        parts.append(line[:cut])
        line = line[cut:]
    parts.append(line)
    return parts


def _meaningful(body: str) -> bool:
    stripped = body.strip()
    return bool(stripped) and stripped not in (FENCE, f"{FENCE}\n{FENCE}")


@dataclass(frozen=True)
class Piece:
    """One section's worth of rendered mrkdwn.

    Attributes:
        text: at most the limit's characters, with balanced ```` ``` ```` fences.
        first_line: index (0-based) of the first source line it shows (for overflow snippets).
    """

    text: str
    first_line: int


def markdown_to_mrkdwn_pieces(markdown: str, *, limit: int = MAX_SECTION_CHARS) -> list[Piece]:
    """Render Markdown (model output) as mrkdwn pieces of at most ``limit`` characters.

    Outside code: escaped, mentions neutralised (user mentions too), ``**bold**``,
    ``*italic*``, ``~~strike~~``, ``# headings``, ``- bullets`` and
    ``[label](https://…)`` converted (``__x__`` is left alone: it is usually a
    Python name). Inside fences and inline code: escaped literally. Pieces break at
    line ends (preferring a blank line once a piece is two-thirds full) and never
    leave a fence open.

    Raises:
        ValueError: ``limit`` below 100 characters.
    """
    if limit < 100:
        raise ValueError(f"limit must be at least 100 characters, got {limit}")
    width = limit - _FENCE_RESERVE
    pieces: list[Piece] = []
    current: list[str] = []
    size = 0
    first = 0
    in_fence = False
    fences = _FenceTracker()

    def close(next_first: int) -> None:
        nonlocal current, size, first
        body = "\n".join(current) + ("\n" + FENCE if in_fence else "")
        if _meaningful(body):
            pieces.append(Piece(body, first))
        current, size = ([FENCE], len(FENCE) + 1) if in_fence else ([], 0)
        first = next_first

    for number, raw in enumerate((markdown or "").replace("\r\n", "\n").split("\n")):
        is_fence = fences.feed(raw)
        rendered = FENCE if is_fence else _render_line(raw, in_code=in_fence)
        # a closing fence may use the room kept for it, so it never lands alone in a new piece
        room = width + _FENCE_RESERVE if is_fence and in_fence else width
        for segment in _cut_long(rendered, width - len(FENCE) - 2):
            if current and size + len(segment) + 1 > room:
                close(number)
            elif current and not in_fence and not segment.strip() and size > width * 2 // 3:
                close(number + 1)
                continue
            if not current:
                first = number
            current.append(segment)
            size += len(segment) + 1
        if is_fence:
            in_fence = not in_fence
    if current:
        close(len(pieces))
    return pieces


def split_markdown(text: str, *, limit: int = MAX_SECTION_CHARS) -> list[str]:
    """Split already-escaped mrkdwn ``text`` into pieces of at most ``limit`` characters.

    Lines are kept as they are (no conversion): used for command results. A cut
    fenced block is closed and reopened; a line longer than the limit is cut.
    """
    if len(text) <= limit:
        return [text] if text.strip() else []
    width = limit - _FENCE_RESERVE
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    in_fence = False
    for line in text.split("\n"):
        for segment in _cut_long(line, width - len(FENCE) - 2):
            if current and size + len(segment) + 1 > width:
                body = "\n".join(current)
                pieces.append(body + "\n" + FENCE if in_fence else body)
                current, size = ([FENCE], len(FENCE) + 1) if in_fence else ([], 0)
            current.append(segment)
            size += len(segment) + 1
        if _FENCE_LINE.match(line):
            in_fence = not in_fence
    if current:
        pieces.append("\n".join(current))
    return [piece for piece in pieces if _meaningful(piece)]
