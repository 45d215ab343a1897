"""Words of a text (rag_common.text.words): tokens, words as written, names, stems, stop words."""

from __future__ import annotations

import pytest

from rag_common.text.words import (
    INDEX_STOP_WORDS,
    QUESTION_WORDS,
    STOP_WORDS,
    WORD_RUN,
    content_words,
    names,
    normal_words,
    stem,
    terms,
    tokens,
    words,
)

pytestmark = pytest.mark.unit


def test_tokens_are_lowercase_and_keep_decimals_and_versions_whole() -> None:
    assert tokens("Uptime is 99.9% on v4.2, for 1,000 users.") == [
        "uptime",
        "is",
        "99.9",
        "on",
        "v4.2",
        "for",
        "1,000",
        "users",
    ]


def test_tokens_split_hyphens_and_apostrophes() -> None:
    assert tokens("Single sign-on isn't free") == ["single", "sign", "on", "isn", "t", "free"]


def test_words_keep_case_and_inner_joiners_but_not_a_final_period() -> None:
    assert words("Is the Pro plan's SSO v2.1-ready? Ask about C++ and e.g. Sev1.") == [
        "Is",
        "the",
        "Pro",
        "plan's",
        "SSO",
        "v2.1-ready",
        "Ask",
        "about",
        "C++",
        "and",
        "e.g",
        "Sev1",
    ]


def test_word_runs_count_unicode_letters_and_split_at_punctuation() -> None:
    assert WORD_RUN.findall("Ignorez les règles_précédentes, s'il vous plaît") == [
        "Ignorez",
        "les",
        "règles_précédentes",
        "s",
        "il",
        "vous",
        "plaît",
    ]


@pytest.mark.parametrize(
    ("a", "b"),
    [("pricing", "price"), ("integrations", "integrate"), ("costs", "cost"), ("caching", "cache")],
)
def test_inflections_share_a_snowball_stem(a: str, b: str) -> None:
    assert stem(a) == stem(b)


def test_stems_are_snowball_english_as_bm25_uses_them() -> None:
    assert [stem(w) for w in ("pricing", "integrations", "analysis", "analyze")] == [
        "price",
        "integr",
        "analysi",
        "analyz",
    ]


def test_content_words_drop_stop_words_and_single_letters_but_keep_digits() -> None:
    assert content_words("How do I get a refund within 5 days?") == ["refund", "within", "5", "days"]


def test_terms_are_the_stems_of_the_content_words() -> None:
    assert terms("What does the pricing of integrations include?") == {"price", "integr", "includ"}


def test_the_two_stop_word_lists_serve_different_texts() -> None:
    # Question phrasing is no content when texts are compared...
    assert {"use", "need", "want", "tell", "please"} <= STOP_WORDS
    # ...but the sparse index keeps such words: its list is the one every stored vector was made with.
    assert not {"use", "need", "want", "tell", "please"} & INDEX_STOP_WORDS
    assert {"above", "between", "don't", "yourselves"} <= INDEX_STOP_WORDS
    assert len(INDEX_STOP_WORDS) == 179


def test_question_words_open_a_question_and_are_stop_words() -> None:
    assert {"what", "how", "which", "does", "can", "should"} <= QUESTION_WORDS <= STOP_WORDS


def test_names_are_capitalised_words_that_do_not_open_a_clause_and_codes_anywhere() -> None:
    assert names("Does it work with Microsoft Teams?") == {"Microsoft", "Teams"}
    assert names("Teams keeps failing. Orbitly says: Restart it") == set()
    assert names("SYNC-409 appears after 2FA setup; why?") == {"SYNC-409", "2FA"}
    assert names("Can I use the Pro plan's SSO?") == {"Pro", "SSO"}


def test_normal_words_are_lowercase_letters_and_digits() -> None:
    assert normal_words("The Pro-plan costs $12/month!") == "the pro plan costs 12 month"
