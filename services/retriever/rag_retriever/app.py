"""Retriever service: the transport around the search (``rag_retriever.search``), built once at
start-up, and the retriever's stage of an assessment (``rag_retriever.assessing``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker
from opentelemetry.trace import get_current_span

from rag_common.store.answer_cache import (
    AnswerCache,
    Lookup,
    hit_counter,
    miss_counter,
    open_answer_cache_bucket,
    served,
    why_not_looked_up,
)
from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, assessment_failure_hook, in_stage
from rag_common.store.buckets import open_assessments_bucket, open_document_index
from rag_common.store.embedding import SparseVector, get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.broker import make_broker
from rag_common.transport.consuming import register_query_stage, register_work_queue
from rag_common.transport.publishing import publish_answer, publish_assessment, publish_delta, publish_stage
from rag_common.transport.service import create_service, register_ping
from rag_common.transport.streams import ASSESSMENT_JSTREAM
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import AnswerDelta, QueryAnswered, QueryRouted
from rag_common.wire.messages.assessment import AssessmentRejected, AssessmentRequested, AssessmentRetrieved
from rag_retriever.assessing import assessment_items, regeneration_items
from rag_retriever.rewriting import rewrite
from rag_retriever.search import Retriever, search_text
from rag_retriever.settings import AssessmentRecipeSettings, RetrieverSettings

log = logging.getLogger("rag.retriever")
Embedded = tuple[list[float], SparseVector]


async def look_up(
    cache: AnswerCache, retriever: Retriever, routed: QueryRouted
) -> tuple[Lookup | None, Embedded | None]:
    """The answer cache's verdict on a question that may use it, and the question's vectors when the
    lookup needed them (the search reuses them). A cache that cannot be read is a miss, never a
    failed question."""
    query = routed.query
    embedded: list[Embedded] = []

    async def embed() -> list[float]:
        embedded.append(await asyncio.to_thread(retriever.embed_text, search_text(query.question, query.selected_text)))
        return embedded[0][0]

    try:
        lookup: Lookup | None = await cache.lookup(query, embed)
    except Exception as exc:
        log.warning("answer cache lookup failed, answering without it: %r", exc)
        lookup = None
    return lookup, embedded[0] if embedded else None


async def send_cached(broker: NatsBroker, answered: QueryAnswered) -> None:
    """A cached answer straight to the waiting gateway, the later stages skipped; a streaming
    caller gets its text as one token event first, as it gets the generator's."""
    query = answered.query
    if query.stream:
        delta = AnswerDelta(request_id=query.request_id, attempt="cache", seq=0, text=answered.draft.answer)
        await publish_delta(broker, query, delta)
    await publish_answer(broker, answered)


def build_broker(settings: RetrieverSettings, telemetry: ServiceTelemetry, state: dict[str, Any]) -> NatsBroker:
    broker = make_broker(settings, telemetry)
    hits, misses = hit_counter(telemetry.registry), miss_counter(telemetry.registry)

    async def on_routed(routed: QueryRouted) -> None:
        cache: AnswerCache | None = state.get("cache")
        lookup: Lookup | None = None
        embedded: Embedded | None = None
        with telemetry.stage("retriever") as timer:
            if cache is not None and why_not_looked_up(routed) is None:
                lookup, embedded = await look_up(cache, state["retriever"], routed)
                get_current_span().set_attribute("rag.answer_cache", "hit" if lookup and lookup.hit else "miss")
            if lookup is None or lookup.hit is None:
                rewritten = await rewrite(routed.query.question, routed.query.history or [], settings)
                with telemetry.tracer.start_as_current_span("hybrid_search"):
                    retrieved = await asyncio.to_thread(
                        state["retriever"].retrieve, routed, rewritten.question if rewritten else None, embedded
                    )
        if lookup is not None and lookup.hit is not None:
            hits.inc()
            answered = served(lookup.hit, routed.query, {**routed.timings_ms, "retriever": timer.ms})
            await send_cached(broker, answered)
            return
        if lookup is not None:
            misses.inc()
            retrieved.retrieval.cache = lookup.key
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
    """The retriever's stage of an assessment: passages for every question spec, and other passages
    for the questions the evaluator sends back."""
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

    async def on_rejected(rejected: AssessmentRejected) -> None:
        job = rejected.assessment
        with telemetry.tracer.start_as_current_span("assessment_retrieval"):
            items = await asyncio.to_thread(regeneration_items, state["retriever"], recipe, job, rejected.items)
        again = AssessmentRetrieved(assessment=job, items=items, foils=rejected.foils, round=rejected.round)
        await publish_assessment(broker, again, subjects.ASSESSMENT_RETRIEVED, f"{job.id}:retrieved:{rejected.round}")

    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_REJECTED,
        consumer=subjects.RETRIEVER_REJECTED_CONSUMER,
        stream=ASSESSMENT_JSTREAM,
        area="assessment",
        model=AssessmentRejected,
        work=on_rejected,
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

    following: list[asyncio.Task[None]] = []

    async def connected() -> None:
        state["assessments"] = AssessmentStore(await open_assessments_bucket(broker, settings))
        if settings.answer_cache:
            kv = await open_answer_cache_bucket(broker, settings, settings)
            cache = AnswerCache(kv, settings, await open_document_index(broker, settings))
            following.append(asyncio.create_task(cache.follow()))
            state["cache"] = cache

    app = create_service(broker, settings, telemetry, load=load, connected=connected)

    @app.on_shutdown
    async def stop_following() -> None:
        for task in following:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        following.clear()

    return app
