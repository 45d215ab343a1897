"""Generator service: answers from the retrieved passages through LiteLLM, or extractively
(``rag_generator.drafting``); the handlers are ``rag_generator.handlers``, this module starts them."""

from __future__ import annotations

import asyncio
import importlib

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.config.texts import check_collections_file
from rag_common.store.assessments import AssessmentStore
from rag_common.store.buckets import open_assessments_bucket
from rag_common.store.embedding import get_embedder
from rag_common.transport.broker import make_broker
from rag_common.transport.service import create_service
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_generator.drafting import Generator
from rag_generator.handlers import GeneratorHandlers, subscribe
from rag_generator.scoring import embedding_scorer
from rag_generator.settings import GeneratorSettings


def build_broker(settings: GeneratorSettings, telemetry: ServiceTelemetry) -> tuple[NatsBroker, GeneratorHandlers]:
    """The broker with the generator's handlers subscribed (its ``Generator`` publishes deltas on it)."""
    broker = make_broker(settings, telemetry)
    handlers = GeneratorHandlers(settings, telemetry, broker, Generator(settings, broker, telemetry))
    subscribe(broker, handlers)
    return broker, handlers


def create_app(settings: GeneratorSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("generator", settings=settings)
    broker, handlers = build_broker(settings, telemetry)
    generator = handlers.generator

    async def connected() -> None:
        handlers.assessments = AssessmentStore(await open_assessments_bucket(broker, settings))

    async def load() -> None:
        check_collections_file(settings.collections_file)
        if settings.configured_models():
            # litellm takes seconds to import: pay that at start-up, not on the first question.
            await asyncio.to_thread(importlib.import_module, "litellm")
        if settings.sentence_scoring and settings.sentence_fallback == "model":
            embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
            generator.scorer = embedding_scorer(embedder, settings.sentence_cache_size)

    return create_service(broker, settings, telemetry, load=load, connected=connected)
