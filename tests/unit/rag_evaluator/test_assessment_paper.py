"""The paper a teacher gets: no question twice, what is missing said per type and in marks with
why, a progress counter that never runs backwards."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from rag_common.store.assessments import AssessmentMetrics, in_stage
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import (
    Assessment,
    AssessmentItem,
    AssessmentRetrieved,
    AssessmentState,
    Blueprint,
    Citation,
    Question,
    QuestionSpec,
    Validation,
)
from rag_evaluator.assessing import check_items, finish, regenerate
from rag_generator.assessing import write_items
from rag_generator.settings import GeneratorSettings

pytestmark = pytest.mark.unit

PLANS = Passage(
    n=1,
    source="billing.md",
    section="Billing > Plans",
    text="The Pro plan costs $12 per user per month and keeps 90 days of history.\n"
    "Refunds are prorated because customers should only pay for the months they used.\n"
    "Audit logs are kept for 400 days on the Enterprise plan.",
)
SENTENCE = "The Pro plan costs $12 per user per month and keeps 90 days of history."


def mcq(index: int, stem: str, quote: str = SENTENCE, answer: str = "$12") -> Question:
    return Question(
        index=index,
        kind="mcq",
        stem=stem,
        options=[answer, "$8", "$25", "$40"],
        answer_index=0,
        answer=answer,
        bloom="remember",
        difficulty="medium",
        marks=1,
        citations=[Citation(source="billing.md", section="Billing > Plans", quote=quote)],
        rule="recall",
    )


def item(question: Question | None, kind: str = "mcq", index: int = 0, marks: float = 1.0) -> AssessmentItem:
    spec = QuestionSpec.model_validate(
        {"index": index, "kind": kind, "marks": marks, "topic": "billing.md > Billing > Plans"}
    )
    return AssessmentItem(spec=spec, passages=[PLANS], question=question)


def verdicts(items: list[AssessmentItem]) -> list[tuple[bool, list[str]]]:
    return [(i.question.validation.valid, i.question.validation.reasons) for i in items if i.question is not None]


def test_the_same_stem_twice_is_a_duplicate_without_embeddings() -> None:
    first = mcq(0, "Identify the price of the Pro plan per user per month.")
    again = mcq(1, "Identify the price of the Pro plan, per user per month?", quote="")
    checked = check_items([item(first), item(again, index=1)], None, 0.9, 1)
    assert verdicts(checked)[0][0] is True
    valid, reasons = verdicts(checked)[1]
    assert valid is False
    assert "asks the same as question 1 (the same stem)" in reasons


def test_the_same_key_from_the_same_sentence_is_a_duplicate_however_the_stem_reads() -> None:
    first = mcq(0, "Identify the monthly price of the Pro plan per user.")
    # Another wording, the quote cut shorter: still $12 from the same sentence.
    again = mcq(1, "Recall what one user of the Pro plan pays each month.", quote="The Pro plan costs $12 per user")
    valid, reasons = verdicts(check_items([item(first), item(again, index=1)], None, 0.9, 1))[1]
    assert valid is False
    assert "asks for the same key as question 1 from the same sentence" in reasons


def test_a_question_written_again_is_checked_against_the_whole_paper() -> None:
    """Question 1 failed and is written again; its new version repeats question 3, accepted in the
    first pass: it must not pass because question 3 stands later in the paper."""
    logs = "Audit logs are kept for 400 days on the Enterprise plan."
    third = mcq(2, "Identify how long audit logs are kept on the Enterprise plan.", quote=logs, answer="400 days")
    third = third.model_copy(update={"options": ["400 days", "30 days", "7 days", "60 days"]})
    broken = mcq(0, "Identify the price.", answer="$99")
    first_pass = check_items(
        [item(broken), item(mcq(1, "Name the plan.", quote="x"), index=1), item(third, index=2)], None, 0.9, 1
    )
    assert verdicts(first_pass)[2][0] is True
    redo = regenerate(first_pass)
    rewritten = mcq(0, "Identify how long audit logs are kept on the Enterprise plan.", quote=logs, answer="400 days")
    rewritten = rewritten.model_copy(update={"options": ["400 days", "30 days", "7 days", "60 days"]})
    redo[0] = redo[0].model_copy(update={"question": rewritten})
    second_pass = check_items(redo, None, 0.9, 2)
    assert second_pass[0].question is not None
    assert second_pass[0].question.validation.valid is False
    assert "asks the same as question 3 (the same stem)" in second_pass[0].question.validation.reasons


def test_a_short_paper_says_what_is_missing_per_type_in_marks_and_why() -> None:
    good = [
        item(
            mcq(i, f"Identify value {i} of the Pro plan.", quote=f"q{i}").model_copy(
                update={"validation": Validation(valid=True, checks={"key_supported": True})}
            ),
            index=i,
        )
        for i in range(2)
    ]
    failed = mcq(2, "Identify the price.").model_copy(
        update={
            "validation": Validation(
                valid=False, checks={"key_supported": False}, reasons=["the key is not supported by the cited passage"]
            )
        }
    )
    nothing = item(None, kind="short", index=3, marks=3)  # its passages offered nothing to ask, twice
    gone = item(None, kind="long", index=4, marks=6).model_copy(
        update={
            "rejected": [
                failed.model_copy(update={"index": 4, "kind": "long", "marks": 6, "options": [], "answer_index": None})
            ]
        }
    )
    state = AssessmentState(
        id="a", blueprint=Blueprint(counts={"mcq": 3, "short": 1, "long": 1}, bloom_levels=["remember"])
    )
    finish(state, [*good, item(failed, index=2), nothing, gone], 2)

    assert state.counts.dropped == 3
    assert len(state.dropped) == state.counts.dropped  # the unwritten short question is listed too
    assert state.summary == (
        "2 of 5 questions, 2 of 12 marks: missing 1 multiple-choice of 3 (1 mark), "
        "1 short-answer of 1 (3 marks), 1 long-answer of 1 (6 marks)."
    )
    by_kind = {g.kind: g for g in state.shortfall}
    assert (by_kind["mcq"].missing, by_kind["mcq"].marks_missing) == (1, 1.0)
    assert by_kind["mcq"].reasons == ["question 3: the key is not supported by the cited passage"]
    assert by_kind["short"].reasons == [
        "question 4: no short-answer question could be written from billing.md > Billing > Plans: "
        "its passages offered nothing to ask"
    ]
    assert "the key is not supported" in by_kind["long"].reasons[0]
    assert "offered nothing to ask" in by_kind["long"].reasons[0]
    assert (state.marks_requested, state.marks_met) == (12.0, 2.0)


def test_a_full_paper_says_so() -> None:
    done = item(mcq(0, "Identify the price.").model_copy(update={"validation": Validation(valid=True)}))
    state = AssessmentState(id="a", blueprint=Blueprint(counts={"mcq": 1}, bloom_levels=["remember"]))
    finish(state, [done], 1)
    assert state.summary == "As asked: 1 question, 1 mark."
    assert state.shortfall == []
    assert state.dropped == []


def test_the_progress_counter_never_runs_backwards_through_the_regeneration_pass() -> None:
    """Generating 1..3 of 3, validating, then writing one question again: the counter goes on (4 of
    4), where it used to fall back to the question's place in the paper (1 of 3)."""
    state = AssessmentState(id="a", blueprint=Blueprint(counts={"mcq": 3}))
    seen: list[tuple[str, int, int]] = []

    def report(change: object) -> None:
        change(state)  # type: ignore[operator]
        seen.append((state.progress.stage, state.progress.done, state.progress.total))

    async def progress(done: int, total: int) -> None:
        report(in_stage("generating", done, total))

    job = Assessment(id="a", request_id="r", blueprint=Blueprint(counts={"mcq": 3}))
    metrics = AssessmentMetrics(CollectorRegistry())
    settings = GeneratorSettings()
    items = [item(None, index=i) for i in range(3)]
    written = asyncio.run(write_items(settings, AssessmentRetrieved(assessment=job, items=items), metrics, progress))
    report(in_stage("validating"))
    checked = check_items(written, None, 0.9, 1)
    # The first question fails and is written again; the evaluator counts on from the paper's 3.
    checked[0] = checked[0].model_copy(update={"question": None})
    redo = [
        checked[0],
        *(
            i.model_copy(
                update={
                    "question": mcq(i.spec.index, f"Q {i.spec.index}").model_copy(
                        update={"validation": Validation(valid=True, checks={"key_supported": True})}
                    )
                }
            )
            for i in checked[1:]
        ),
    ]

    def regenerating(s: AssessmentState) -> None:
        s.progress.done, s.progress.total = 3, 4

    report(regenerating)
    again = AssessmentRetrieved(assessment=job, items=redo, round=2)
    final = asyncio.run(write_items(settings, again, metrics, progress))
    report(lambda s: finish(s, check_items(final, None, 0.9, 2), 2))
    counts = [done for _, done, _ in seen]
    assert counts == sorted(counts), seen
    assert seen[-2] == ("generating", 4, 4)
    assert seen[-1][1] == 4


def test_a_paper_names_the_bloom_levels_the_material_could_not_support() -> None:
    done = item(
        mcq(0, "How much does the Pro plan cost per user per month?").model_copy(
            update={"validation": Validation(valid=True)}
        )
    )
    blueprint = Blueprint(counts={"mcq": 1}, bloom_levels=["remember", "analyze", "evaluate"])
    state = AssessmentState(id="a", blueprint=blueprint)
    finish(state, [done], 1)
    assert [gap.level for gap in state.bloom_unsupported] == ["analyze", "evaluate"]
    assert "two passages describing two things to compare" in state.bloom_unsupported[0].reason
    assert state.summary == (
        "As asked: 1 question, 1 mark. Levels the material could not support: "
        "analyze (the material offered no two passages describing two things to compare); "
        "evaluate (the material offered no advice with its reason (what one should do, and why))."
    )
