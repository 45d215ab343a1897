"""The evaluator's stage of an assessment, as pure functions: check every question, pick the failed
ones to send back once (to the retriever, for passages of another section, then to the generator),
and make the paper (only valid questions) with its counts. The handler around them is
``rag_evaluator.handlers``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_common.wire.messages.assessment import AssessmentItem, AssessmentState, Question, UnitMaterial, Validation
from rag_evaluator.material import material_said, with_use
from rag_evaluator.question_checks import validate, withheld
from rag_evaluator.shortfall import level_gaps, missed, shortfalls, summary

Embed = Callable[[Sequence[str]], list[list[float]]]


def check_items(
    items: Sequence[AssessmentItem], embed: Embed | None, threshold: float, round_: int
) -> list[AssessmentItem]:
    """Validate each item's unchecked question against its passages and every question the paper
    holds so far: the ones accepted in the first pass (wherever they stand in the paper), then the
    ones accepted in this pass before it (in spec order). An item without a question stays as it is."""
    stems = [item.question.stem for item in items if item.question is not None]
    vectors = iter(embed(stems) if embed and stems else [None] * len(stems))
    vector_of: dict[int, Sequence[float] | None] = {
        item.spec.index: next(vectors) for item in items if item.question is not None
    }
    accepted: list[tuple[Question, Sequence[float] | None]] = [
        (item.question, vector_of[item.spec.index])
        for item in items
        if item.question is not None and item.question.validation.checks and item.question.validation.valid
    ]
    out: list[AssessmentItem] = []
    for item in items:
        question = item.question
        if question is None or question.validation.checks:  # none written, or accepted in the first pass
            out.append(item)
            continue
        vector = vector_of[item.spec.index]
        verdict = validate(question, item.passages, vector, accepted, threshold)
        verdict.regenerated = round_ > 1
        question = question.model_copy(update={"validation": verdict})
        if verdict.valid:
            accepted.append((question, vector))
        out.append(item.model_copy(update={"question": question}))
    return out


def failed(item: AssessmentItem) -> bool:
    return item.question is None or not item.question.validation.valid


def regenerate(items: Sequence[AssessmentItem]) -> list[AssessmentItem]:
    """The regeneration pass: the failed items without their question (kept in ``rejected``), the rest as they are."""
    return [
        item.model_copy(
            update={"question": None, "rejected": [*item.rejected, *([item.question] if item.question else [])]}
        )
        if failed(item)
        else item
        for item in items
    ]


def finish(
    state: AssessmentState, items: Sequence[AssessmentItem], round_: int, material: Sequence[UnitMaterial] = ()
) -> None:
    """The paper: the valid questions in spec order, the counts, the units met, what is missing
    and why (``dropped`` holds one entry per missing question, ``shortfall`` and ``summary`` say it
    per type and in marks), and the material each unit holds against what the paper uses."""
    questions = [item.question for item in items if item.question is not None and item.question.validation.valid]
    state.questions = questions
    state.dropped = [_shown(q) for q in (missed(item) for item in items) if q is not None]
    state.status = "done"
    # The counter only goes up: the regeneration pass counted past the number of questions.
    total = max(state.progress.total, len(items))
    state.progress.stage, state.progress.done, state.progress.total = "done", total, total
    counts = state.counts
    counts.requested = len(items)
    counts.valid = len(questions)
    counts.dropped = len(state.dropped)
    counts.generated = (
        len(questions)
        + sum(len(item.rejected) for item in items)
        + sum(1 for item in items if item.question is not None and not item.question.validation.valid)
    )
    units: dict[str, int] = {}
    for question in questions:
        units[question.unit] = units.get(question.unit, 0) + 1
    state.units_met = units
    state.marks_requested = sum(item.spec.marks for item in items)
    state.marks_met = sum(q.marks for q in questions)
    state.shortfall = shortfalls(items, state.dropped)
    state.bloom_unsupported = level_gaps(state.blueprint.bloom_levels, questions)
    state.material = with_use(material, questions)
    state.summary = summary(
        len(items), len(questions), state.marks_requested, state.marks_met, state.shortfall, state.bloom_unsupported
    )
    if state.material:
        state.summary += " " + material_said(state.material)
    seconds = [item.seconds for item in items]
    state.seconds_per_question = round(sum(seconds) / len(seconds), 4) if seconds else 0.0


def _shown(question: Question) -> Question:
    """A dropped question as the paper's reader sees it: one that repeated planted text is withheld."""
    return question if question.validation.checks.get("no_marked_text", True) else withheld(question)


__all__ = ["Embed", "Validation", "check_items", "failed", "finish", "regenerate"]
