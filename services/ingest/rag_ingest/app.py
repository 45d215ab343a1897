"""Ingest service: turns uploaded documents into searchable chunks, idempotently and durably."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common import subjects
from rag_common.broker import INGEST_JSTREAM, PermanentError, make_broker
from rag_common.embedding import Embedder, get_embedder
from rag_common.messages import DeleteRequested, IngestRequested
from rag_common.stage import open_buckets, prepare_jetstream, register_ping, register_work_queue
from rag_common.status import StatusStore
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.vectors import VectorStore, open_store
from rag_ingest.parsing import ParseError, UnsupportedFileType
from rag_ingest.pipeline import index_document
from rag_ingest.settings import IngestSettings

log = logging.getLogger("rag.ingest")


class Ingestor:
    """The ingest handlers' shared state: model, store, buckets."""

    embedder: Embedder
    store: VectorStore
    objects: Any
    status: StatusStore

    def __init__(self, settings: IngestSettings, telemetry: ServiceTelemetry) -> None:
        self.settings = settings
        self.telemetry = telemetry

    async def ingest(self, request: IngestRequested) -> None:
        await self.status.update(request.document_id, status="processing", error=None)
        indexed = await asyncio.to_thread(self.store.document_version, request.collection, request.document_id)
        if indexed == request.content_hash:
            current = await self.status.get(request.document_id)
            await self.status.update(request.document_id, status="unchanged", chunks=current.chunks if current else 0)
            log.info("document %s unchanged (%s)", request.document_id, request.source)
            return
        obj = await self.objects.get(request.object_name)
        data: bytes = obj.data
        try:
            with self.telemetry.stage("index"):
                result = await asyncio.to_thread(
                    index_document, request, data, self.embedder, self.store, self.settings
                )
        except (ParseError, UnsupportedFileType) as exc:
            raise PermanentError("parse_failed", str(exc), 422) from exc
        await self.status.update(request.document_id, status="indexed", chunks=result.chunks, error=None)
        log.info("indexed %s: %d chunks", request.source, result.chunks)

    async def delete(self, request: DeleteRequested) -> None:
        await asyncio.to_thread(self.store.delete_document, request.collection, request.document_id)
        try:
            await self.objects.delete(f"{request.collection}/{request.document_id}")
        except Exception as exc:  # the object may already be gone; the index is what matters
            log.info("object for %s not deleted: %r", request.document_id, exc)
        await self.status.delete(request.document_id)

    async def failed(self, fields: dict[str, Any], code: str, message: str, status: int) -> None:
        document_id = fields.get("document_id")
        if isinstance(document_id, str):
            await self.status.update(document_id, status="failed", error=f"{code}: {message}")


def build_broker(settings: IngestSettings, telemetry: ServiceTelemetry, ingestor: Ingestor) -> NatsBroker:
    broker = make_broker(settings, telemetry)

    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subjects.INGEST_REQUESTED,
        consumer=subjects.INGEST_CONSUMER,
        stream=INGEST_JSTREAM,
        area="ingest",
        stage="requested",
        model=IngestRequested,
        work=ingestor.ingest,
        ack_wait=settings.ack_wait_s,
        on_failure=ingestor.failed,
    )
    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subjects.INGEST_DELETE,
        consumer=subjects.INGEST_DELETE_CONSUMER,
        stream=INGEST_JSTREAM,
        area="ingest",
        stage="delete",
        model=DeleteRequested,
        work=ingestor.delete,
        ack_wait=60.0,
        on_failure=ingestor.failed,
    )

    async def check() -> dict[str, Any]:
        await asyncio.to_thread(ingestor.store.ping)
        return {"vector_store": "ok"}

    register_ping(broker, "ingest", check)
    return broker


def create_app(settings: IngestSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("ingest")
    ingestor = Ingestor(settings, telemetry)
    broker = build_broker(settings, telemetry, ingestor)
    app = FastStream(broker)

    @app.on_startup
    async def startup() -> None:
        ingestor.embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        ingestor.store = open_store(settings.qdrant_url, settings.resolved_qdrant_path, settings.qdrant_api_key)
        await prepare_jetstream(broker, settings)
        objects, kv = await open_buckets(broker, settings)
        ingestor.objects, ingestor.status = objects, StatusStore(kv)
        telemetry.serve_metrics(settings.metrics_host, settings.metrics_port)

    return app
