"""What ``slackzilla ask`` prints for an answer (the terminal's rendering, as ``bot.slack.render`` is Slack's)."""
from __future__ import annotations

from typing import Any

from bot.cli.common import printable
from bot.slack.text import ZWSP
from rag.answer.orchestrator import AnswerResult
from rag.answer.prompting import source_label

__all__ = ["format_answer_for_terminal"]


def format_answer_for_terminal(result: AnswerResult, *, streamed: bool = False) -> str:
    """What ``slackzilla ask`` prints: the answer, then sources, images, usage and any failure reason.

    Args:
        result: the :class:`rag.answer.orchestrator.AnswerResult`.
        streamed: the model's tokens were already written to the terminal (``on_token``);
            the answer is then not repeated — unless the model failed, in which case
            the local fallback answer follows what was streamed (what the model wrote before it
            was cut off, :attr:`~rag.answer.orchestrator.AnswerResult.cut_off`, is not printed again).
    """
    lines: list[str] = []
    answer = result.answer
    if streamed and result.cut_off and answer.startswith(result.cut_off):
        answer = answer[len(result.cut_off):].lstrip("\n")  # what was cut off is on the screen already
    if streamed and result.mode == "ai":
        lines.append("")
    else:
        # the zero-width spaces that keep a snippet's ``` from closing Slack's fence: a terminal renders no
        # fences, and code copied from it must not carry invisible characters
        lines += [answer.replace(ZWSP, "").rstrip(), ""]
    shown = result.shown_sources if result.mode == "ai" else []
    if shown:
        lines.append("Sources:")
        lines += [printable(f"  {source_label(s)}" + (f" — {s.heading}" if s.heading else ""), one_line=True)
                  for s in shown]
    for note in result.notes:
        lines.append(f"Note: {note}")
    if result.images:
        lines.append(printable("Images: " + ", ".join(i.path for i in result.images), one_line=True))
    if result.error:
        lines.append(f"Note: {result.error}")
    if result.mode == "ai":
        usage: Any = result.usage
        approx = " (estimated)" if usage.estimated else ""
        lines.append(f"[{result.model} · {result.response_rounds} round(s) · {usage.total_tokens} tokens{approx}"
                     f" · {result.timings_ms.get('total', 0) / 1000:.1f} s]")
    return "\n".join(lines).rstrip() + "\n"
