"""The ingest handlers: an accepted upload in, its chunks indexed (``rag_ingest.pipeline``) and its
status recorded; a delete request in, the document's chunks, record and bytes gone.

``Ingestor``'s methods are what FastStream calls (``subscribe`` says on which subject and
consumer), so a test can call a handler directly with a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from faststream.nats import NatsBroker
from nats.js import JetStreamContext
from prometheus_client import Counter

from rag_common.store.answer_cache import invalidation_counter
from rag_common.store.contract import Store
from rag_common.store.documents import (
    StatusStore,
    content_hash,
    hash_of_stored_version,
    indexed_outcome,
    legacy_object_name,
    object_name,
)
from rag_common.store.embedding import Embedder, SecondEmbedder
from rag_common.store.memory import release_memory
from rag_common.transport.consuming import PermanentError, register_work_queue
from rag_common.transport.service import register_ping
from rag_common.transport.streams import INGEST_JSTREAM
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages import DeleteRequested, IngestRequested
from rag_common.wire.names import valid_collection
from rag_ingest.parsing import ParseError, UnsupportedFileType
from rag_ingest.pipeline import TooManyChunks, index_document, index_version
from rag_ingest.reconcile import purge_delete_markers, remove_orphans
from rag_ingest.settings import IngestSettings

log = logging.getLogger("rag.ingest")

DOCUMENT_OUTCOMES = ("indexed", "unchanged", "failed", "deleted")


class Ingestor:
    """The ingest handlers' shared state: model, store, buckets."""

    embedder: Embedder
    second: SecondEmbedder | None = None  # the second dense model (RAG_SECOND_DENSE), else None
    store: Store
    objects: Any
    status: StatusStore
    js: JetStreamContext | None = None  # for the sweep's purges of delete markers

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
        self.invalidations = invalidation_counter(telemetry.registry)
        self._locks: dict[str, asyncio.Lock] = {}
        self._indexing = 0  # documents being indexed right now

    async def _read_upload(self, request: IngestRequested) -> bytes:
        """The upload's bytes, within ``object_read_timeout_s`` plus a second per MiB: nats-py's
        object read waits forever for a chunk its consumer never delivers, and a read that never
        ends would hold the document's lock until the process restarts. A read that times out is
        a failure like any other: the message is retried with backoff, then dead-lettered."""
        timeout = self.settings.object_read_timeout_s + request.size / 2**20
        try:
            obj = await asyncio.wait_for(self.objects.get(request.object_name), timeout)
        except TimeoutError:
            raise TimeoutError(f"reading {request.object_name} took over {timeout:.0f} s") from None
        data: bytes = obj.data
        return data

    async def ingest(self, request: IngestRequested) -> None:
        """Index the version a message names, if it is still the accepted one.

        The status record is the judge (``rag_common.store.documents``, compare-and-set): a message
        whose version a newer upload replaced is skipped; the status names the version the index
        holds, with the index's own chunk count; one document is indexed by one worker at a time.
        """
        async with self._document_lock(request.document_id):
            await self._ingest(request)

    async def _ingest(self, request: IngestRequested) -> None:
        if not await self.status.start_processing(request):
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
            state = indexed_outcome(stored.request_id, request)
            await self.status.finish(request, state, stored.chunks, stored.hidden_text)
            await self.status.changed(request.collection)  # "any upload": its cached answers retire
            self.documents.labels(state).inc()
            log.info("document %s already indexed (%s): %s", request.document_id, request.source, state)
            return
        data = await self._read_upload(request)
        if content_hash(data) != request.content_hash:  # written by an older version
            raise PermanentError("content_mismatch", f"stored bytes of {request.source} are not the uploaded ones", 409)
        self._indexing += 1
        try:
            with self.telemetry.stage("index"), self.telemetry.tracer.start_as_current_span("ingest.index") as span:
                span.set_attribute("rag.document_id", request.document_id)
                span.set_attribute("rag.collection", request.collection)
                result = await asyncio.to_thread(
                    index_document,
                    request,
                    data,
                    self.embedder,
                    self.store,
                    self.settings,
                    self.telemetry.tracer,
                    self.second,
                )
        except (ParseError, UnsupportedFileType) as exc:
            raise PermanentError("parse_failed", str(exc), 422) from exc
        except TooManyChunks as exc:
            raise PermanentError("too_many_chunks", str(exc), 413) from exc
        finally:
            self._indexing -= 1
            if self._indexing == 0:
                # The documents' chunks, vectors and points are garbage now (freed by reference
                # counting): give the pages back so a hostile batch does not keep the process at
                # its peak (docs/FAULTS.md, "Store memory after a hostile batch"). Only when no other
                # document is being indexed, and without a full collection: both could delay in-progress beats.
                await asyncio.to_thread(release_memory, collect=False)
        written = await self.status.finish(request, "indexed", result.chunks, result.hidden_text)
        await self.status.changed(request.collection)  # after the chunks are in: no answer of the old index outlives it
        self.documents.labels("indexed").inc()
        self.chunks.inc(result.chunks)
        log.info("indexed %s: %d chunks%s", request.source, result.chunks, "" if written else " (superseded)")
        if result.hidden_text:
            log.info("left out of %s as hidden from a reader: %s", request.source, result.hidden_text)
        replaced = hash_of_stored_version(indexed.version)
        if replaced and replaced != request.content_hash:  # the replaced version's bytes
            await self._drop_object(object_name(request.collection, request.document_id, replaced))

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
            if not lock.locked() and not lock._waiters:
                self._locks.pop(document_id, None)

    async def delete(self, request: DeleteRequested) -> None:
        """Remove a document's chunks, status record and bytes, unless a newer upload replaced it."""
        current = await self.status.get(request.document_id)
        if current is not None and current.status != "deleting":
            # An upload accepted after the delete request replaced the document: its version stays.
            log.info("not deleting %s (%s): a newer upload replaced it", request.document_id, current.source)
            return
        await asyncio.to_thread(self.store.delete_document, request.collection, request.document_id)
        await self.status.changed(request.collection)
        if self._indexing == 0:  # the store freed the points' memory: give the pages back (point 11)
            await asyncio.to_thread(release_memory, collect=False)
        record = await self.status.forget(request.document_id)
        if record is not None:  # else a newer upload owns the record and its bytes
            await self._drop_object(object_name(request.collection, request.document_id, record.content_hash))
            await self._drop_object(legacy_object_name(request.collection, request.document_id))
        self.documents.labels("deleted").inc()

    async def failed(self, fields: dict[str, Any], code: str, message: str, status: int) -> None:
        document_id, version = fields.get("document_id"), fields.get("content_hash")
        collection = fields.get("collection")
        self.documents.labels("failed").inc()
        if isinstance(document_id, str):
            await self.status.fail(document_id, version if isinstance(version, str) else None, f"{code}: {message}")
            if isinstance(version, str) and version and isinstance(collection, str):
                await self._drop_failed_version(collection, document_id, version)
        if isinstance(collection, str) and valid_collection(collection):  # a failed index may have written part
            await self.status.changed(collection)

    async def _drop_failed_version(self, collection: str, document_id: str, version: str) -> None:
        """Delete a failed version's bytes: nothing retries a failed version (a new upload stores them
        again), so they would stay in the bucket for good. Kept while the record names these bytes
        in another state: the same file uploaded again and queued, or a delete under way (which
        deletes them itself)."""
        current = await self.status.get(document_id)
        if current is not None and current.content_hash == version and current.status != "failed":
            return
        await self._drop_object(object_name(collection, document_id, version))

    async def check(self) -> dict[str, Any]:
        """The readiness ping's details: the vector store answers."""
        await asyncio.to_thread(self.store.ping)
        return {"vector_store": "ok"}

    async def sweep_orphans(self) -> list[str]:
        """Bring the listing index in line with the status records (``rag_common.store.docindex``), then
        delete stored bytes no status record names, and purge the markers deleted bytes leave
        (``rag_ingest.reconcile``)."""
        added, removed, recounted = await self.status.repair_index()
        if added or removed or recounted:
            log.info(
                "document index repaired: %d documents added, %d removed, counts corrected for %s",
                added,
                removed,
                ", ".join(recounted) or "no collection",
            )
        orphans = await remove_orphans(self.objects, self.status, grace_s=self.settings.orphan_grace_s)
        if self.js is not None:  # after the orphans: their deletes leave markers too
            await purge_delete_markers(self.js, self.objects, subjects.DOCUMENTS_BUCKET)
        return orphans


def subscribe(broker: NatsBroker, ingestor: Ingestor) -> None:
    """Ingest's subscriptions: uploads and deletes (each its own durable consumer) and its readiness ping."""
    settings, telemetry = ingestor.settings, ingestor.telemetry
    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subjects.INGEST_REQUESTED,
        consumer=subjects.INGEST_CONSUMER,
        stream=INGEST_JSTREAM,
        area="ingest",
        stage="requested",
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
        work=ingestor.delete,
        ack_wait=60.0,
        on_failure=ingestor.failed,
    )
    register_ping(broker, "ingest", ingestor.check)
