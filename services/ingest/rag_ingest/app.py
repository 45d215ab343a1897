"""Ingest service: turns uploaded documents into searchable chunks, idempotently and durably."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker
from prometheus_client import Counter

from rag_common import subjects
from rag_common.broker import INGEST_JSTREAM, PermanentError, make_broker
from rag_common.embedding import Embedder, get_embedder
from rag_common.messages import DeleteRequested, DocumentStatus, IngestRequested
from rag_common.stage import open_buckets, prepare_jetstream, register_ping, register_work_queue, serve_health
from rag_common.status import StatusStore
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.vectors import VectorStore, open_store
from rag_ingest.parsing import ParseError, UnsupportedFileType
from rag_ingest.pipeline import TooManyChunks, index_document, index_version
from rag_ingest.settings import IngestSettings

log = logging.getLogger("rag.ingest")

DOCUMENT_OUTCOMES = ("indexed", "unchanged", "failed", "deleted")


class Ingestor:
    """The ingest handlers' shared state: model, store, buckets."""

    embedder: Embedder
    store: VectorStore
    objects: Any
    status: StatusStore

    def __init__(self, settings: IngestSettings, telemetry: ServiceTelemetry) -> None:
        self.settings = settings
        self.telemetry = telemetry
        self.documents = Counter(
            "rag_documents_ingested_total",
            "Documents handled by ingest, by outcome (indexed, unchanged, failed, deleted)",
            ["outcome"],
            registry=telemetry.registry,
        )
        for outcome in DOCUMENT_OUTCOMES:
            self.documents.labels(outcome)
        self.chunks = Counter("rag_chunks_indexed_total", "Chunks written to Qdrant", registry=telemetry.registry)
        self._locks: dict[str, asyncio.Lock] = {}

    async def ingest(self, request: IngestRequested) -> None:
        """Index the version a message names, if it is still the accepted one.

        The status record is the judge (``StatusStore.transition`` compares and sets): a message
        whose version a newer upload replaced is skipped; the status names the version the index
        holds, with the index's own chunk count; one document is indexed by one worker at a time.
        """
        async with self._document_lock(request.document_id):
            await self._ingest(request)

    async def _ingest(self, request: IngestRequested) -> None:
        def current(record: DocumentStatus) -> bool:
            return record.content_hash == request.content_hash and record.status != "deleting"

        if await self.status.transition(request.document_id, current, status="processing", error=None) is None:
            log.info("skipping %s (%s): a newer upload or a delete replaced it", request.document_id, request.source)
            await self._drop_object(request.object_name)
            return
        indexed = await asyncio.to_thread(self.store.document_state, request.collection, request.document_id)
        version = index_version(request.content_hash, self.settings)
        stored = await asyncio.to_thread(self.store.version_state, request.collection, request.document_id, version)
        if stored.complete:
            # Indexed before: by this very request (its status write was lost, e.g. NATS went
            # away) → "indexed"; by an earlier upload of the same bytes → "unchanged". A worker
            # that died before dropping the replaced version left it beside this one: drop it now.
            await asyncio.to_thread(self.store.drop_other_versions, request.collection, request.document_id, version)
            state = "indexed" if stored.request_id == request.request_id else "unchanged"
            await self.status.transition(request.document_id, current, status=state, chunks=stored.chunks, error=None)
            self.documents.labels(state).inc()
            log.info("document %s already indexed (%s): %s", request.document_id, request.source, state)
            return
        obj = await self.objects.get(request.object_name)
        data: bytes = obj.data
        if hashlib.sha256(data).hexdigest() != request.content_hash:  # written by an older version
            raise PermanentError("content_mismatch", f"stored bytes of {request.source} are not the uploaded ones", 409)
        try:
            with self.telemetry.stage("index"), self.telemetry.tracer.start_as_current_span("ingest.index") as span:
                span.set_attribute("rag.document_id", request.document_id)
                span.set_attribute("rag.collection", request.collection)
                result = await asyncio.to_thread(
                    index_document, request, data, self.embedder, self.store, self.settings, self.telemetry.tracer
                )
        except (ParseError, UnsupportedFileType) as exc:
            raise PermanentError("parse_failed", str(exc), 422) from exc
        except TooManyChunks as exc:
            raise PermanentError("too_many_chunks", str(exc), 413) from exc
        written = await self.status.transition(
            request.document_id, current, status="indexed", chunks=result.chunks, error=None
        )
        self.documents.labels("indexed").inc()
        self.chunks.inc(result.chunks)
        log.info("indexed %s: %d chunks%s", request.source, result.chunks, "" if written else " (superseded)")
        replaced = (indexed.version or "").partition(":")[0]  # the stored version is "<content hash>:<settings>"
        if replaced and replaced != request.content_hash:  # the replaced version's bytes
            await self._drop_object(f"{request.collection}/{request.document_id}/{replaced}")

    async def _drop_object(self, name: str) -> None:
        """Delete bytes no message will read again (a replaced or superseded version)."""
        try:
            await self.objects.delete(name)
        except Exception as exc:  # already gone, or written by an older version under another name
            log.debug("object %s not deleted: %r", name, exc)

    @contextlib.asynccontextmanager
    async def _document_lock(self, document_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(document_id, asyncio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and not lock._waiters:  # type: ignore[attr-defined]
                self._locks.pop(document_id, None)

    async def delete(self, request: DeleteRequested) -> None:
        await asyncio.to_thread(self.store.delete_document, request.collection, request.document_id)
        record = await self.status.get(request.document_id)
        base = f"{request.collection}/{request.document_id}"
        for name in (f"{base}/{record.content_hash}" if record else None, base):  # base: older versions' name
            if name:
                await self._drop_object(name)
        await self.status.delete(request.document_id)
        self.documents.labels("deleted").inc()

    async def failed(self, fields: dict[str, Any], code: str, message: str, status: int) -> None:
        document_id, version = fields.get("document_id"), fields.get("content_hash")
        self.documents.labels("failed").inc()
        if isinstance(document_id, str):  # a superseded version's failure does not mark the newer one

            def same_version(record: DocumentStatus) -> bool:
                return version is None or record.content_hash == version

            await self.status.transition(document_id, same_version, status="failed", error=f"{code}: {message}")


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
        serve_health(broker, telemetry, settings.metrics_host, settings.metrics_port, settings.liveness_timeout_s)

    @app.after_shutdown
    async def stop_health() -> None:
        telemetry.stop_serving()

    return app
