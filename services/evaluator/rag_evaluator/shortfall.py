"""The paper against what the teacher asked for (pure): every question that did not make it, with
why in words, and per question type how many and how many marks are missing.

A spec can miss the paper two ways: its question failed the checks twice (its reasons are the
checks'), or its passages offered nothing to ask, so no question was written (it is still listed,
with that reason, so the ``dropped`` list always has ``counts.dropped`` entries).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_common.wire.messages.assessment import (
    QUESTION_KINDS,
    AssessmentItem,
    BloomLevel,
    Citation,
    LevelGap,
    Question,
    QuestionKind,
    QuestionSpec,
    Shortfall,
    Validation,
)

KIND_NAMES: dict[QuestionKind, str] = {"mcq": "multiple-choice", "short": "short-answer", "long": "long-answer"}


def nothing_to_ask(spec: QuestionSpec) -> str:
    where = spec.topic or spec.unit or "the collection"
    return f"no {KIND_NAMES[spec.kind]} question could be written from {where}: its passages offered nothing to ask"


def unwritten(spec: QuestionSpec) -> Question:
    """The dropped-list entry of a spec no question was written for: where it looked, and why."""
    source, _, section = spec.topic.partition(" > ")
    return Question(
        index=spec.index,
        kind=spec.kind,
        stem="",
        answer="",
        bloom=spec.bloom,
        difficulty=spec.difficulty,
        marks=spec.marks,
        unit=spec.unit,
        citations=[Citation(source=source, section=section)] if source else [],
        rule="none",
        validation=Validation(valid=False, checks={"written": False}, reasons=[nothing_to_ask(spec)]),
    )


def missed(item: AssessmentItem) -> Question | None:
    """What the paper shows for an item left out of it (None when its question is in the paper)."""
    question = item.question
    if question is not None and question.validation.valid:
        return None
    if question is not None:
        return question
    if item.rejected:  # failed once, then nothing to ask from the other section
        last = item.rejected[-1]
        reasons = [*last.validation.reasons, nothing_to_ask(item.spec)]
        return last.model_copy(update={"validation": last.validation.model_copy(update={"reasons": reasons})})
    return unwritten(item.spec)


def _why(question: Question) -> str:
    reasons = "; ".join(question.validation.reasons) or "it failed a check"
    return f"question {question.index + 1}: {reasons}"


def shortfalls(items: Sequence[AssessmentItem], dropped: Sequence[Question]) -> list[Shortfall]:
    """Per question type with a missing question: the counts, the marks and the reasons."""
    out = []
    for kind in QUESTION_KINDS:
        requested = [item for item in items if item.spec.kind == kind]
        lost = [q for q in dropped if q.kind == kind]
        if not lost:
            continue
        out.append(
            Shortfall(
                kind=kind,
                requested=len(requested),
                written=len(requested) - len(lost),
                missing=len(lost),
                marks_missing=sum(q.marks for q in lost),
                reasons=[_why(q) for q in lost],
            )
        )
    return out


# What each level needs of the material: the reason a paper without it gives.
LEVEL_NEEDS: dict[BloomLevel, str] = {
    "remember": "no statement with a name, value, command or setting to ask for",
    "understand": "no statement with its reason or means, and no definition to paraphrase",
    "apply": "no how-to sentence giving the command or setting for a purpose",
    "analyze": "no two passages describing two things to compare",
    "evaluate": "no advice with its reason (what one should do, and why)",
    "create": "nothing to design a plan from",
}


def level_gaps(asked: Sequence[BloomLevel], questions: Sequence[Question]) -> list[LevelGap]:
    """The levels asked for that no question of the paper has, each with what the material lacked."""
    present = {q.bloom for q in questions}
    return [
        LevelGap(level=level, reason=f"the material offered {LEVEL_NEEDS[level]}")
        for level in dict.fromkeys(asked)
        if level not in present
    ]


def _plural(n: float, word: str) -> str:
    return f"{n:g} {word}{'' if n == 1 else 's'}"


def summary(
    requested: int,
    valid: int,
    marks_requested: float,
    marks_met: float,
    gaps: Sequence[Shortfall],
    levels: Sequence[LevelGap] = (),
) -> str:
    """The paper against the request in one or two sentences a teacher reads first."""
    said = _counts_summary(requested, valid, marks_requested, marks_met, gaps)
    if levels:
        said += " Levels the material could not support: " + "; ".join(f"{g.level} ({g.reason})" for g in levels) + "."
    return said


def _counts_summary(
    requested: int, valid: int, marks_requested: float, marks_met: float, gaps: Sequence[Shortfall]
) -> str:
    if not gaps:
        return f"As asked: {_plural(requested, 'question')}, {_plural(marks_requested, 'mark')}."
    missing = ", ".join(
        f"{g.missing} {KIND_NAMES[g.kind]} of {g.requested} ({_plural(g.marks_missing, 'mark')})" for g in gaps
    )
    return (
        f"{valid} of {_plural(requested, 'question')}, {marks_met:g} of {_plural(marks_requested, 'mark')}: "
        f"missing {missing}."
    )
