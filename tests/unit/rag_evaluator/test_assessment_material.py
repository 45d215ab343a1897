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
    state = paper(sentences=20)  # 8 sentences used: 2.5 times as many held

    assert state.material == [UnitMaterial(unit="Monitoring", sentences=20, used=8, enough=True)]
    assert state.summary == (
        "As asked: 4 questions, 12 marks. Material: unit 'Monitoring' holds 20 sentences to ask from, 8 used."
    )


def test_a_unit_too_small_for_a_second_different_paper_says_so() -> None:
    state = paper(sentences=12)

    assert state.material == [UnitMaterial(unit="Monitoring", sentences=12, used=8, enough=False)]
    assert state.summary.endswith(
        "Material: unit 'Monitoring' holds 12 sentences to ask from, 8 used. Too little for a second, different "
        "paper from unit 'Monitoring': a paper of another seed would repeat many of these sentences "
        "(20 would keep two papers to 40% in common)."
    )
