"""Evaluator service: attaches quality flags to every answer and hands it to the waiting gateway
(the handlers are ``rag_evaluator.handlers``; this module starts them)."""

from __future__ import annotations

import asyncio
import logging

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.config.texts import check_collections_file
from rag_common.store.answer_cache import AnswerCache, open_answer_cache_bucket
from rag_common.store.assessments import AssessmentStore
from rag_common.store.buckets import open_assessments_bucket
from rag_common.store.embedding import get_embedder
from rag_common.transport.broker import make_broker
from rag_common.transport.service import create_service
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_evaluator.handlers import EvaluatorHandlers, subscribe
from rag_evaluator.settings import EvaluatorSettings

log = logging.getLogger("rag.evaluator")


def build_broker(settings: EvaluatorSettings, telemetry: ServiceTelemetry) -> tuple[NatsBroker, EvaluatorHandlers]:
    """The broker with the evaluator's handlers subscribed."""
    broker = make_broker(settings, telemetry)
    handlers = EvaluatorHandlers(settings, telemetry, broker)
    subscribe(broker, handlers)
    return broker, handlers


def create_app(settings: EvaluatorSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("evaluator", settings=settings)
    broker, handlers = build_broker(settings, telemetry)

    async def load() -> None:
        check_collections_file(settings.collections_file)
        # MiniLM embeds assessment stems for the near-duplicate check (shared in the dev runner).
        # Without its folder the check compares the quoted sentences only, and says so.
        if not settings.resolved_model_dir.is_dir():
            log.warning(
                "no embedding model at %s (RAG_MODEL_DIR): assessment near-duplicates are found by shared "
                "sentences only, not by stem similarity",
                settings.resolved_model_dir,
            )
            return
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        handlers.embed = embedder.embed_dense

    async def connected() -> None:
        handlers.assessments = AssessmentStore(await open_assessments_bucket(broker, settings))
        if settings.answer_cache:
            handlers.cache = AnswerCache(await open_answer_cache_bucket(broker, settings, settings), settings)

    return create_service(broker, settings, telemetry, load=load, connected=connected)
