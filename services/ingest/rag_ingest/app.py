"""Ingest service: turns uploaded documents into searchable chunks, idempotently and durably (the
handlers are ``rag_ingest.handlers``; this module starts them and sweeps orphaned bytes)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.store.buckets import open_buckets, open_document_index
from rag_common.store.documents import StatusStore
from rag_common.store.embedding import get_embedder, get_second_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.broker import make_broker
from rag_common.transport.service import create_service
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_ingest.handlers import Ingestor, subscribe
from rag_ingest.settings import IngestSettings

log = logging.getLogger("rag.ingest")


def build_broker(settings: IngestSettings, telemetry: ServiceTelemetry, ingestor: Ingestor) -> NatsBroker:
    """The broker with ``ingestor``'s handlers subscribed."""
    broker = make_broker(settings, telemetry)
    subscribe(broker, ingestor)
    return broker


def create_app(settings: IngestSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("ingest", settings=settings)
    ingestor = Ingestor(settings, telemetry)
    broker = build_broker(settings, telemetry, ingestor)

    async def load() -> None:
        ingestor.embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        if settings.second_dense:  # a missing folder stops the service here, naming the setting
            ingestor.second = await asyncio.to_thread(get_second_embedder, settings.resolved_second_model_dir)
        ingestor.store = configured_store(settings)

    sweeping: list[asyncio.Task[None]] = []

    async def sweep_forever() -> None:
        while True:
            try:
                await ingestor.sweep_orphans()
            except Exception as exc:  # NATS away, say: the next sweep tries again
                log.warning("orphan sweep failed: %r", exc)
            if settings.orphan_sweep_interval_s <= 0:
                return
            await asyncio.sleep(settings.orphan_sweep_interval_s)

    async def connected() -> None:
        objects, kv = await open_buckets(broker, settings)
        index = await open_document_index(broker, settings, invalidations=ingestor.invalidations)
        ingestor.objects, ingestor.status = objects, StatusStore(kv, index)
        ingestor.js = broker.connection.jetstream()
        sweeping.append(asyncio.create_task(sweep_forever()))

    app = create_service(broker, settings, telemetry, load=load, connected=connected)

    @app.on_shutdown
    async def stop_sweeping() -> None:
        for task in sweeping:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        sweeping.clear()

    return app
