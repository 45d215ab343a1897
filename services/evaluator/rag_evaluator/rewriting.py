"""A question the teacher asked to write again, back from the pipeline: it takes the old one's
place when the evaluator passed it and it asks something else; otherwise the old one stays and the
paper says why (pure). The handler around it is ``rag_evaluator.handlers``."""

from __future__ import annotations

from collections.abc import Sequence

from rag_common.text.words import normal_words
from rag_common.wire.messages.assessment import AssessmentItem, AssessmentState, Question
from rag_evaluator.material import with_use


def same_question(new: Question, old: Question) -> bool:
    """The same stem once normalised, or the same key from the same sentence."""
    if normal_words(new.stem) == normal_words(old.stem):
        return True
    quotes = {normal_words(c.quote) for c in old.citations if c.quote}
    return normal_words(new.answer) == normal_words(old.answer) and any(
        normal_words(c.quote) in quotes for c in new.citations if c.quote
    )


def apply_rewrite(state: AssessmentState, items: Sequence[AssessmentItem], index: int) -> str:
    """Put the rewritten question ``index`` in its place in the stored paper (or keep the old one),
    finish the job, and record the edit in words (returned too). A job already finished is left as
    it is: a redelivered message must not edit the paper twice."""
    if state.status in ("done", "failed"):
        return ""
    state.status = "done"
    total = max(state.progress.total, state.progress.done)
    state.progress.stage, state.progress.done, state.progress.total = "done", total, total
    position = next((i for i, q in enumerate(state.questions) if q.index == index), None)
    if position is None:  # not in the paper any more: nothing to replace
        edit = "A question asked to be written again is no longer in the paper; nothing changed."
        state.edits.append(edit)
        return edit
    old, number = state.questions[position], position + 1
    new = next((item.question for item in items if item.spec.index == index), None)
    if new is not None:
        state.counts.generated += 1
    if new is None:
        why = "its unit offered no other material to ask from"
    elif not new.validation.valid:
        why = "; ".join(new.validation.reasons) or "the new question failed its checks"
    elif same_question(new, old):
        why = "the material gave the same question again"
    else:
        state.questions[position] = new
        state.counts.regenerated += 1
        units: dict[str, int] = {}
        for q in state.questions:
            units[q.unit] = units.get(q.unit, 0) + 1
        state.units_met = units
        state.marks_met = sum(q.marks for q in state.questions)
        state.material = with_use(state.material, state.questions)
        edit = f"Wrote question {number} again; it was: {old.stem}"
        state.edits.append(edit)
        return edit
    edit = f"Question {number} could not be written again ({why}); it stays as it was."
    state.edits.append(edit)
    return edit
