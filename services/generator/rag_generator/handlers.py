"""The generator's handlers: retrieved passages in, a drafted answer (``rag_generator.drafting``)
out; an assessment's passages in, its questions (``rag_generator.assessing``) out.

A class whose methods FastStream calls (``subscribe`` says on which subject and consumer), so a
test can call a handler directly with a message and see what it published.
"""

from __future__ import annotations

from faststream.nats import NatsBroker

from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, in_stage, register_assessment_stage
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_assessment, publish_stage
from rag_common.transport.service import register_ping
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages import QueryRetrieved
from rag_common.wire.messages.assessment import AssessmentDrafted, AssessmentRetrieved
from rag_generator.assessing import write_items
from rag_generator.drafting import EXTRACTIVE, Generator
from rag_generator.settings import GeneratorSettings


class GeneratorHandlers:
    """What the generator's handlers need: settings, telemetry, the broker they publish with, the
    ``Generator`` that drafts, and the assessments bucket (opened at start-up; None until then)."""

    def __init__(
        self, settings: GeneratorSettings, telemetry: ServiceTelemetry, broker: NatsBroker, generator: Generator
    ) -> None:
        self.settings, self.telemetry, self.broker, self.generator = settings, telemetry, broker, generator
        self.assessments: AssessmentStore | None = None
        self.assessment_metrics = AssessmentMetrics(telemetry.registry)

    async def on_retrieved(self, retrieved: QueryRetrieved) -> None:
        """Draft the answer (its text streams to the gateway meanwhile) and hand it to the evaluator."""
        with self.telemetry.stage("generator") as timer:
            drafted = await self.generator.draft(retrieved)
        drafted.timings_ms["generator"] = timer.ms
        await publish_stage(self.broker, drafted, subjects.QUERY_DRAFTED)

    async def check(self) -> dict[str, str]:
        """The readiness ping's details: which model answers each tier."""
        return {
            "model_fast": self.settings.model_for("fast") or EXTRACTIVE,
            "model_strong": self.settings.model_for("strong") or EXTRACTIVE,
        }

    def assessment_store(self) -> AssessmentStore | None:
        return self.assessments

    async def on_assessment_retrieved(self, retrieved: AssessmentRetrieved) -> None:
        """Write the questions (both rounds) and hand them to the evaluator."""
        job, jobs = retrieved.assessment, self.assessments

        async def progress(done: int, total: int) -> None:
            if jobs is None:
                return
            await jobs.update(job.id, in_stage("generating", done, total))

        with self.telemetry.tracer.start_as_current_span("assessment_generation"):
            items = await write_items(self.settings, retrieved, self.assessment_metrics, progress)
        drafted = AssessmentDrafted(
            assessment=job, items=items, foils=retrieved.foils, round=retrieved.round, material=retrieved.material
        )
        message_id = f"{job.id}:drafted:{retrieved.round}"
        await publish_assessment(self.broker, drafted, subjects.ASSESSMENT_DRAFTED, message_id)


def subscribe(broker: NatsBroker, handlers: GeneratorHandlers) -> None:
    """The generator's subscriptions: its query stage, its readiness ping, its assessment stage."""
    settings, telemetry = handlers.settings, handlers.telemetry
    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_RETRIEVED,
        consumer=subjects.GENERATOR_CONSUMER,
        work=handlers.on_retrieved,
    )
    register_ping(broker, "generator", handlers.check)
    register_assessment_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_RETRIEVED,
        consumer=subjects.GENERATOR_ASSESSMENT_CONSUMER,
        work=handlers.on_assessment_retrieved,
        store=handlers.assessment_store,
        metrics=handlers.assessment_metrics,
        ack_wait=300.0,
    )
