"""Block Kit rendering and Slack text safety (bot.slack.render, bot.slack.text), on real inputs."""
from __future__ import annotations

import json
import re

import pytest

from bot.slack.ask_flow import ThreadMemory
from bot.slack.render import (
    MAX_BLOCKS,
    ProgressView,
    MAX_PAGE_CHARS,
    MAX_PAGES,
    MAX_SECTION_CHARS,
    plain_payload,
    render_answer_message,
    render_failure,
    render_progress,
    source_link,
    sources_text,
)
from bot.slack.text import escape, markdown_to_mrkdwn_pieces, neutralise_markdown, split_markdown, stream_safe_length
from rag.activities import new_activity
from rag.types import Source

ZWSP = "\u200b"


def src(path: str, start: int, end: int) -> Source:
    return Source(path=path, start=start, end=end, score=1.0, file_type="js", kind="source", text="x")


def sections(payload: dict) -> list[str]:
    return [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]


def fenced_lines(texts: list[str]) -> list[str]:
    """Every line that sits inside a ``` fence, over all pieces (each piece opens its own)."""
    out = []
    for text in texts:
        inside = False
        for row in text.split("\n"):
            if row.startswith("```"):
                inside = not inside
            elif inside:
                out.append(row)
    return out


def long_answer(total: int = 20_000) -> tuple[str, list[list[str]]]:
    """Prose and three fenced blocks (one longer than a section) cut to ``total`` characters."""
    blocks = [
        [f"function step{i}(req, res) {{ return next(req && res); }}" for i in range(20)],
        [f"  if (a{i} < b{i} && c{i} > d{i}) {{ log('x & y'); }}" for i in range(90)],  # > 3,000 chars
        [f"SELECT * FROM t{i} WHERE id < {i};" for i in range(30)],
    ]
    prose = "\n\n".join(f"Paragraph {i}: layers run in order & errors skip to handlers. " * 4 for i in range(10))
    parts = []
    for lines in blocks:
        parts += [prose, "```js\n" + "\n".join(lines) + "\n```"]
    text = "\n\n".join(parts) + "\n\n" + prose * 3
    return text[:total], blocks


def test_a_20000_character_answer_with_three_fences_is_split_safely():
    answer, blocks = long_answer()
    assert len(answer) == 20_000 and answer.count("```") == 6
    message = render_answer_message(answer, sources=[src("lib/router.js", 1, 60)], question="how?", user_id="U1",
                                    answer_id="abc123abc123")
    texts = [text for page in message.pages for text in sections(page)]
    assert message.overflow is None and len(message.pages) >= 2
    for page in message.pages:
        assert len(page["blocks"]) <= MAX_BLOCKS and len("".join(sections(page))) <= MAX_PAGE_CHARS
    assert all(len(t) <= MAX_SECTION_CHARS for t in texts)
    assert all(t.count("```") % 2 == 0 for t in texts)
    inside = fenced_lines(texts)
    for lines in blocks:  # every code line stays whole and inside a fence (escaped for mrkdwn)
        for line in lines:
            assert escape(line, keep_user_mentions=False).replace(f"@{ZWSP}", "@") in inside or \
                line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in inside, line
    # the 90-line block is longer than a section: it is closed and reopened, not cut mid-line
    cut = [i for i, t in enumerate(texts[:-1]) if t.endswith("\n```") and texts[i + 1].startswith("```\n")]
    assert cut
    assert "```js" not in json.dumps(message.payload)  # the language tag would show as code text


