"""The ingest service alone: in memory (buckets stood in for) and, with the same body, on a real nats-server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rag_common.store.buckets import open_buckets
from rag_common.store.documents import StatusStore, content_hash, document_id_for, object_name
from rag_common.store.embedding import get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import DeleteRequested, DocumentStatus, IngestRequested
from rag_ingest.app import build_broker
from rag_ingest.handlers import Ingestor
from rag_ingest.settings import IngestSettings
from tests.support.buckets import MemoryKeyValue, MemoryObjectStore
from tests.support.components import BrokerMode
from tests.support.polling import eventually

pytestmark = pytest.mark.component

COLLECTION = "component"
SOURCE = "greenhouse.md"
CONTENT = b"# Greenhouse\n\n## Watering\n\nThe kiwi greenhouse is watered at 06:40 by the robot Pollux.\n"


async def make_ingestor(mode: BrokerMode, model_dir: Path, tmp_path: Path) -> tuple[Ingestor, Any]:
    """An ingest service with its model and store loaded, and its broker (not started)."""
    settings = IngestSettings(metrics_port=0, model_dir=model_dir, qdrant_path=tmp_path / "qdrant", **mode.settings)
    ingestor = Ingestor(settings, setup_telemetry("ingest"))
    ingestor.embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
    ingestor.store = configured_store(settings)
    return ingestor, build_broker(settings, ingestor.telemetry, ingestor)


async def attach_buckets(ingestor: Ingestor, broker: Any, mode: BrokerMode) -> None:
    """The real buckets on a server, in-memory stand-ins otherwise."""
    if mode.real:
        objects, kv = await open_buckets(broker, ingestor.settings)
    else:
        objects, kv = MemoryObjectStore(), MemoryKeyValue()
    ingestor.objects, ingestor.status = objects, StatusStore(kv)


async def upload(ingestor: Ingestor, broker: Any, data: bytes, request_id: str) -> str:
    """What the gateway does for an upload: store the bytes, accept the version, queue it."""
    document_id, version = document_id_for(COLLECTION, SOURCE), content_hash(data)
    name = object_name(COLLECTION, document_id, version)
    await ingestor.objects.put(name, data)
    await ingestor.status.accept_upload(
        document_id=document_id,
        collection=COLLECTION,
        source=SOURCE,
        version_hash=version,
        size=len(data),
        request_id=request_id,
        metadata={},
    )
    message = IngestRequested(
        request_id=request_id,
        document_id=document_id,
        collection=COLLECTION,
        source=SOURCE,
        object_name=name,
        content_hash=version,
        size=len(data),
    )
    await broker.publish(message, subjects.INGEST_REQUESTED, stream=subjects.INGEST_STREAM)
    return document_id


async def final_status(status: StatusStore, document_id: str) -> DocumentStatus:
    async def record() -> DocumentStatus | None:
        return await status.get(document_id)

    found = await eventually(
        record,
        lambda r: r is not None and r.status in ("indexed", "unchanged", "failed"),
        timeout_s=60,
        what=f"document {document_id} final",
    )
    assert found is not None
    return found


async def test_a_document_is_indexed_then_unchanged_then_failed_keeping_its_index(
    mode: BrokerMode, model_dir: Path, tmp_path: Path
) -> None:
    ingestor, broker = await make_ingestor(mode, model_dir, tmp_path)
    async with mode.broker(broker) as br:
        await attach_buckets(ingestor, br, mode)

        document_id = await upload(ingestor, br, CONTENT, "r1")
        indexed = await final_status(ingestor.status, document_id)
        assert (indexed.status, indexed.source, indexed.collection) == ("indexed", SOURCE, COLLECTION)
        assert indexed.chunks >= 1

        await upload(ingestor, br, CONTENT, "r2")  # the same bytes again
        again = await final_status(ingestor.status, document_id)
        assert (again.status, again.chunks) == ("unchanged", indexed.chunks)

        await upload(ingestor, br, b"", "r3")  # bytes that make no document
        failed = await final_status(ingestor.status, document_id)
        assert failed.status == "failed"
        assert failed.error
    state = ingestor.store.document_state(COLLECTION, document_id)
    assert state.chunks == indexed.chunks  # the failed version left the indexed one searchable


async def test_a_delete_removes_chunks_record_and_bytes_but_spares_a_newer_upload(
    mode: BrokerMode, model_dir: Path, tmp_path: Path
) -> None:
    ingestor, broker = await make_ingestor(mode, model_dir, tmp_path)
    async with mode.broker(broker) as br:
        await attach_buckets(ingestor, br, mode)
        document_id = await upload(ingestor, br, CONTENT, "r1")
        assert (await final_status(ingestor.status, document_id)).status == "indexed"

        async def record() -> DocumentStatus | None:
            return await ingestor.status.get(document_id)

        # A delete whose document was uploaded again in the meantime leaves the new version alone.
        await ingestor.status.start_delete(document_id, "d1")
        changed = CONTENT.replace(b"06:40", b"21:15")
        await upload(ingestor, br, changed, "r2")
        await br.publish(
            DeleteRequested(request_id="d1", document_id=document_id, collection=COLLECTION),
            subjects.INGEST_DELETE,
            stream=subjects.INGEST_STREAM,
        )
        replaced = await final_status(ingestor.status, document_id)
        assert (replaced.status, replaced.content_hash) == ("indexed", content_hash(changed))

        await ingestor.status.start_delete(document_id, "d2")
        await br.publish(
            DeleteRequested(request_id="d2", document_id=document_id, collection=COLLECTION),
            subjects.INGEST_DELETE,
            stream=subjects.INGEST_STREAM,
        )
        await eventually(record, lambda r: r is None, timeout_s=30, what="the deleted document's record gone")
        name = object_name(COLLECTION, document_id, content_hash(changed))
        with pytest.raises(Exception):  # noqa: B017, PT011  (the object store's "not found" differs in memory and on NATS)
            await ingestor.objects.get(name)
    assert ingestor.store.document_state(COLLECTION, document_id).chunks == 0


class StallingObjects:
    """An object store whose first ``stalls`` reads never end (as nats-py's read does when its
    consumer never delivers a chunk); later reads are the real store's."""

    def __init__(self, objects: Any, stalls: int) -> None:
        self.objects, self.stalls, self.reads = objects, stalls, 0

    async def put(self, name: str, data: bytes, meta: Any = None) -> Any:
        return await self.objects.put(name, data)

    async def get(self, name: str) -> Any:
        self.reads += 1
        if self.reads <= self.stalls:
            await asyncio.Event().wait()
        return await self.objects.get(name)

    async def delete(self, name: str) -> Any:
        return await self.objects.delete(name)


