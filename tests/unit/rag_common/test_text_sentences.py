"""Sentences and clauses (rag_common.text.sentences): the one sentence splitter and its neighbours."""

from __future__ import annotations

import pytest

from rag_common.text.sentences import clauses, ends_clause, ends_sentence, opens_clause, split_sentences

pytestmark = pytest.mark.unit


def test_sentences_end_at_a_stop_before_a_capital_a_digit_or_a_quote() -> None:
    text = 'Plans renew monthly. 30 days notice applies! Is it "fair"? "Yes," says support.'
    assert split_sentences(text) == [
        "Plans renew monthly.",
        "30 days notice applies!",
        'Is it "fair"?',
        '"Yes," says support.',
    ]


def test_abbreviations_initials_and_decimals_end_no_sentence() -> None:
    text = "Connect a tool, e.g. Slack or Teams. Uptime is 99.9% per month. Ask J. Smith for approx. 30 seats."
    assert split_sentences(text) == [
        "Connect a tool, e.g. Slack or Teams.",
        "Uptime is 99.9% per month.",
        "Ask J. Smith for approx. 30 seats.",
    ]


def test_a_lowercase_word_after_a_stop_continues_the_sentence() -> None:
    assert split_sentences("See the docs. then restart.") == ["See the docs. then restart."]


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    assert split_sentences("It said “done.” Then [1] it stopped.") == ["It said “done.”", "Then [1] it stopped."]


def test_blank_text_has_no_sentences() -> None:
    assert split_sentences("   ") == []


@pytest.mark.parametrize(
    ("text", "sentence", "clause"),
    [
        ("done.", True, True),
        ('said."', True, True),
        ("really?)", True, True),
        ("as follows:", False, True),
        ("v4", False, False),
    ],
)
def test_sentence_and_clause_ends(text: str, sentence: bool, clause: bool) -> None:
    assert (ends_sentence(text), ends_clause(text)) == (sentence, clause)


def test_clauses_end_at_sentence_and_clause_punctuation_and_at_line_breaks() -> None:
    assert clauses("Compare plans: Pro or Business; which?\nThanks") == [
        "Compare plans",
        "Pro or Business",
        "which",
        "Thanks",
    ]


def test_a_word_opens_a_clause_at_the_start_after_punctuation_or_a_line_break() -> None:
    text = 'Teams fails. "Orbitly" too; and Slack\nZoom'
    assert [opens_clause(text, text.index(w)) for w in ("Teams", "Orbitly", "Slack", "Zoom")] == [
        True,
        True,
        False,
        True,
    ]


def test_a_stop_run_into_a_capitalised_word_ends_a_sentence() -> None:
    text = (
        "Learn how to upload PDFs, making it easy to digest long documents.Tool Use & Function CallingDiscover "
        "how to extend Claude’s capabilities. Use Node.js, e.g.Slack, or OpenAI.Next ends one."
    )
    assert split_sentences(text) == [
        "Learn how to upload PDFs, making it easy to digest long documents.",
        "Tool Use & Function CallingDiscover how to extend Claude’s capabilities.",
        "Use Node.js, e.g.Slack, or OpenAI.Next ends one.",
    ]
