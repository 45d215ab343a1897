"""A question the teacher asked to write again: it takes the old one's place when it passed its
checks and asks something else; otherwise the old one stays, and the paper says why."""

from __future__ import annotations

import pytest

from rag_common.wire.messages.assessment import (
    AssessmentItem,
    AssessmentState,
    Blueprint,
    Citation,
    Question,
    QuestionSpec,
    Validation,
)
from rag_evaluator.rewriting import apply_rewrite

pytestmark = pytest.mark.unit


def question(index: int, stem: str, valid: bool = True, reasons: tuple[str, ...] = ()) -> Question:
    return Question(
        index=index,
        kind="short",
        stem=stem,
        answer=f"Answer to {stem}",
        bloom="understand",
        difficulty="medium",
        marks=3,
        unit="billing.md",
        citations=[Citation(source="billing.md", section="Billing", quote=f"Quote of {stem}")],
        validation=Validation(valid=valid, checks={"grounded": valid}, reasons=list(reasons)),
    )


OLD = [question(0, "Why are refunds prorated?"), question(2, "How are invoices sent?")]


def paper() -> AssessmentState:
    state = AssessmentState(
        id="0123456789abcdef0123456789abcdef",
        status="queued",
        blueprint=Blueprint(counts={"short": 3}),
        questions=[q.model_copy(deep=True) for q in OLD],
        edits=["Removed question 2 (short, 3 marks): When do credits expire?"],
    )
    state.progress.done, state.progress.total = 2, 3
    return state


def back(new: Question | None) -> list[AssessmentItem]:
    spec = QuestionSpec(index=2, kind="short", bloom="understand", marks=3, unit="billing.md")
    return [
        AssessmentItem(spec=QuestionSpec(index=0, kind="short"), question=OLD[0]),
        AssessmentItem(spec=spec, question=new),
    ]


def test_a_passed_new_question_takes_the_old_ones_place() -> None:
    state = paper()
    edit = apply_rewrite(state, back(question(2, "What does an invoice list?")), 2)
    assert [q.stem for q in state.questions] == ["Why are refunds prorated?", "What does an invoice list?"]
    assert edit == "Wrote question 2 again; it was: How are invoices sent?"
    assert state.edits[-1] == edit
    assert state.status == "done"
    assert (state.progress.done, state.progress.total) == (3, 3)


@pytest.mark.parametrize(
    ("new", "why"),
    [
        (None, "its unit offered no other material to ask from"),
        (question(2, "What does an invoice list?", valid=False, reasons=("asks the same as question 1",)),
         "asks the same as question 1"),
        (question(2, "How are invoices sent ?"), "the material gave the same question again"),
    ],
)  # fmt: skip
def test_a_failed_or_identical_question_leaves_the_old_one_and_says_why(new: Question | None, why: str) -> None:
    state = paper()
    edit = apply_rewrite(state, back(new), 2)
    assert [q.stem for q in state.questions] == [q.stem for q in OLD]
    assert edit == f"Question 2 could not be written again ({why}); it stays as it was."
    assert state.status == "done"
    assert len(state.edits) == 2


def test_a_redelivered_rewrite_edits_the_paper_once() -> None:
    state = paper()
    apply_rewrite(state, back(question(2, "What does an invoice list?")), 2)
    assert apply_rewrite(state, back(question(2, "What does an invoice list?")), 2) == ""
    assert [q.stem for q in state.questions] == ["Why are refunds prorated?", "What does an invoice list?"]
    assert len(state.edits) == 2
