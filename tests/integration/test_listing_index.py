"""Listings read the listed collection, not the history of the others.

800 documents uploaded to and deleted from one collection (their records written as the gateway
and ingest write them), then a one-document collection is listed through the gateway: the
listing, /v1/collections, /v1/models and a chat completion's model check read one record at
most, where they read every key the status bucket ever held.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from fastapi import FastAPI

from rag_common.store.docindex import DocumentIndex
from rag_common.store.documents import StatusStore, document_id_for
from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack, StackOptions

pytestmark = pytest.mark.integration

HISTORY = 800


class CountingKeyValue:
    """The gateway's status bucket, counting the records it reads."""

    def __init__(self, kv: Any) -> None:
        self.kv, self.gets = kv, 0

    async def get(self, key: str) -> Any:
        self.gets += 1
        return await self.kv.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kv, name)


async def accept(store: StatusStore, collection: str, source: str) -> str:
    document_id = document_id_for(collection, source)
    await store.accept_upload(
        document_id=document_id,
        collection=collection,
        source=source,
        version_hash="h",
        size=1,
        request_id=f"r-{source}",
        metadata={},
    )
    return document_id


async def test_listing_one_collection_does_not_read_the_history_of_another(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    options = StackOptions(data_dir=tmp_path, nats_url=nats_server.url, port=0, metrics=False, services=())
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        connection = await nats.connect(nats_server.url)
        try:
            js = connection.jetstream()
            index = DocumentIndex(js, await js.key_value(subjects.DOC_INDEX_BUCKET))
            store = StatusStore(await js.key_value(subjects.DOC_STATUS_BUCKET), index)
            await accept(store, "small", "only.md")
            for i in range(HISTORY):  # uploaded, then deleted (what the gateway and ingest write)
                document_id = await accept(store, "big", f"doc{i}.md")
                assert await store.start_delete(document_id, f"d{i}") is not None
                assert await store.forget(document_id) is not None
            await accept(store, "other", "kept.md")
        finally:
            await connection.close()

        assert stack.server is not None
        app = stack.server.config.app
        assert isinstance(app, FastAPI)
        gateway = app.state.gateway
        counting = CountingKeyValue(gateway.status.kv)
        gateway.status.kv = counting

        listed = (await client.get("/v1/documents", params={"collection": "small"})).json()["documents"]
        assert [d["source"] for d in listed] == ["only.md"]
        assert counting.gets <= 1
        collections = (await client.get("/v1/collections")).json()["collections"]
        assert {c["name"]: c["documents"] for c in collections} == {"small": 1, "other": 1}
        models = (await client.get("/v1/models")).json()["data"]
        assert sorted(m["id"] for m in models) == ["other", "small"]
        chat = await client.post(
            "/v1/chat/completions", json={"model": "big", "messages": [{"role": "user", "content": "x?"}]}
        )
        assert chat.status_code == 404  # every document of "big" is gone
        assert counting.gets <= 1, f"{counting.gets} status records read for listings of 1-2 documents"


async def test_the_sweep_builds_the_index_from_records_written_before_it(nats_server: LocalNatsServer) -> None:
    """The first start after an upgrade: records, no index. Ingest's sweep adds them, and drops a
    key whose record is gone."""
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        kv = await js.create_key_value(bucket=subjects.DOC_STATUS_BUCKET)
        index = DocumentIndex(js, await js.create_key_value(bucket=subjects.DOC_INDEX_BUCKET))
        old = await accept(StatusStore(kv), "kept", "old.md")  # written by a release without the index
        await index.add("gone", "no-such-record")
        store = StatusStore(kv, index)
        assert await store.list("kept") == []
        assert await store.repair_index() == (1, 1)
        assert [r.document_id for r in await store.list("kept")] == [old]
        assert await store.collection_counts() == {"kept": 1}
        assert await store.collection_names() == {"kept"}
    finally:
        await connection.close()