def test_a_long_answer_is_paginated_and_beyond_the_pages_goes_to_the_overflow_in_order():
    paragraphs = [f"Part {i}. " + "word " * 500 for i in range(80)]  # ~200,000 characters
    answer = "\n\n".join(paragraphs)
    message = render_answer_message(answer, sources=[], question="q", user_id=None, answer_id="0123456789ab")
    assert len(message.pages) == MAX_PAGES and message.overflow
    first = message.pages[0]
    assert first["blocks"][-1]["type"] == "actions" and "rest is attached" in json.dumps(first)
    assert f"Part 1 of {MAX_PAGES}" in json.dumps(first)
    for number, page in enumerate(message.pages[1:], start=2):
        assert f"Part {number} of {MAX_PAGES}" in json.dumps(page["blocks"][-1])
    for page in message.pages:
        assert len(page["blocks"]) <= MAX_BLOCKS and len(page["text"]) <= 3000 and page["text"].strip()
        assert sum(len(t) for t in sections(page)) <= MAX_PAGE_CHARS
    shown = [int(n) for page in message.pages for n in re.findall(r"Part (\d+)\. ", "\n".join(sections(page)))]
    assert shown == list(range(len(shown))) and message.sections == len(shown)  # in order, each once
    assert message.overflow.lstrip().startswith(f"Part {shown[-1] + 1}. ")
    assert message.overflow.rstrip().endswith(paragraphs[-1].rstrip())
    one_page = render_answer_message(answer, sources=[], question="q", user_id=None, max_blocks=10, max_pages=1)
    assert len(one_page.pages) == 1 and len(one_page.payload["blocks"]) <= 10 and one_page.overflow


def test_plain_payload_carries_the_same_text_without_blocks():
    message = render_answer_message("The **HMAC** is checked (src/webhook.js:4-7).\n\n```js\nverify(a)\n```",
                                    sources=[src("src/webhook.js", 4, 7)], question="how?", user_id="U1")
    plain = plain_payload(message.payload)
    assert "blocks" not in plain and plain["unfurl_links"] is False
    assert "The *HMAC* is checked" in plain["text"] and "```\nverify(a)\n```" in plain["text"]
    assert "src/webhook.js:L4-L7" in plain["text"] and "<@U1> asked" in plain["text"]


def test_fences_follow_commonmark_and_backticks_inside_never_close_slack_blocks():
    answer = ("````md\n```js\nx()\n```\n````\n"      # a 4-backtick fence showing a fence
              "```js\nconst md = `\n```bash\nnpm test\n```\n`;\n```\n"  # Markdown in a template literal
              "```\nlet a = \"```\";\n```\n"            # mid-line backticks in code
              "~~~\n```\n~~~\n"                          # a tilde fence holding a backtick one
              "Prose with ``` and ``a`b`` and `code`.")
    [piece] = markdown_to_mrkdwn_pieces(answer)
    lines = piece.text.split("\n")
    assert [i for i, line in enumerate(lines) if line == "```"] == [0, 4, 5, 11, 12, 14, 15, 17]
    assert piece.text.count("```") == 8  # only our fences: every other run is broken up
    b3 = f"`{ZWSP}`{ZWSP}`"
    assert lines[1:4] == [f"{b3}js", "x()", b3] and lines[7] == f"{b3}bash" and lines[9] == b3
    assert lines[13] == f"let a = \"{b3}\";" and lines[16] == b3
    assert lines[18] == f"Prose with {b3} and ``a`b`` and `code`."
    # a cut block is closed and reopened on the next piece, never left open
    long_code = "```js\n" + "\n".join(f"```bash line {i}" if i % 10 == 0 else f"x{i}()" for i in range(600)) + "\n```"
    texts = [p.text for p in markdown_to_mrkdwn_pieces(long_code)]
    assert len(texts) > 1 and all(t.startswith("```\n") and t.endswith("\n```") and t.count("```") == 2
                                  for t in texts)


