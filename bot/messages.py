"""Every sentence Slack users see, as small functions (as in slack_bolt/logger/messages.py).

Keeping the wording here means handlers stay wiring, translations or tone changes
touch one file, and tests can assert on the same function the code calls.
All functions return Slack mrkdwn; callers escape user-supplied text first.
"""
from __future__ import annotations

__all__ = [
    "answer_footer",
    "answer_heading",
    "command_failed",
    "failure",
    "no_sources",
    "reindex_busy",
    "reindex_failed",
    "reindex_started",
    "reindex_summary",
    "sources_label",
    "working",
]


def working(slash: str) -> str:
    """Acknowledgement text while a slow command runs."""
    return f":hourglass_flowing_sand: Working on `{slash}`…"


def answer_heading(user_id: str | None, question: str) -> str:
    """The line above an answer: who asked what (``question`` already escaped)."""
    who = f"<@{user_id}>" if user_id else "Someone"
    return f"{who} asked: _{question}_"


def sources_label() -> str:
    return "*Sources:*"


def no_sources() -> str:
    return "_No matching files in the repository._"


def answer_footer(*, model: str | None, tokens: int | None, seconds: float | None) -> str:
    """``model · 1,234 tokens · 2.4 s``; parts that are unknown are left out."""
    parts = [f"`{model}`" if model else "no model (local answer)"]
    if tokens:
        parts.append(f"{tokens:,} tokens")
    if seconds is not None:
        parts.append(f"{seconds:.1f} s")
    return " · ".join(parts)


def failure(text: str) -> str:
    """How every refusal or failure starts: a warning sign before the reason."""
    return f":warning: {text}"


def command_failed(slash: str, reason: str) -> str:
    """A command whose handling broke outside the registry (Slack refused the reply, a crash)."""
    return failure(f"`{slash}` failed: {reason}")


def reindex_started(*, user_id: str | None, full: bool) -> str:
    kind = "Full reindex" if full else "Reindex"
    who = f" requested by <@{user_id}>" if user_id else ""
    return f":arrows_counterclockwise: {kind} started{who}…"


def reindex_busy(*, started_by: str | None, running_s: float | None) -> str:
    details = []
    if started_by:
        details.append(f"started by <@{started_by}>")
    if running_s is not None:
        details.append(f"{running_s:.0f} s ago")
    extra = f" ({', '.join(details)})" if details else ""
    return f"A reindex is already running{extra}. Try again when it has finished."


def reindex_summary(*, stats: dict, seconds: float, full: bool) -> str:
    """``Reindex done in 1.2 s: 3 added, 1 changed, 0 removed (120 files, 900 chunks).``"""
    kind = "Full reindex" if full else "Reindex"
    files = stats.get("files")
    chunks = stats.get("chunks")
    totals = f" ({files:,} files, {chunks:,} chunks)" if isinstance(files, int) and isinstance(chunks, int) else ""
    skipped = stats.get("skipped") or {}
    skipped_n = sum(skipped.values()) if isinstance(skipped, dict) else 0
    skipped_text = f", {skipped_n:,} skipped" if skipped_n else ""
    return (
        f":white_check_mark: {kind} done in {seconds:.1f} s: {stats.get('added', 0):,} added, "
        f"{stats.get('changed', 0):,} changed, {stats.get('removed', 0):,} removed{skipped_text}{totals}."
    )


def reindex_failed(reason: str) -> str:
    return f"Reindex failed: {reason}. The previous index is still in use."
