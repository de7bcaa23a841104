"""rag.answer.question: the one empty check and length policy every way of asking shares."""
from __future__ import annotations

import pytest

from rag.answer.question import MAX_QUESTION_CHARS, prepare_question, require_question
from rag.errors import EmptyQuestionError


@pytest.mark.parametrize("blank", [None, "", "   ", "\n\t "])
def test_an_empty_question_is_refused(blank):
    with pytest.raises(EmptyQuestionError, match="type a question"):
        require_question(blank)
    with pytest.raises(EmptyQuestionError):
        prepare_question(blank)


def test_a_question_is_stripped_and_kept_as_is():
    assert require_question("  where is auth?  ") == "where is auth?"
    prepared = prepare_question("  where is auth?  ")
    assert (prepared.text, prepared.notes, prepared.redactions) == ("where is auth?", (), 0)


def test_a_long_question_is_cut_with_a_note_never_refused():
    prepared = prepare_question("y" * (MAX_QUESTION_CHARS * 3))
    assert MAX_QUESTION_CHARS == 4000 and len(prepared.text) == MAX_QUESTION_CHARS
    assert prepared.notes == ("The question was cut to its first 4000 characters.",)


def test_a_pasted_secret_is_redacted():
    token = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    prepared = prepare_question(f"why is {token} refused?")
    assert token not in prepared.text and "[REDACTED]" in prepared.text and prepared.redactions == 1