def test_model_text_cannot_ping_anyone_but_links_and_escapes_survive():
    answer = ("<!channel> <!here|here> <!everyone> <!subteam^S0DEV|@devs> @here @channel ask <@U123> or "
              "<@W9|boss> in <#C42|general>, see <https://x.io/a?b=1&c=2|docs> or [guide](https://g.io/x). "
              "a < b && c > d, <!date^1392734382^{date}|Feb 18>")
    payload = render_answer_message(answer, sources=[], question="ping <!here> and <@U7>?", user_id="U1").payload
    shown = json.dumps(payload, ensure_ascii=False)
    for needle in ("<!channel>", "<!here", "<!everyone>", "<!subteam", "<@U123>", "<@W9", "<@U7>", "<!date",
                   " @here", " @channel"):
        assert needle not in shown, needle
    text = sections(payload)[0]
    assert text.startswith(f"@{ZWSP}channel @{ZWSP}here @{ZWSP}everyone @{ZWSP}devs @{ZWSP}here @{ZWSP}channel")
    assert f"@{ZWSP}U123" in text and f"@{ZWSP}W9" in text and "<#C42|general>" in text
    assert "<https://x.io/a?b=1&c=2|docs>" in text and "<https://g.io/x|guide>" in text
    assert "a &lt; b &amp;&amp; c &gt; d" in text and "&lt;!date^1392734382^{date}|Feb 18&gt;" in text
    assert payload["blocks"][0]["elements"][0]["text"].startswith("<@U1> asked:")  # ours stays a mention


def test_escape_keeps_our_mentions_unless_told_otherwise():
    assert escape("a < b && <!channel> <!here|here> <!subteam^S123> <@U123> <https://x.io|x>") == (
        f"a &lt; b &amp;&amp; @{ZWSP}channel @{ZWSP}here @{ZWSP}subteam <@U123> <https://x.io|x>")
    assert escape("<@U123> <mailto:a@b.co|mail>", keep_user_mentions=False) == f"@{ZWSP}U123 <mailto:a@b.co|mail>"
    assert escape(None) == ""


def test_markdown_becomes_mrkdwn_outside_code_only():
    text = ("# Routing\n\nUse **bold**, *italic*, ~~old~~ and [the guide](https://e.x/g).\n- one\n  * two\n"
            "Inline `**not bold** <b>` stays.\n```py\nx = a**b  # **kept**\n```")
    [piece] = markdown_to_mrkdwn_pieces(text)
    assert piece.text == ("*Routing*\n\nUse *bold*, _italic_, ~old~ and <https://e.x/g|the guide>.\n• one\n  • two\n"
                          "Inline `**not bold** &lt;b&gt;` stays.\n```\nx = a**b  # **kept**\n```")
    assert markdown_to_mrkdwn_pieces("") == [] and markdown_to_mrkdwn_pieces("```\n```") == []
    with pytest.raises(ValueError):
        markdown_to_mrkdwn_pieces("x", limit=10)


def test_long_lines_are_cut_without_breaking_entities_or_links():
    minified = "a&b<c;" * 1500  # one 9,000-character line in a fence (minified code)
    texts = [p.text for p in markdown_to_mrkdwn_pieces(f"```\n{minified}\n```")]
    assert len(texts) >= 5 and all(len(t) <= MAX_SECTION_CHARS and t.count("```") == 2 for t in texts)
    body = "".join(fenced_lines(texts))
    assert body == minified.replace("&", "&amp;").replace("<", "&lt;")
    links = " ".join(f"<https://example.com/{i}|link {i}>" for i in range(300))
    texts = [p.text for p in markdown_to_mrkdwn_pieces(links)]
    assert all(len(t) <= MAX_SECTION_CHARS for t in texts)
    assert sum(len(re.findall(r"<https://example\.com/\d+\|link \d+>", t)) for t in texts) == 300


def test_an_unclosed_fence_is_closed_and_split_markdown_keeps_its_contract():
    [piece] = markdown_to_mrkdwn_pieces("Here:\n```\nstill code")
    assert piece.text == "Here:\n```\nstill code\n```"
    text = "intro\n```js\n" + "\n".join(f"line {i} " + "x" * 60 for i in range(200)) + "\n```\nend"
    pieces = split_markdown(text)
    assert len(pieces) > 1 and all(len(p) <= MAX_SECTION_CHARS and p.count("```") % 2 == 0 for p in pieces)


