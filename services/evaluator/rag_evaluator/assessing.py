"""The evaluator's stage of an assessment, as pure functions: check every question, pick the failed
ones to send back once (to the retriever, for passages of another section, then to the generator),
and make the paper (only valid questions) with its counts. The handler around them is
``rag_evaluator.handlers``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_common.wire.messages.assessment import AssessmentItem, AssessmentState, Question, Validation
from rag_evaluator.question_checks import validate, withheld

Embed = Callable[[Sequence[str]], list[list[float]]]


def check_items(
    items: Sequence[AssessmentItem], embed: Embed | None, threshold: float, round_: int
) -> list[AssessmentItem]:
    """Validate each item's unchecked question against its passages and the questions accepted so
    far (in spec order); an item without a question gets a failed validation saying so."""
    accepted: list[tuple[Question, Sequence[float] | None]] = []
    stems = [item.question.stem for item in items if item.question is not None]
    vectors = iter(embed(stems) if embed and stems else [None] * len(stems))
    out: list[AssessmentItem] = []
    for item in items:
        question = item.question
        if question is None:
            out.append(item)
            continue
        vector = next(vectors)
        if question.validation.checks:  # accepted in the first pass: stays as it was
            accepted.append((question, vector))
            out.append(item)
            continue
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


def finish(state: AssessmentState, items: Sequence[AssessmentItem], round_: int) -> None:
    """The paper: the valid questions in spec order, the counts, the units met."""
    questions = [item.question for item in items if item.question is not None and item.question.validation.valid]
    state.questions = questions
    state.dropped = [
        _shown(item.question if item.question is not None else item.rejected[-1])
        for item in items
        if (item.question is None and item.rejected)
        or (item.question is not None and not item.question.validation.valid)
    ]
    state.status = "done"
    state.progress.stage, state.progress.done, state.progress.total = "done", len(items), len(items)
    counts = state.counts
    counts.requested = len(items)
    counts.valid = len(questions)
    counts.dropped = len(items) - len(questions)
    counts.generated = (
        len(questions)
        + sum(len(item.rejected) for item in items)
        + sum(1 for item in items if item.question is not None and not item.question.validation.valid)
    )
    units: dict[str, int] = {}
    for question in questions:
        units[question.unit] = units.get(question.unit, 0) + 1
    state.units_met = units
    seconds = [item.seconds for item in items]
    state.seconds_per_question = round(sum(seconds) / len(seconds), 4) if seconds else 0.0


def _shown(question: Question) -> Question:
    """A dropped question as the paper's reader sees it: one that repeated planted text is withheld."""
    return question if question.validation.checks.get("no_marked_text", True) else withheld(question)


__all__ = ["Embed", "Validation", "check_items", "failed", "finish", "regenerate"]
