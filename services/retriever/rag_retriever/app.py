"""Retriever service: the transport around the search (``rag_retriever.search``), built once at
start-up, and the retriever's stage of an assessment (``rag_retriever.assessing``); the handlers
are ``rag_retriever.handlers``, this module starts them."""

from __future__ import annotations

import asyncio
import contextlib

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.store.answer_cache import AnswerCache, open_answer_cache_bucket
from rag_common.store.assessments import AssessmentStore
from rag_common.store.buckets import open_assessments_bucket, open_document_index
from rag_common.store.embedding import get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.broker import make_broker
from rag_common.transport.service import create_service
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_retriever.handlers import RetrieverHandlers, subscribe
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings


def build_broker(
    settings: RetrieverSettings, telemetry: ServiceTelemetry, retriever: Retriever | None = None
) -> tuple[NatsBroker, RetrieverHandlers]:
    """The broker with the retriever's handlers subscribed; ``retriever``: the search, when it is
    built already (else start-up builds it)."""
    broker = make_broker(settings, telemetry)
    handlers = RetrieverHandlers(settings, telemetry, broker, retriever)
    subscribe(broker, handlers)
    return broker, handlers


def create_app(settings: RetrieverSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("retriever", settings=settings)
    broker, handlers = build_broker(settings, telemetry)

    async def load() -> None:
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        store = configured_store(settings)
        handlers.retriever = Retriever(settings, embedder, store)  # logs its steps

    following: list[asyncio.Task[None]] = []

    async def connected() -> None:
        handlers.assessments = AssessmentStore(await open_assessments_bucket(broker, settings))
        if settings.answer_cache:
            kv = await open_answer_cache_bucket(broker, settings, settings)
            cache = AnswerCache(kv, settings, await open_document_index(broker, settings))
            following.append(asyncio.create_task(cache.follow()))
            handlers.cache = cache

    app = create_service(broker, settings, telemetry, load=load, connected=connected)

    @app.on_shutdown
    async def stop_following() -> None:
        for task in following:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        following.clear()

    return app