def test_source_links_are_commit_pinned_with_the_web_url_and_plain_without():
    source = src("docs/getting started.md", 3, 17)
    assert source_link(source, web_url="https://github.com/acme/shop/", commit="0f1e2d3c") == (
        "<https://github.com/acme/shop/blob/0f1e2d3c/docs/getting%20started.md#L3-L17|docs/getting started.md:L3-L17>")
    assert source_link(source, web_url="https://github.com/acme/shop", commit=None).startswith(
        "<https://github.com/acme/shop/blob/HEAD/docs/")
    assert source_link(src("a<b>.js", 1, 2), web_url=None, commit=None) == "`a&lt;b&gt;.js:L1-L2`"
    many = [src(f"lib/{'deep/' * 20}file{i}.js", 1, 60) for i in range(40)] + [src("lib/x.js", 1, 2)] * 3
    text = sources_text(many, web_url="https://github.com/acme/shop", commit="abc")
    assert len(text) <= MAX_SECTION_CHARS and text.endswith("more") and text.count("lib/x.js") == 0
    assert sources_text([src("a.js", 1, 2)] * 3, web_url=None, commit=None).count("a.js") == 1
    assert sources_text([], web_url=None, commit=None) == "_No matching files in the repository._"
    assert sources_text([], web_url=None, commit=None, searched=3) == "_None of the 3 excerpts searched answers this._"
    assert sources_text([], web_url=None, commit=None, searched=1) == "_None of the 1 excerpt searched answers this._"


def test_a_source_link_cannot_ping_broadcast_or_break_out():
    """A saved thread's title kept ``<@U0BOB>`` as a live mention inside the link label (every answer citing
    it pinged Bob, and the nested ``<…>`` ended the link early); a document's ``metadata.url`` holding
    ``><!channel> <https://evil…`` became a real broadcast and a second link."""
    titled = lambda s: ("https://acme.slack.com/archives/C1/p1", "#general: <@U0BOB> the llama migration (doc:1)")
    assert source_link(src("doc:1", 1, 2), web_url=titled, commit=None) == (
        "<https://acme.slack.com/archives/C1/p1|#general: @\u200bU0BOB the llama migration (doc:1)>")
    hostile = lambda s: ("https://wiki.example/quokka><!channel> <https://evil.example/login", "Quokka runbook")
    link_text = source_link(src("doc:2", 1, 2), web_url=hostile, commit=None)
    assert link_text == "<https://wiki.example/quokka%3E%3C!channel%3E%20%3Chttps://evil.example/login|Quokka runbook>"
    assert link_text.count("<") == 1 and link_text.count(">") == 1
    unlinked = lambda s: (None, "<@U0BOB> notes <!here>")
    assert source_link(src("doc:3", 1, 2), web_url=unlinked, commit=None) == "`@\u200bU0BOB notes @\u200bhere`"


def test_failure_message_says_what_broke_and_what_still_worked():
    payload = render_failure("the model did not finish within 1 s", question="q?", user_id="U1",
                             sources=[src("src/a.js", 1, 9)], lines=[":books: Found 1 sources in 1 files"])
    shown = json.dumps(payload)
    assert payload["text"].startswith(":warning:") and "the model did not finish" in shown
    assert "What still worked" in shown and "`src/a.js:L1-L9`" in shown and "Found 1 sources" in shown
    nothing = json.dumps(render_failure("no index yet", question="q", user_id=None))
    assert "Nothing was found" in nothing


