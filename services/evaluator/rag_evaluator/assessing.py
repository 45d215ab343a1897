"""The evaluator's stage of an assessment: check every question, send the failed ones back once (to
the retriever, for passages of another section, then to the generator), then store the paper (only
valid questions) with its counts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from faststream.nats import NatsBroker

from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, assessment_failure_hook, in_stage
from rag_common.transport.consuming import register_work_queue
from rag_common.transport.publishing import publish_assessment
from rag_common.transport.streams import ASSESSMENT_JSTREAM
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages.assessment import (
    AssessmentDrafted,
    AssessmentItem,
    AssessmentRejected,
    AssessmentState,
    Question,
    Validation,
)
from rag_evaluator.question_checks import validate
from rag_evaluator.settings import EvaluatorSettings

log = logging.getLogger("rag.evaluator")

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
        item.question if item.question is not None else item.rejected[-1]
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


def register_assessments(
    broker: NatsBroker, settings: EvaluatorSettings, telemetry: ServiceTelemetry, state: dict[str, Any]
) -> None:
    metrics = AssessmentMetrics(telemetry.registry)

    def store() -> AssessmentStore | None:
        found: AssessmentStore | None = state.get("assessments")
        return found

    async def on_drafted(drafted: AssessmentDrafted) -> None:
        job = drafted.assessment
        embed: Embed | None = state.get("embed")
        jobs = store()
        if jobs is not None:
            await jobs.update(job.id, in_stage("validating"))
        with telemetry.tracer.start_as_current_span("assessment_validation"):
            items = await asyncio.to_thread(
                check_items, drafted.items, embed, settings.near_duplicate_cosine, drafted.round
            )
        to_redo = [item for item in items if failed(item)]
        fresh = [
            i for i in items if i.question is not None and i.question.validation.regenerated == (drafted.round > 1)
        ]
        rejected = sum(1 for i in fresh if i.question is not None and not i.question.validation.valid)
        metrics.questions.labels("rejected").inc(rejected)
        if drafted.round == 1 and to_redo:
            metrics.questions.labels("regenerated").inc(len(to_redo))
            if jobs is not None:

                def regenerating(s: AssessmentState) -> None:
                    s.status, s.progress.stage = "generating", "regenerating"
                    s.counts.rejected, s.counts.regenerated = rejected, len(to_redo)

                await jobs.update(job.id, regenerating)
            again = AssessmentRejected(assessment=job, items=regenerate(items), foils=drafted.foils, round=2)
            await publish_assessment(broker, again, subjects.ASSESSMENT_REJECTED, f"{job.id}:rejected:2")
            return
        dropped = len(to_redo)
        metrics.questions.labels("dropped").inc(dropped)
        metrics.assessments.labels("done").inc()
        if jobs is not None:

            def done(s: AssessmentState) -> None:
                finish(s, items, drafted.round)
                s.counts.rejected += rejected

            await jobs.update(job.id, done)
        log.info("assessment %s done: %d questions, %d dropped", job.id, len(items) - dropped, dropped)

    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_DRAFTED,
        consumer=subjects.EVALUATOR_ASSESSMENT_CONSUMER,
        stream=ASSESSMENT_JSTREAM,
        area="assessment",
        model=AssessmentDrafted,
        work=on_drafted,
        ack_wait=120.0,
        on_failure=assessment_failure_hook(store, metrics),
    )


__all__ = ["Validation", "check_items", "finish", "regenerate", "register_assessments"]
