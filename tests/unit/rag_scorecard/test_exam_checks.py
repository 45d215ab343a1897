"""The scorecard's mechanical checks read a question as a teacher does: a stem naming its file,
a cloze above remember, a key shaped unlike its distractors, a fragment or a piece of a longer
term as an option, and the same sentence asked twice all fail."""

from __future__ import annotations

from typing import Any

import pytest

from rag_scorecard.exam_checks import check_paper, counts_or_shortfall, levels, seed_overlap

pytestmark = pytest.mark.unit

QUOTE = "Backups are kept for 30 days in two regions on the Business plan."


def question(stem: str, options: list[str], answer: str, bloom: str = "remember", **more: Any) -> dict[str, Any]:
    return {
        "kind": "mcq",
        "stem": stem,
        "options": options,
        "answer": answer,
        "bloom": bloom,
        "citations": [{"source": "docs/getting-started.md", "section": "Create your workspace", "quote": QUOTE}],
        **more,
    }


def test_a_real_question_with_options_of_one_shape_passes_every_check() -> None:
    good = question(
        "How many days are backups kept in two regions?", ["30 days", "7 days", "90 days", "14 days"], "30 days"
    )
    assert check_paper([good]) == [dict.fromkeys(check_paper([good])[0], True)]


def test_the_old_cloze_naming_its_file_and_section_fails() -> None:
    old = question(
        'Interpret this statement from "Create your workspace" (getting-started.md) and choose the value that '
        'completes it: "Backups are kept for _____ in two regions."',
        ["30 days", "14-day", "90 days", "7 days"],
        "30 days",
        bloom="understand",
    )
    verdict = check_paper([old])[0]
    assert not verdict["no_source_name"]
    assert not verdict["real_question"]
    assert not verdict["one_shape"]  # "14-day" among "30 days"


def test_fragments_and_pieces_of_a_longer_term_are_not_whole_terms() -> None:
    fragments = question("Which product signs members in?", ["Once SSO", "Open Settings", "Okta", "Azure AD"], "Okta")
    assert not check_paper([fragments])[0]["whole_terms"]
    piece = question("Which plan keeps backups in two regions?", ["Business", "Starter", "Free", "Team"], "Business")
    piece["citations"][0]["quote"] = "Backups are kept in two regions on the Business Plus plan."
    assert not check_paper([piece])[0]["whole_terms"]


def test_the_same_sentence_asked_twice_is_a_duplicate() -> None:
    first = question("How many days are backups kept?", ["30 days", "7 days", "90 days", "14 days"], "30 days")
    second = question("In how many regions are backups kept?", ["two", "three", "four", "five"], "two")
    assert [v["not_duplicate"] for v in check_paper([first, second])] == [True, False]


def test_levels_counts_and_seed_overlap_as_the_paper_says_them() -> None:
    state = {
        "blueprint": {"bloom_levels": ["remember", "evaluate", "analyze"], "counts": {"mcq": 2}},
        "questions": [question("How many days?", [], "30 days")],
        "bloom_unsupported": [{"level": "evaluate", "reason": "no advice"}],
        "shortfall": [{"kind": "mcq", "marks_missing": 1}],
    }
    assert levels(state)["unaccounted"] == ["analyze"]
    assert counts_or_shortfall(state)
    assert counts_or_shortfall({**state, "shortfall": []}) is False
    other = {"questions": [question("x?", [], "y")]}
    assert seed_overlap(state, other) == 1.0
