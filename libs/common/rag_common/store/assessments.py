"""Assessment jobs in their key-value bucket, their metrics, and how a failed stage marks its job.

Each stage of an assessment writes the job's ``AssessmentState`` as it goes (stage, questions done);
the gateway reads it for ``GET /v1/assessments/{id}`` and watches it for the event stream. One job
is in one stage at a time, so a stage's read-modify-write never races another's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from faststream.nats import NatsBroker
from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import BaseModel

from rag_common.config.settings import ServiceSettings
from rag_common.transport.consuming import FailureHook, register_work_queue
from rag_common.transport.streams import ASSESSMENT_JSTREAM
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire.messages.assessment import AssessmentState

log = logging.getLogger(__name__)

ASSESSMENT_OUTCOMES = ("started", "done", "failed")
QUESTION_OUTCOMES = ("generated", "rejected", "regenerated", "dropped")


def in_stage(stage: str, done: int | None = None, total: int | None = None) -> Callable[[AssessmentState], None]:
    """A change that moves a running job to ``stage``, with its progress when given.

    A job that is already done or failed stays as it is (a redelivered stage must not reopen it),
    and its counter never goes down (a redelivered or late report of an earlier count is ignored).
    """

    def change(state: AssessmentState) -> None:
        if state.status in ("done", "failed"):
            return
        state.status = stage  # type: ignore[assignment]
        state.progress.stage = stage
        if done is not None and total is not None and done >= state.progress.done:
            state.progress.done, state.progress.total = done, max(total, done)

    return change


class AssessmentStore:
    """The ``rag-assessments`` bucket: one ``AssessmentState`` per assessment id."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv

    async def get(self, assessment_id: str) -> AssessmentState | None:
        """The job's state, or None for an id the bucket does not hold (never written, or expired)."""
        from nats.js.errors import KeyNotFoundError

        try:
            entry = await self.kv.get(assessment_id)
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        return AssessmentState.model_validate_json(entry.value)

    async def put(self, state: AssessmentState) -> None:
        """Write the job's state as it is, stamped with the time (the gateway creates it so)."""
        state.updated_at = time.time()
        await self.kv.put(state.id, state.model_dump_json().encode())

    async def update(self, assessment_id: str, change: Callable[[AssessmentState], None]) -> AssessmentState | None:
        """Apply ``change`` to the stored state and store it; None when the job is unknown."""
        state = await self.get(assessment_id)
        if state is None:
            log.warning("assessment %s is not in the bucket; its progress is not recorded", assessment_id)
            return None
        change(state)
        await self.put(state)
        return state


class AssessmentMetrics:
    """Counters of assessments and their questions, and the time to write one question.

    Each service increments its own (gateway: started; generator: generated, seconds; evaluator:
    done, rejected, regenerated, dropped; any stage: failed).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.assessments = Counter(
            "rag_assessments_total", "Assessments by outcome (started, done, failed)", ["outcome"], registry=registry
        )
        for outcome in ASSESSMENT_OUTCOMES:
            self.assessments.labels(outcome)
        self.questions = Counter(
            "rag_assessment_questions_total",
            "Assessment questions by outcome (generated, rejected, regenerated, dropped)",
            ["outcome"],
            registry=registry,
        )
        for outcome in QUESTION_OUTCOMES:
            self.questions.labels(outcome)
        self.question_seconds = Histogram(
            "rag_assessment_question_seconds",
            "Time to write one assessment question (generator)",
            ["kind"],
            registry=registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60),
        )


def assessment_failure_hook(store: Callable[[], AssessmentStore | None], metrics: AssessmentMetrics) -> FailureHook:
    """Mark the job ``failed`` with the reason when a stage gives up on its message.

    A question the teacher asked to write again fails alone: the paper is done again as it was, saying why.
    """

    async def report(fields: dict[str, Any], code: str, message: str, status: int) -> None:
        job = fields.get("assessment")
        assessment_id = job.get("id") if isinstance(job, dict) else None
        rewrite = job.get("rewrite") if isinstance(job, dict) else None
        metrics.assessments.labels("failed").inc()
        current = store()
        if not isinstance(assessment_id, str) or current is None:
            log.warning("cannot mark an assessment failed (%s): no id in the message", code)
            return

        def fail(state: AssessmentState) -> None:
            if isinstance(rewrite, int):
                if state.status in ("done", "failed"):  # a redelivered message: already finished
                    return
                number = next((n for n, q in enumerate(state.questions, 1) if q.index == rewrite), None)
                which = f"Question {number}" if number else "A question"
                state.status, state.progress.stage = "done", "done"
                state.progress.done = state.progress.total = max(state.progress.done, state.progress.total)
                state.edits.append(f"{which} could not be written again ({code}: {message}); it stays as it was.")
                return
            state.status = "failed"
            state.error = f"{code}: {message}"

        await current.update(assessment_id, fail)

    return report


M = TypeVar("M", bound=BaseModel)


def register_assessment_stage(
    broker: NatsBroker,
    settings: ServiceSettings,
    telemetry: ServiceTelemetry,
    *,
    subject: str,
    consumer: str,
    work: Callable[[M], Awaitable[None]],
    store: Callable[[], AssessmentStore | None],
    metrics: AssessmentMetrics,
    ack_wait: float = 120.0,
) -> None:
    """Consume one stage of the assessment pipeline from the assessment stream.

    A message the stage gives up on marks its job ``failed`` with the reason, so the teacher's page
    says why instead of waiting; ``ack_wait`` is the longest a replica may work on one message
    before another gets it.
    """
    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subject,
        consumer=consumer,
        stream=ASSESSMENT_JSTREAM,
        area="assessment",
        work=work,
        ack_wait=ack_wait,
        on_failure=assessment_failure_hook(store, metrics),
    )
