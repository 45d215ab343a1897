"""The paper tells the teacher how much material its unit holds against what the paper uses, and
says in words when a paper of another seed could not rest on other sentences."""

from __future__ import annotations

import pytest

from rag_common.wire.messages.assessment import (
    AssessmentItem,
    AssessmentState,
    Blueprint,
    Citation,
    Question,
    QuestionSpec,
    UnitMaterial,
    Validation,
)
from rag_evaluator.assessing import finish

pytestmark = pytest.mark.unit


def question(index: int, quotes: list[str]) -> Question:
    return Question(
        index=index,
        kind="short",
        stem=f"Why does service {index} keep its logs?",
        answer=" ".join(quotes),
        bloom="understand",
        difficulty="medium",
        marks=3,
        unit="Monitoring",
        citations=[Citation(source="ops.docx", section="Monitoring", quote=q) for q in quotes],
        rule="why",
        validation=Validation(valid=True),
    )


def paper(sentences: int) -> AssessmentState:
    questions = [
        question(i, [f"Service {i} keeps its logs for {i} days.", f"Service {i} rotates them."]) for i in range(4)
    ]
    items = [
        AssessmentItem(spec=QuestionSpec(index=q.index, kind="short", unit="Monitoring", marks=3), question=q)
        for q in questions
    ]
    state = AssessmentState(
        id="a", blueprint=Blueprint(units=["Monitoring"], counts={"short": 4}, bloom_levels=["understand"])
    )
    finish(state, items, 1, [UnitMaterial(unit="Monitoring", sentences=sentences)])
    return state


def test_a_unit_with_room_for_another_paper_says_what_it_holds_and_uses() -> None:
    state = paper(sentences=120)  # 8 sentences used: another seed's paper shares about 17 % of them

    assert state.material == [UnitMaterial(unit="Monitoring", sentences=120, used=8, enough=True)]
    assert state.summary == (
        "As asked: 4 questions, 12 marks. Material: unit 'Monitoring' holds 120 sentences to ask from, 8 used."
    )


def test_a_unit_too_small_for_a_second_different_paper_says_so() -> None:
    # 2.5 times the sentences used would do for an even draw, but the forms can ask about 40 % of
    # them, and a paper of 8 sentences spreads wide: 60 leave no room, 105 do.
    state = paper(sentences=60)

    assert state.material == [UnitMaterial(unit="Monitoring", sentences=60, used=8, enough=False)]
    assert state.summary.endswith(
        "Material: unit 'Monitoring' holds 60 sentences to ask from, 8 used. Too little for a second, different "
        "paper from unit 'Monitoring': a paper of another seed would repeat about 33% of these sentences, often "
        "more than 40% (about 105 sentences would leave room for one)."
    )
    assert paper(sentences=105).material[0].enough