# The retry is JetStream's redelivery of the nacked message: a real server only.
@pytest.mark.parametrize("mode", [pytest.param("real", marks=pytest.mark.integration)], indirect=True)
async def test_a_read_of_the_uploaded_bytes_that_never_ends_is_retried_and_the_document_indexed(
    mode: BrokerMode, model_dir: Path, tmp_path: Path
) -> None:
    ingestor, broker = await make_ingestor(mode, model_dir, tmp_path)
    ingestor.settings.object_read_timeout_s = 0.2
    async with mode.broker(broker) as br:
        await attach_buckets(ingestor, br, mode)
        stalling = StallingObjects(ingestor.objects, stalls=1)
        ingestor.objects = stalling
        document_id = await upload(ingestor, br, CONTENT, "r1")
        indexed = await final_status(ingestor.status, document_id)
    assert indexed.status == "indexed"
    assert indexed.chunks >= 1
    assert stalling.reads == 2  # the stalled read gave up, the message came back, the second read worked


async def test_a_stalled_read_gives_up_naming_the_object(model_dir: Path, tmp_path: Path) -> None:
    settings = IngestSettings(
        metrics_port=0, model_dir=model_dir, qdrant_path=tmp_path / "q", object_read_timeout_s=0.05
    )
    ingestor = Ingestor(settings, setup_telemetry("ingest"))
    memory = MemoryObjectStore()
    await memory.put("o1", CONTENT)
    ingestor.objects = StallingObjects(memory, stalls=1)
    request = IngestRequested(
        request_id="r1", document_id="d1", source=SOURCE, object_name="o1", content_hash="", size=len(CONTENT)
    )
    with pytest.raises(TimeoutError, match="reading o1 took over 0 s"):
        await asyncio.wait_for(ingestor._read_upload(request), 10)
    assert await ingestor._read_upload(request) == CONTENT
