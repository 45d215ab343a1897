"""The retriever's handlers: a routed question in, the passages found (``rag_retriever.search``) or a
cached answer (for the evaluator to send on) out; an assessment in, passages for its questions
(``rag_retriever.assessing``) out.

A class whose methods FastStream calls (``subscribe`` says on which subject and consumer), so a
test can call a handler directly with a message and see what it published.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from faststream.nats import NatsBroker
from opentelemetry.trace import get_current_span

from rag_common.store.answer_cache import AnswerCache, Lookup, hit_counter, miss_counter, served, why_not_looked_up
from rag_common.store.assessments import AssessmentMetrics, AssessmentStore, in_stage, register_assessment_stage
from rag_common.store.embedding import SparseVector
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_assessment, publish_stage
from rag_common.transport.service import register_ping
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages import QueryRouted
from rag_common.wire.messages.assessment import AssessmentRejected, AssessmentRequested, AssessmentRetrieved
from rag_retriever.assessing import assessment_foils, assessment_items, regeneration_items
from rag_retriever.rewriting import rewrite
from rag_retriever.search import Retriever, search_text
from rag_retriever.settings import AssessmentRecipeSettings, RetrieverSettings

log = logging.getLogger("rag.retriever")
Embedded = tuple[list[float], SparseVector]


async def look_up(
    cache: AnswerCache, embed_text: Callable[[str], Embedded], routed: QueryRouted
) -> tuple[Lookup | None, Embedded | None]:
    """The answer cache's verdict on a question that may use it, and the question's vectors when the
    lookup needed them (the search reuses them). A cache that cannot be read is a miss, never a
    failed question."""
    query = routed.query
    embedded: list[Embedded] = []

    async def embed() -> list[float]:
        embedded.append(await asyncio.to_thread(embed_text, search_text(query.question, query.selected_text)))
        return embedded[0][0]

    try:
        lookup: Lookup | None = await cache.lookup(query, embed)
    except Exception as exc:
        log.warning("answer cache lookup failed, answering without it: %r", exc)
        lookup = None
    return lookup, embedded[0] if embedded else None


class RetrieverHandlers:
    """What the retriever's handlers need: settings, telemetry, the broker they publish with, and
    what start-up loads or opens (see ``create_app``)."""

    def __init__(
        self,
        settings: RetrieverSettings,
        telemetry: ServiceTelemetry,
        broker: NatsBroker,
        retriever: Retriever | None = None,
    ) -> None:
        self.settings, self.telemetry, self.broker = settings, telemetry, broker
        # Set at start-up (None until then): the search once its model and store are loaded, the
        # stores once connected (the answer cache only with RAG_ANSWER_CACHE on).
        self.retriever = retriever
        self.cache: AnswerCache | None = None
        self.assessments: AssessmentStore | None = None
        self.hits, self.misses = hit_counter(telemetry.registry), miss_counter(telemetry.registry)
        self.assessment_metrics = AssessmentMetrics(telemetry.registry)
        self.recipe = AssessmentRecipeSettings()

    @property
    def search(self) -> Retriever:
        if self.retriever is None:
            raise RuntimeError("the search is not loaded: the retriever has not finished starting")
        return self.retriever

    def embed_text(self, text: str) -> Embedded:
        """The question's vectors, as the search embeds it (only when the cache needs them)."""
        return self.search.embed_text(text)

    async def on_routed(self, routed: QueryRouted) -> None:
        """Hand the evaluator the cached answer when the cache holds the question (the generator
        skipped), else search and hand the passages to the generator."""
        settings, telemetry, cache = self.settings, self.telemetry, self.cache
        lookup: Lookup | None = None
        embedded: Embedded | None = None
        with telemetry.stage("retriever") as timer:
            if cache is not None and why_not_looked_up(routed) is None:
                lookup, embedded = await look_up(cache, self.embed_text, routed)
                get_current_span().set_attribute("rag.answer_cache", "hit" if lookup and lookup.hit else "miss")
            if lookup is None or lookup.hit is None:
                rewritten = await rewrite(routed.query.question, routed.query.history or [], settings)
                with telemetry.tracer.start_as_current_span("hybrid_search"):
                    retrieved = await asyncio.to_thread(
                        self.search.retrieve, routed, rewritten.question if rewritten else None, embedded
                    )
        if lookup is not None and lookup.hit is not None:
            self.hits.inc()
            drafted = served(lookup.hit, routed, {**routed.timings_ms, "retriever": timer.ms})
            await publish_stage(self.broker, drafted, subjects.QUERY_DRAFTED)
            return
        if lookup is not None:
            self.misses.inc()
            retrieved.retrieval.cache = lookup.key
        retrieved.timings_ms["retriever"] = timer.ms
        await publish_stage(self.broker, retrieved, subjects.QUERY_RETRIEVED)

    async def check(self) -> dict[str, Any]:
        """The readiness ping's details: the vector store answers."""
        await asyncio.to_thread(self.search.store.ping)
        return {"vector_store": "ok"}

    def assessment_store(self) -> AssessmentStore | None:
        return self.assessments

    async def on_assessment_requested(self, requested: AssessmentRequested) -> None:
        """Passages for every question spec of the blueprint, and foils for distractors."""
        job = requested.assessment
        jobs = self.assessments
        if jobs is not None:
            await jobs.update(job.id, in_stage("retrieving"))
        with self.telemetry.tracer.start_as_current_span("assessment_retrieval"):
            items, foils, material = await asyncio.to_thread(assessment_items, self.search, self.recipe, job)
        retrieved = AssessmentRetrieved(assessment=job, items=items, foils=foils, material=material)
        await publish_assessment(self.broker, retrieved, subjects.ASSESSMENT_RETRIEVED, f"{job.id}:retrieved:1")

    async def on_assessment_rejected(self, rejected: AssessmentRejected) -> None:
        """Passages of another section for each question the evaluator (or the teacher) sent back."""
        job = rejected.assessment
        with self.telemetry.tracer.start_as_current_span("assessment_retrieval"):
            items, material = await asyncio.to_thread(regeneration_items, self.search, self.recipe, job, rejected.items)
            foils = rejected.foils or await asyncio.to_thread(assessment_foils, self.search, self.recipe, job)
        again = AssessmentRetrieved(assessment=job, items=items, foils=foils, round=rejected.round, material=material)
        message_id = f"{job.id}:retrieved:{rejected.round}"
        await publish_assessment(self.broker, again, subjects.ASSESSMENT_RETRIEVED, message_id)


def subscribe(broker: NatsBroker, handlers: RetrieverHandlers) -> None:
    """The retriever's subscriptions: its query stage, its two assessment stages, its readiness ping."""
    settings, telemetry = handlers.settings, handlers.telemetry
    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_ROUTED,
        consumer=subjects.RETRIEVER_CONSUMER,
        work=handlers.on_routed,
    )
    register_assessment_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_REQUESTED,
        consumer=subjects.RETRIEVER_ASSESSMENT_CONSUMER,
        work=handlers.on_assessment_requested,
        store=handlers.assessment_store,
        metrics=handlers.assessment_metrics,
    )
    register_assessment_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.ASSESSMENT_REJECTED,
        consumer=subjects.RETRIEVER_REJECTED_CONSUMER,
        work=handlers.on_assessment_rejected,
        store=handlers.assessment_store,
        metrics=handlers.assessment_metrics,
    )
    register_ping(broker, "retriever", handlers.check)
