"""Listing document records stays complete while ingest keeps writing statuses."""

from __future__ import annotations

import asyncio

import nats
import pytest

from rag_common.store.documents import StatusStore
from rag_common.wire.messages import DocumentStatus
from rag_common.wire.messages.ingest import DocumentState
from rag_devrun.natsserver import LocalNatsServer

pytestmark = pytest.mark.integration

RECORDS = 20


def record(i: int, status: DocumentState = "indexed") -> DocumentStatus:
    return DocumentStatus(document_id=f"doc{i}", collection="c", source=f"s{i}.md", status=status)


async def put(store: StatusStore, status: DocumentStatus) -> None:
    """A raw write: this test is about listing, not about the transitions' compare-and-set."""
    await store.kv.put(status.document_id, status.model_dump_json().encode())


async def test_listing_is_complete_under_concurrent_writes(nats_server: LocalNatsServer) -> None:
    connection = await nats.connect(nats_server.url)
    try:
        store = StatusStore(await connection.jetstream().create_key_value(bucket="status-listing"))
        for i in range(RECORDS):
            await put(store, record(i))
        await store.kv.delete("doc0")
        stop = asyncio.Event()

        async def keep_writing() -> None:
            i = 0
            while not stop.is_set() and i < 100_000:
                await put(store, record(1 + i % (RECORDS - 1), "processing"))
                i += 1

        writer = asyncio.create_task(keep_writing())
        try:
            for _ in range(100):
                listed = await store.list()
                assert sorted(r.document_id for r in listed) == sorted(f"doc{i}" for i in range(1, RECORDS))
        finally:
            stop.set()
            await writer
    finally:
        await connection.close()
