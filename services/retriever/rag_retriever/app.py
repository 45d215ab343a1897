"""Retriever service: embeds the question, searches dense + BM25 with fusion, refuses when nothing fits."""

from __future__ import annotations

import asyncio
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common import subjects
from rag_common.broker import PermanentError, make_broker
from rag_common.embedding import Embedder, get_embedder
from rag_common.messages import QueryRetrieved, QueryRouted, advance
from rag_common.stage import prepare_jetstream, publish_stage, register_ping, register_query_stage
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.vectors import VectorStore, open_store, valid_collection
from rag_retriever.selection import diversify, escalate, select
from rag_retriever.settings import RetrieverSettings


class Retriever:
    """Search for one question; blocking work runs in a thread so the event loop stays free."""

    def __init__(self, settings: RetrieverSettings, embedder: Embedder, store: VectorStore) -> None:
        self.settings = settings
        self.embedder = embedder
        self.store = store

    def retrieve(self, query: QueryRouted) -> QueryRetrieved:
        if not valid_collection(query.collection) or not self.store.collection_exists(query.collection):
            raise PermanentError("collection_not_found", f"unknown collection {query.collection!r}", 404)
        text = query.question if not query.selected_text else f"{query.question}\n{query.selected_text}"
        dense, sparse = self.embedder.embed_query(text)
        hits = self.store.hybrid_search(
            query.collection,
            dense,
            sparse,
            limit=max(self.settings.top_k, self.settings.candidates if self.settings.diversify_sections else 0),
            prefetch_limit=self.settings.prefetch_limit,
            rrf_k=self.settings.rrf_k,
            filters=query.filters,
        )
        hits = diversify(hits, self.settings.top_k) if self.settings.diversify_sections else hits[: self.settings.top_k]
        selection = select(hits, self.settings.min_similarity)
        route = escalate(query.route, selection, self.settings.escalate_sources, self.settings.escalate_margin)
        return advance(
            QueryRetrieved,
            query,
            route=route,
            passages=selection.passages,
            refused=selection.refused,
            refusal_reason=selection.reason,
        )


def build_broker(settings: RetrieverSettings, telemetry: ServiceTelemetry, state: dict[str, Retriever]) -> NatsBroker:
    broker = make_broker(settings, telemetry)

    async def on_routed(query: QueryRouted) -> None:
        with telemetry.stage("retriever") as timer, telemetry.tracer.start_as_current_span("hybrid_search"):
            retrieved = await asyncio.to_thread(state["retriever"].retrieve, query)
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
    register_ping(broker, "retriever", check)
    return broker


def create_app(settings: RetrieverSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("retriever")
    state: dict[str, Retriever] = {}
    broker = build_broker(settings, telemetry, state)
    app = FastStream(broker)

    @app.on_startup
    async def startup() -> None:
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        store = open_store(settings.qdrant_url, settings.resolved_qdrant_path, settings.qdrant_api_key)
        state["retriever"] = Retriever(settings, embedder, store)
        await prepare_jetstream(broker, settings)
        telemetry.serve_metrics(settings.metrics_host, settings.metrics_port)

    return app