def test_progress_view_turns_activities_into_lines():
    view = ProgressView(repo="shop", question="how <!here>?", user_id="U1")
    view.apply(new_activity("retrieval", "started", "Searching the repository"))
    view.apply(new_activity("retrieval", "completed", "Found 2 sources in 2 files", {
        "sources": [{"path": "src/a.js", "start": 1, "end": 9, "score": 1.0},
                    {"path": "README.md", "start": 1, "end": 4, "score": 0.5}]}))
    view.apply(new_activity("context", "completed", "Packed 120 of 4000 tokens from 2 files"))
    view.apply(new_activity("ai", "started", "Asking m (round 1)", {"round": 1}))
    view.apply(new_activity("tool", "completed", "getStatus → /api/status (12 ms)",
                            {"tool": "getStatus", "duration_ms": 12.4}))
    view.apply(new_activity("tool", "failed", "runCommand …", {"tool": "runCommand", "duration_ms": 3,
                                                               "error_code": "refused"}))
    view.apply(new_activity("ai", "completed", "m answered (40 characters)", {"round": 1}))
    lines = view.lines()
    assert lines == [
        ":books: Found 2 sources in 2 files: `src/a.js:L1-L9`, `README.md:L1-L4`",
        ":jigsaw: Packed 120 of 4000 tokens from 2 files",
        ":robot_face: m answered (40 characters)",
        ":wrench: `getStatus` 12 ms",
        ":wrench: `runCommand` 3 ms (refused) :x:",
    ]
    assert [s.path for s in view.sources] == ["src/a.js", "README.md"]
    view.writing, view.show_partial = "in_place", True
    view.add_text("So far ")
    view.add_text("**this**")
    payload = view.payload()
    assert payload["text"] == ":mag: Searching *shop* for your question…"
    assert "<!here>" not in json.dumps(payload) and sections(payload)[-1] == "So far *this*"
    assert "Writing the answer…" in sections(payload)[0]


def test_progress_partial_answer_is_capped():
    payload = render_progress(header="h", lines=[], question="q", user_id=None, partial="word " * 20_000)
    assert len(payload["blocks"]) <= 14 and "answer continues" in json.dumps(payload)


def test_streamed_markdown_is_neutralised_and_held_back_until_complete():
    assert stream_safe_length("hello <!chan") == len("hello ")
    assert stream_safe_length("hi @chan") == 3 and stream_safe_length("mail me@") == len("mail me")
    assert stream_safe_length("a < b " + "x" * 100) == 106  # a lone '<' long ago is not held forever
    assert neutralise_markdown("<!channel> **<@U1>** @here <https://x.io>") == \
        f"@{ZWSP}channel **@{ZWSP}U1** @{ZWSP}here <https://x.io>"


def test_thread_memory_is_bounded_and_keeps_the_latest_pairs():
    memory = ThreadMemory(max_threads=2, max_pairs=2)
    for ts in ("1", "2", "3"):
        memory.remember(ts, f"q{ts}", f"a{ts}")
    assert "1" not in memory and "3" in memory
    for i in range(3):
        memory.remember("3", f"more{i}", f"ans{i}")
    assert memory.history("3") == [{"role": "user", "content": "more1"}, {"role": "assistant", "content": "ans1"},
                                   {"role": "user", "content": "more2"}, {"role": "assistant", "content": "ans2"}]
    assert memory.history(None) == []


def test_upper_case_broadcasts_are_neutralised_in_streamed_markdown_too():
    from bot.slack.text import neutralise_markdown

    shown = neutralise_markdown("ping <!CHANNEL> and <!Here|here> and <!EVERYONE>")
    assert "<!" not in shown and "CHANNEL" in shown and "here" in shown


def test_the_askers_backticks_and_control_characters_stay_out_of_the_public_heading():
    """``/sz-ask ```close fence``` how…`` opened a code block in the channel's "asked:" line, and NUL and other
    control characters were posted as given."""
    payload = render_progress(header="h", lines=[], question="```close fence``` how does\x00 routing\x07 work",
                              user_id="U1")
    heading = payload["blocks"][0]["elements"][0]["text"]
    assert "```" not in heading and "\x00" not in heading and "\x07" not in heading
    assert heading.startswith("<@U1> asked: _") and "routing work" in heading
