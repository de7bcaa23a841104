"""Chunk boundaries (issue 2): 60/40 windows, 1-based ranges, the character cap,
CRLF line numbers and Markdown headings. Pure functions, no index."""
from __future__ import annotations

import random

import pytest

from rag.ingest.chunk import (
    DEFAULT_CHUNK_POLICY,
    ChunkPolicy,
    chunk_text,
    markdown_headings,
    split_lines,
)


def numbered(n: int, width: int = 0) -> str:
    """``n`` distinct lines ``line 1`` … ``line n`` (padded to ``width`` chars), LF-terminated."""
    return "".join(f"line {i}".ljust(width, "x") + "\n" for i in range(1, n + 1))


def ranges(chunks) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]


def assert_chunks_match_lines(chunks, text: str, max_chars: int) -> None:
    """Every chunk is a verbatim span of the text at the lines it claims, under the cap."""
    lines = split_lines(text)
    for c in chunks:
        assert 1 <= c.start <= c.end <= len(lines), (c.start, c.end, len(lines))
        assert len(c.text) <= max_chars
        if c.start == c.end and len(lines[c.start - 1]) > max_chars:
            assert c.text in lines[c.start - 1]  # a piece of a long (minified) line
        else:
            assert c.text == "\n".join(lines[c.start - 1 : c.end])


def test_defaults_are_60_40_3500():
    assert (DEFAULT_CHUNK_POLICY.window, DEFAULT_CHUNK_POLICY.step, DEFAULT_CHUNK_POLICY.max_chars) == (60, 40, 3500)


@pytest.mark.parametrize(
    ("n_lines", "expected"),
    [
        (1, [(1, 1)]),
        (59, [(1, 59)]),
        (60, [(1, 60)]),
        (61, [(1, 60), (41, 61)]),
        (100, [(1, 60), (41, 100)]),
        (101, [(1, 60), (41, 100), (81, 101)]),
        (150, [(1, 60), (41, 100), (81, 140), (121, 150)]),
    ],
)
def test_windows_are_60_lines_every_40_with_1_based_inclusive_ranges(n_lines, expected):
    text = numbered(n_lines)
    chunks = chunk_text("lib/a.js", text, file_type="js", kind="source")
    assert ranges(chunks) == expected
    assert_chunks_match_lines(chunks, text, 3500)
    # 1-based: the first chunk starts with "line 1", the last ends with the last line.
    assert chunks[0].text.split("\n")[0] == "line 1"
    assert chunks[-1].text.split("\n")[-1] == f"line {n_lines}"


def test_chunk_records_carry_path_type_kind():
    chunks = chunk_text("docs/x.txt", "hello\nworld\n", file_type="txt", kind="documentation")
    assert [(c.path, c.file_type, c.kind, c.heading) for c in chunks] == [("docs/x.txt", "txt", "documentation", None)]
    assert chunks[0].text == "hello\nworld"


def test_custom_policy_window_and_step():
    chunks = chunk_text("a.js", numbered(50), file_type="js", kind="source", policy=ChunkPolicy(window=30, step=20))
    assert ranges(chunks) == [(1, 30), (21, 50)]


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n\n", "\r\n\r\n"])
def test_empty_or_blank_file_gives_no_chunks(text):
    assert chunk_text("a.js", text, file_type="js", kind="source") == []


def test_all_blank_windows_are_dropped_but_numbers_do_not_shift():
    lines = ["first"] * 10 + [""] * 120 + ["last"] * 10  # 140 lines
    text = "\n".join(lines) + "\n"
    chunks = chunk_text("a.js", text, file_type="js", kind="source")
    # Window 41-100 holds only blank lines: dropped. 81-140 keeps its real numbers.
    assert ranges(chunks) == [(1, 60), (81, 140)]
    assert chunks[1].text.split("\n")[-1] == "last"


def test_trailing_newline_does_not_add_a_line():
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\n\n") == ["a", ""]


# -- the character cap ------------------------------------------------------------------------


def test_long_lines_window_is_cut_below_the_cap_without_losing_lines():
    text = numbered(60, width=100)  # 60 × 101 chars ≈ 6 KB in one 60-line window
    chunks = chunk_text("a.js", text, file_type="js", kind="source")
    assert len(chunks) >= 2
    assert all(len(c.text) <= 3500 for c in chunks)
    assert_chunks_match_lines(chunks, text, 3500)
    # The pieces tile lines 1..60 exactly: contiguous, no gap, no overlap.
    assert chunks[0].start == 1 and chunks[-1].end == 60
    for a, b in zip(chunks, chunks[1:]):
        assert b.start == a.end + 1


