"""Retriever service: the transport around the search (``rag_retriever.search``), built once at start-up."""

from __future__ import annotations

import asyncio
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common import subjects
from rag_common.embedding import get_embedder
from rag_common.messages import QueryRouted
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.transport.broker import make_broker
from rag_common.transport.consuming import register_query_stage
from rag_common.transport.publishing import publish_stage
from rag_common.transport.service import create_service, register_ping
from rag_common.vectors import configured_store
from rag_retriever.rewriting import rewrite
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings


def build_broker(settings: RetrieverSettings, telemetry: ServiceTelemetry, state: dict[str, Retriever]) -> NatsBroker:
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
    register_ping(broker, "retriever", check)
    return broker


def create_app(settings: RetrieverSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("retriever", settings=settings)
    state: dict[str, Retriever] = {}

    async def load() -> None:
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        store = configured_store(settings)
        state["retriever"] = Retriever(settings, embedder, store)  # logs its steps

    return create_service(build_broker(settings, telemetry, state), settings, telemetry, load=load)
