"""Retriever service: the transport around the search (``rag_retriever.search``), built once at
start-up, and the retriever's stage of an assessment (``rag_retriever.assessing``)."""

from __future__ import annotations

import asyncio
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, assessment_failure_hook, in_stage
from rag_common.store.buckets import open_assessments_bucket
from rag_common.store.embedding import get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.broker import make_broker
from rag_common.transport.consuming import register_query_stage, register_work_queue
from rag_common.transport.publishing import publish_assessment, publish_stage
from rag_common.transport.service import create_service, register_ping
from rag_common.transport.streams import ASSESSMENT_JSTREAM
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import QueryRouted
from rag_common.wire.messages.assessment import AssessmentRequested, AssessmentRetrieved
from rag_retriever.assessing import assessment_items
from rag_retriever.rewriting import rewrite
from rag_retriever.search import Retriever
from rag_retriever.settings import AssessmentRecipeSettings, RetrieverSettings


def build_broker(settings: RetrieverSettings, telemetry: ServiceTelemetry, state: dict[str, Any]) -> NatsBroker:
    broker = make_broker(settings, telemetry)

    async def on_routed(routed: QueryRouted) -> None:
        with telemetry.stage("retriever") as timer:
            rewritten = await rewrite(routed.query.question, routed.query.history or [], settings)
            with telemetry.tracer.start_as_current_span("hybrid_search"):
                retrieved = await asyncio.to_thread(
                    state["retriever"].retrieve, routed, rewritten.question if rewritten else None
                )
        retrieved.timings_ms["retriever"] = timer.ms
        await publish_stage(broker, retrieved, subjects.QUERY_RETRIEVED)

    async def check() -> dict[str, Any]:
        await asyncio.to_thread(state["retriever"].store.ping)
        return {"vector_store": "ok"}

    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_ROUTED,
        consumer=subjects.RETRIEVER_CONSUMER,
        model=QueryRouted,
        work=on_routed,
    )
    register_assessments(broker, settings, telemetry, state)
    register_ping(broker, "retriever", check)
    return broker


def register_assessments(
    broker: NatsBroker, settings: RetrieverSettings, telemetry: ServiceTelemetry, state: dict[str, Any]
) -> None:
    """The retriever's stage of an assessment: passages for every question spec."""
    metrics = AssessmentMetrics(telemetry.registry)
    recipe = AssessmentRecipeSettings()

    def store() -> AssessmentStore | None:
        found: AssessmentStore | None = state.get("assessments")
        return found

    async def on_requested(requested: AssessmentRequested) -> None:
        job = requested.assessment
        jobs = store()
        if jobs is not None:
            await jobs.update(job.id, in_stage("retrieving"))
        with telemetry.tracer.start_as_current_span("assessment_retrieval"):
            items, foils = await asyncio.to_thread(assessment_items, state["retriever"], recipe, job)
        retrieved = AssessmentRetrieved(assessment=job, items=items, foils=foils)
        await publish_assessment(broker, retrieved, subjects.ASSESSMENT_RETRIEVED, f"{job.id}:retrieved:1")

    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_REQUESTED,
        consumer=subjects.RETRIEVER_ASSESSMENT_CONSUMER,
        stream=ASSESSMENT_JSTREAM,
        area="assessment",
        model=AssessmentRequested,
        work=on_requested,
        ack_wait=120.0,
        on_failure=assessment_failure_hook(store, metrics),
    )


def create_app(settings: RetrieverSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("retriever", settings=settings)
    state: dict[str, Any] = {}

    async def load() -> None:
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        store = configured_store(settings)
        state["retriever"] = Retriever(settings, embedder, store)  # logs its steps

    broker = build_broker(settings, telemetry, state)

    async def connected() -> None:
        state["assessments"] = AssessmentStore(await open_assessments_bucket(broker, settings))

    return create_service(broker, settings, telemetry, load=load, connected=connected)
