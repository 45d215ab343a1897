"""Document status transitions on a real JetStream key-value bucket: every write compares and sets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats
import pytest

from rag_common.store.documents import StatusStore
from rag_common.wire.messages import IngestRequested
from rag_devrun.natsserver import LocalNatsServer

pytestmark = pytest.mark.integration


@pytest.fixture
async def store(nats_server: LocalNatsServer) -> AsyncIterator[StatusStore]:
    connection = await nats.connect(nats_server.url)
    try:
        yield StatusStore(await connection.jetstream().create_key_value(bucket="documents-test", history=5))
    finally:
        await connection.close()


async def accept(store: StatusStore, version: str, request_id: str) -> None:
    await store.accept_upload(
        document_id="doc",
        collection="c",
        source="a.md",
        version_hash=version,
        size=3,
        request_id=request_id,
        metadata={},
    )


def message(version: str, request_id: str) -> IngestRequested:
    return IngestRequested(
        request_id=request_id,
        document_id="doc",
        collection="c",
        source="a.md",
        object_name="o",
        content_hash=version,
        size=3,
    )


async def test_a_version_goes_from_queued_to_indexed(store: StatusStore) -> None:
    await accept(store, "v1", "r1")
    assert await store.start_processing(message("v1", "r1"))
    finished = await store.finish(message("v1", "r1"), "indexed", 4)
    assert finished is not None
    assert (finished.status, finished.chunks) == ("indexed", 4)
    record = await store.get("doc")
    assert record is not None
    assert (record.status, record.content_hash, record.chunks) == ("indexed", "v1", 4)


async def test_a_replaced_version_is_neither_processed_nor_recorded(store: StatusStore) -> None:
    await accept(store, "v1", "r1")
    await accept(store, "v2", "r2")  # a newer upload of the same name, before ingest got to v1
    assert not await store.start_processing(message("v1", "r1"))
    assert await store.finish(message("v1", "r1"), "indexed", 9) is None
    assert await store.fail("doc", "v1", "parse_failed: x") is None  # an old version's failure marks nothing
    record = await store.get("doc")
    assert record is not None
    assert (record.status, record.content_hash) == ("queued", "v2")


async def test_concurrent_uploads_leave_one_accepted_version_and_lose_no_write(store: StatusStore) -> None:
    await asyncio.gather(*(accept(store, f"v{i}", f"r{i}") for i in range(8)))
    record, revision = await store.entry("doc")
    assert record is not None
    assert record.status == "queued"
    assert revision == 8  # each upload wrote once, none over a record it had not seen


async def test_a_delete_forgets_the_document(store: StatusStore) -> None:
    await accept(store, "v1", "r1")
    assert await store.start_delete("doc", "rd") is not None
    assert not await store.start_processing(message("v1", "r1"))  # no indexing while deleting
    assert await store.fail("doc", "v1", "parse_failed: x") is None  # nor a late failure of the version
    forgotten = await store.forget("doc")
    assert forgotten is not None
    assert forgotten.content_hash == "v1"
    assert await store.get("doc") is None
    assert await store.forget("doc") is None  # a redelivered delete changes nothing


async def test_an_upload_after_the_delete_request_survives_the_delete(store: StatusStore) -> None:
    await accept(store, "v1", "r1")
    await store.start_delete("doc", "rd")
    await accept(store, "v2", "r2")  # accepted (202) after the delete was requested
    assert await store.forget("doc") is None
    assert await store.start_processing(message("v2", "r2"))  # so its ingest goes ahead


async def test_a_delete_of_an_unknown_document_says_so(store: StatusStore) -> None:
    assert await store.start_delete("nothing", "rd") is None
