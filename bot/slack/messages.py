"""Every sentence Slack users see, as small functions (as in slack_bolt/logger/messages.py).

Keeping the wording here means handlers stay wiring, translations or tone changes
touch one file, and tests can assert on the same function the code calls.
All functions return Slack mrkdwn; callers escape user-supplied text first. The
``/sz-reindex`` texts belong to that command (``commands/reindex.py``).
"""
from __future__ import annotations

__all__ = [
    "answer_continues",
    "answer_continues_below",
    "answer_part",
    "answer_sent_privately",
    "answer_lost",
    "answered_where",
    "answer_footer",
    "answer_heading",
    "answer_overflow",
    "answered_in_thread",
    "answer_crashed",
    "command_failed",
    "duplicate_ask",
    "failure",
    "answer_interrupted_by_restart",
    "feedback_button",
    "memory_off_note",
    "feedback_thanks",
    "mention_usage",
    "no_sources",
    "overflow_comment",
    "progress_line",
    "rate_limited",
    "searching",
    "slack_refused",
    "still_worked",
    "writing_answer",
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


def no_answering_source(searched: int) -> str:
    """The sources line when the model found no answer in what retrieval gave it."""
    return f"_None of the {searched} excerpt{'s' if searched != 1 else ''} searched answers this._"


def answer_footer(*, model: str | None, tokens: int | None, seconds: float | None,
                  memory_off: bool = False) -> str:
    """``model · 1,234 tokens · 2.4 s``; parts that are unknown are left out. ``memory_off``
    (the state store is unavailable) adds :func:`memory_off`."""
    parts = [f"`{model}`" if model else "no model (local answer)"]
    if tokens:
        parts.append(f"{tokens:,} tokens")
    if seconds is not None:
        parts.append(f"{seconds:.1f} s")
    if memory_off:
        parts.append(memory_off_note())
    return " · ".join(parts)


def memory_off_note() -> str:
    """The footer's note while the state store is unavailable."""
    return ":warning: memory off (state store unavailable): earlier turns and votes may be missing"


def answer_interrupted_by_restart() -> str:
    """Shown, at the next start, in place of an answer whose process stopped before finishing it."""
    return ":warning: Slackzilla stopped before it could finish this answer: interrupted, please ask again."


def failure(text: str) -> str:
    """How every refusal or failure starts: a warning sign before the reason."""
    return f":warning: {text}"


def command_failed(slash: str, reason: str) -> str:
    """A command whose handling broke outside the registry (Slack refused the reply, a crash)."""
    return failure(f"`{slash}` failed: {reason}")


# -- /sz-ask progress, answers and failures (issue 8) ---------------------------------------------

def searching(repo: str, *, follow_up: bool = False, done: bool = False) -> str:
    """First line of the progress message (``repo`` already escaped); ``done`` once answered."""
    what = "your follow-up" if follow_up else "your question"
    return f":mag: Searched *{repo}* for {what}." if done else f":mag: Searching *{repo}* for {what}…"


#: Emoji per progress step; the wording of each step comes from the orchestrator's activity.
_STEP_ICONS = {"retrieval": ":books:", "context": ":jigsaw:", "command": ":gear:", "ai": ":robot_face:",
               "reasoning": ":thought_balloon:", "tool": ":wrench:"}
_STATUS_MARKS = {"failed": " :x:", "skipped": ""}


def progress_line(stage: str, text: str, *, status: str = "completed") -> str:
    """One step of the progress message (``text`` already escaped), e.g. ``:wrench: `getStatus` 12 ms``."""
    return f"{_STEP_ICONS.get(stage, ':small_blue_diamond:')} {text}{_STATUS_MARKS.get(status, '')}"


def writing_answer(*, in_thread: bool) -> str:
    return ":writing_hand: Writing the answer in the thread…" if in_thread else ":writing_hand: Writing the answer…"


def answered_in_thread() -> str:
    return ":white_check_mark: Answered in the thread."


def answered_where(mode: str) -> str:
    """The progress message's last line once the answer went out ``mode`` (see bot.slack.delivery)."""
    if mode == "respond":
        return ":white_check_mark: Answered below."
    if mode == "ephemeral":
        return ":white_check_mark: Slack refused the answer here; it was shown only to the asker."
    if mode == "dm":
        return ":white_check_mark: Slack refused the answer here; it was sent to the asker in a direct message."
    if mode == "lost":
        return failure(answer_lost())
    return answered_in_thread()


def answer_lost() -> str:
    return "Slack refused every way of posting the answer. Please ask again in a moment."


def answer_continues_below(pages: int) -> str:
    """Under the first page of an answer that needed ``pages`` messages."""
    return f":arrow_down: _Part 1 of {pages}: the answer continues in the thread._"


def answer_part(number: int, pages: int) -> str:
    return f"_Part {number} of {pages} of the answer._"


def answer_sent_privately(channel: str | None) -> str:
    """First line of an answer sent as a direct message because the channel refused it."""
    where = f"<#{channel}>" if channel and channel.startswith("C") else "the channel"
    return f":warning: Slack refused my answer in {where}, so here it is:"


def answer_continues() -> str:
    return "_…the answer continues; the full text follows when it is done._"


def answer_overflow() -> str:
    return ":page_facing_up: _The answer is longer than one Slack message: the rest is attached in the thread._"


def overflow_comment() -> str:
    return "The rest of the answer."


def still_worked(has_sources: bool) -> str:
    """What the asker still gets after a failure."""
    if has_sources:
        return "What still worked: the repository search. These sources match your question:"
    return "Nothing was found in the repository before the failure."


def answer_crashed(slash: str) -> str:
    """The answer crashed (the error is captured without its message)."""
    return f"Sorry, {slash} failed unexpectedly. The error has been logged."


def slack_refused(error: str) -> str:
    return f"Slack refused the answer message ({error})"


def rate_limited(*, retry_after_s: int, per_minute: int) -> str:
    """The friendly refusal for the ask after the per-minute allowance."""
    unit = "second" if retry_after_s == 1 else "seconds"
    return (f":hourglass: You have asked {per_minute} questions in the last minute, the most I answer per person. "
            f"Please try again in {retry_after_s} {unit}.")


def duplicate_ask(*, seconds_ago: float) -> str:
    return f"You asked the same question {seconds_ago:.0f} s ago; I am answering it once."


def mention_usage() -> str:
    return "Mention me with a question, e.g. `@slackzilla how is the index updated?`"


def feedback_button(vote: str) -> str:
    return ":+1: Helpful" if vote == "up" else ":-1: Not helpful"


def feedback_thanks(vote: str) -> str:
    if vote == "up":
        return "Thanks for the :+1: feedback, it has been recorded."
    return "Thanks for the :-1: feedback, it has been recorded; it helps us improve the answers."


def ask_interrupted() -> str:
    """Shown in place of the progress message when the bot stops mid-answer."""
    return ":warning: Slackzilla restarted before it could finish this answer. Please ask again in a moment."