def test_minified_one_line_file_is_split_by_characters_on_line_1():
    line = "".join(f"function f{i}(a){{return a*{i}}};" for i in range(1500))  # ~40 KB, no newline
    chunks = chunk_text("dist/app.min.js", line, file_type="js", kind="source")
    assert len(chunks) == -(-len(line) // 3500)
    assert all((c.start, c.end) == (1, 1) for c in chunks)
    assert all(len(c.text) <= 3500 for c in chunks)
    assert "".join(c.text for c in chunks) == line


def test_minified_line_inside_a_file_keeps_neighbouring_line_numbers():
    lines = [f"ok {i}" for i in range(1, 6)] + ["m" * 9000] + [f"ok {i}" for i in range(7, 11)]
    text = "\n".join(lines)
    chunks = chunk_text("a.js", text, file_type="js", kind="source")
    assert ranges(chunks) == [(1, 5), (6, 6), (6, 6), (6, 6), (7, 10)]
    assert "".join(c.text for c in chunks if c.start == 6) == "m" * 9000
    assert_chunks_match_lines(chunks, text, 3500)


def test_cap_is_respected_for_a_small_custom_cap():
    text = numbered(30, width=40)
    chunks = chunk_text("a.js", text, file_type="js", kind="source", policy=ChunkPolicy(max_chars=100))
    assert all(len(c.text) <= 100 for c in chunks)
    assert_chunks_match_lines(chunks, text, 100)


def test_random_texts_keep_every_invariant():
    """Seeded fuzz: ranges valid, text verbatim, cap held, every non-blank line covered."""
    rng = random.Random(1234)
    policy = ChunkPolicy(window=12, step=8, max_chars=300)
    for _ in range(60):
        lines = []
        for _ in range(rng.randint(0, 80)):
            roll = rng.random()
            if roll < 0.15:
                lines.append("")
            elif roll < 0.2:
                lines.append("z" * rng.randint(300, 900))  # longer than the cap
            else:
                lines.append("w" * rng.randint(1, 90))
        text = ("\r\n" if rng.random() < 0.3 else "\n").join(lines)
        chunks = chunk_text("f.js", text, file_type="js", kind="source", policy=policy)
        assert_chunks_match_lines(chunks, text, policy.max_chars)
        covered = {n for c in chunks for n in range(c.start, c.end + 1)}
        assert {i for i, ln in enumerate(split_lines(text), 1) if ln.strip()} <= covered


# -- line endings -----------------------------------------------------------------------------


def test_crlf_gives_the_same_line_numbers_and_text_as_lf():
    lf = numbered(130, width=30)
    crlf = lf.replace("\n", "\r\n")
    a = chunk_text("a.js", lf, file_type="js", kind="source")
    b = chunk_text("a.js", crlf, file_type="js", kind="source")
    assert ranges(a) == ranges(b) == [(1, 60), (41, 100), (81, 130)]
    assert [c.text for c in a] == [c.text for c in b]
    assert not any("\r" in c.text for c in b)


def test_mixed_line_endings_and_lone_cr():
    # Only \n and \r\n end a line (git's count); a lone \r stays inside its line.
    assert split_lines("a\r\nb\nc\rd\r\n") == ["a", "b", "c\rd"]


def test_crlf_markdown_headings_match_lf():
    lf = "# Title\n\ntext\n\n## Section\nmore\n"
    assert markdown_headings(split_lines(lf)) == markdown_headings(split_lines(lf.replace("\n", "\r\n")))
    assert markdown_headings(split_lines(lf.replace("\n", "\r\n"))) == [(1, "Title"), (5, "Section")]


# -- Markdown headings ------------------------------------------------------------------------


def test_markdown_heading_parsing():
    lines = [
        "# Top",             # 1
        "#NoSpace",          # 2  not a heading
        "   ### Indented 3", # 3  up to 3 spaces allowed
        "    # code",        # 4  4 spaces: indented code, not a heading
        "## Closed ##",      # 5  closing hashes stripped
        "```bash",           # 6
        "# in a fence",      # 7  not a heading
        "```",               # 8
        "~~~",               # 9
        "## also fenced",    # 10
        "~~~",               # 11
        "###### Six",        # 12
        "####### Seven",     # 13 not a heading (7 hashes)
    ]
    assert markdown_headings(lines) == [(1, "Top"), (3, "Indented 3"), (5, "Closed"), (12, "Six")]


def test_markdown_chunks_carry_the_nearest_heading():
    lines = ["# Guide"] + [f"intro {i}" for i in range(2, 70)] + ["## Install"] + [f"step {i}" for i in range(71, 131)]
    text = "\n".join(lines) + "\n"  # 130 lines, "## Install" on line 70
    chunks = chunk_text("docs/guide.md", text, file_type="md", kind="documentation")
    assert [(c.start, c.end, c.heading) for c in chunks] == [
        (1, 60, "Guide"),
        (41, 100, "Guide"),      # nearest heading at or above line 41
        (81, 130, "Install"),
    ]


def test_markdown_heading_inside_chunk_when_none_above():
    text = "intro\n" * 5 + "## Later\n" + "body\n" * 5
    chunks = chunk_text("a.md", text, file_type="md", kind="documentation")
    assert [(c.start, c.end, c.heading) for c in chunks] == [(1, 11, "Later")]


def test_heading_inside_a_fence_is_not_used():
    text = "```sh\n# not a heading\n```\nplain text\n"
    chunks = chunk_text("a.md", text, file_type="md", kind="documentation")
    assert chunks[0].heading is None


def test_non_markdown_files_get_no_heading():
    chunks = chunk_text("a.py", "# comment that looks like a heading\nx = 1\n", file_type="py", kind="source")
    assert chunks[0].heading is None


# -- policy validation ------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{"step": 0}, {"step": -1}, {"window": 0}, {"max_chars": 0}, {"window": 10, "step": 30}])
def test_invalid_policy_is_rejected(kwargs):
    with pytest.raises(ValueError):
        ChunkPolicy(**kwargs)
