"""The one validation of a question, shared by every way of asking.

Slack's ``/sz-ask`` and mentions, ``POST /api/ask``, ``slackzilla ask`` (and the
``retrieve``/``context`` commands) check a question with :func:`require_question`;
:func:`prepare_question` is what :func:`rag.answer.orchestrator.answer_question`
applies before answering.

Length policy: a question longer than :data:`MAX_QUESTION_CHARS` (4,000
characters) is **cut** to its first 4,000 characters and the answer carries a
note saying so; it is never refused for its length.
"""
from __future__ import annotations

from dataclasses import dataclass

from rag.engine import MAX_QUESTION_CHARS
from rag.errors import EmptyQuestionError
from rag.secrets import LiteralRedactor, redact_text

__all__ = ["MAX_QUESTION_CHARS", "PreparedQuestion", "prepare_question", "require_question"]


def require_question(question: str | None) -> str:
    """The question stripped of surrounding white space.

    Raises:
        EmptyQuestionError: ``question`` is ``None``, empty or only white space (each
            surface maps it to its own sentence: a usage line, a 400, exit code 2).
    """
    text = (question or "").strip()
    if not text:
        raise EmptyQuestionError()
    return text


@dataclass(frozen=True)
class PreparedQuestion:
    """A question ready to answer.

    Attributes:
        text: stripped, pasted secrets redacted, at most :data:`MAX_QUESTION_CHARS` characters.
        notes: remarks for the user (``"The question was cut to its first 4000 characters."``).
        redactions: how many secrets were redacted from it.
    """

    text: str
    notes: tuple[str, ...] = ()
    redactions: int = 0


def prepare_question(question: str | None, *, literals: LiteralRedactor | None = None) -> PreparedQuestion:
    """Check, redact and cut ``question`` (see the module docstring for the length policy).

    Secrets pasted into the question (tokens, ``password=…``, ``DB_PASSWORD=…``, and with
    ``literals`` the repository's own secret-file values) are redacted by
    :func:`rag.secrets.redact_text` before anything else sees the question; the answer
    says so in a note.

    Raises:
        EmptyQuestionError: the question is empty or blank.
    """
    text = require_question(question)
    # A secret pasted into a question must not reach the model, Slack or logs either.
    text, redactions = redact_text(text, literals=literals)
    notes: tuple[str, ...] = ()
    if redactions:
        notes += ("A secret-looking value in the question was replaced by [REDACTED] before searching.",)
    if len(text) > MAX_QUESTION_CHARS:
        text = text[:MAX_QUESTION_CHARS]
        notes += (f"The question was cut to its first {MAX_QUESTION_CHARS} characters.",)
    return PreparedQuestion(text=text, notes=notes, redactions=redactions)
