"""Listings read the listed collection, not the history of the others; counts read one key each.

800 documents uploaded to and deleted from one collection (their records written as the gateway
and ingest write them), then a one-document collection is listed through the gateway: the
listing, /v1/collections, /v1/models and a chat completion's model check read one record at
most, where they read every key the status bucket ever held. Counting the documents of every
collection reads as much with 10 documents elsewhere as with 510, and the counts stay exact
under concurrent uploads and deletes, and through the sweep that corrects them.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from faststream.nats import NatsBroker

import rag_gateway.resources
from rag_common.config.settings import ServiceSettings
from rag_common.store.buckets import open_buckets
from rag_common.store.docindex import DocumentIndex
from rag_common.store.documents import StatusStore, document_id_for
from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack, StackOptions
from tests.support.http import upload, upload_and_wait
from tests.support.polling import eventually
from tests.support.system import stack_options

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
    tmp_path: Path, nats_server: LocalNatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[CountingKeyValue] = []

    async def counted(broker: NatsBroker, settings: ServiceSettings) -> tuple[Any, Any]:
        """The gateway's buckets as it opens them at start-up, its status bucket counted."""
        objects, kv = await open_buckets(broker, settings)
        opened.append(CountingKeyValue(kv))
        return objects, opened[-1]

    monkeypatch.setattr(rag_gateway.resources, "open_buckets", counted)
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

        [counting] = opened
        counting.gets = 0  # what start-up and the records above read is not the listings'

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
        assert await store.repair_index(settle_s=0) == (1, 1, ())
        assert [r.document_id for r in await store.list("kept")] == [old]
        assert await store.collection_counts() == {"kept": 1}
        assert await store.collection_names() == {"kept"}
    finally:
        await connection.close()


async def test_the_sweep_counts_what_a_release_without_counts_indexed_and_corrects_a_lost_count(
    nats_server: LocalNatsServer,
) -> None:
    """A collection key with an empty value (a release that kept no counts) is counted from its
    document keys until the sweep writes its count; a count a stopped writer left behind (key
    written, count not) is corrected by the sweep, not before."""
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        kv = await js.create_key_value(bucket=subjects.DOC_STATUS_BUCKET)
        index_kv = await js.create_key_value(bucket=subjects.DOC_INDEX_BUCKET, history=1)
        index = DocumentIndex(js, index_kv)
        store = StatusStore(kv, index)
        for source in ("a.md", "b.md"):  # what the former index wrote: document keys, an empty collection key
            document_id = await accept(StatusStore(kv), "legacy", source)
            await index_kv.put(f"d.legacy.{document_id}", b"")
        await index_kv.put("c.legacy", b"")
        stopped = await accept(StatusStore(kv), "drift", "x.md")  # record and key written, then the writer stopped
        await index_kv.put(f"d.drift.{stopped}", b"")
        assert await store.collection_counts() == {"legacy": 2}
        await accept(store, "legacy", "c.md")  # an upload meanwhile: the empty count stays empty
        assert not (await index_kv.get("c.legacy")).value
        assert await store.collection_counts() == {"legacy": 3}

        assert await store.repair_index(settle_s=0) == (0, 0, ("drift", "legacy"))
        assert (await index_kv.get("c.legacy")).value == b"3"
        assert await store.collection_counts() == {"legacy": 3, "drift": 1}
        assert await store.collection_names() == {"legacy", "drift"}
        assert await store.repair_index(settle_s=0) == (0, 0, ())
    finally:
        await connection.close()


async def test_counting_the_collections_reads_no_more_as_other_collections_grow(
    nats_server: LocalNatsServer,
) -> None:
    """The bytes NATS sends for one count of every collection, with 10 and with 510 documents in
    another collection: the same but for the digits of the counts and stream totals."""
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        index = DocumentIndex(js, await js.create_key_value(bucket=subjects.DOC_INDEX_BUCKET, history=1))
        store = StatusStore(await js.create_key_value(bucket=subjects.DOC_STATUS_BUCKET, history=5), index)
        await asyncio.gather(*(accept(store, "listed", f"l{i}.md") for i in range(2)))

        async def counted() -> tuple[dict[str, int], int]:
            before = connection.stats["in_bytes"]
            counts = await store.collection_counts()
            return counts, connection.stats["in_bytes"] - before

        read: dict[int, int] = {}
        for size in (10, 510):
            have = (await store.collection_counts()).get("other", 0)
            for start in range(have, size, 50):
                await asyncio.gather(*(accept(store, "other", f"d{i}.md") for i in range(start, min(size, start + 50))))
            counts, read[size] = await counted()
            assert counts == {"listed": 2, "other": size}
        assert read[510] - read[10] <= 64, f"counting read {read[10]} bytes, then {read[510]}"
    finally:
        await connection.close()


async def test_counts_stay_exact_under_concurrent_uploads_and_deletes(nats_server: LocalNatsServer) -> None:
    """40 new documents and 10 uploads of one name at once, then half deleted while the rest are
    uploaded again: each count equals the documents listed, at every step."""
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        index = DocumentIndex(js, await js.create_key_value(bucket=subjects.DOC_INDEX_BUCKET, history=1))
        store = StatusStore(await js.create_key_value(bucket=subjects.DOC_STATUS_BUCKET, history=5), index)

        async def agree(expected: dict[str, int]) -> None:
            assert await store.collection_counts() == expected
            for collection, count in expected.items():
                assert len(await store.list(collection)) == count
            assert await store.collection_names() == set(expected)

        ids = await asyncio.gather(
            *(accept(store, "busy", f"d{i}.md") for i in range(40)),
            *(accept(store, "busy", "same.md") for _ in range(10)),
            accept(store, "quiet", "q.md"),
        )
        await agree({"busy": 41, "quiet": 1})

        async def delete(document_id: str) -> None:
            assert await store.start_delete(document_id, "del") is not None
            assert await store.forget(document_id) is not None

        await asyncio.gather(
            *(delete(document_id) for document_id in ids[:20]),
            *(accept(store, "busy", f"d{i}.md") for i in range(20, 40)),  # replaced: no new document
        )
        await agree({"busy": 21, "quiet": 1})
        await asyncio.gather(*(delete(document_id) for document_id in {*ids[20:50]}), delete(ids[50]))
        await agree({})
    finally:
        await connection.close()


async def test_collection_counts_follow_upload_replace_failed_upload_and_delete(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    """Through the gateway and ingest: /v1/collections counts what /v1/documents lists, after every
    kind of change."""
    options = replace(
        stack_options(tmp_path, nats_server.url, model_dir, ingest={"max_chunks_per_document": 20}),
        services=("ingest",),
    )
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:

        async def counted_and_listed() -> tuple[dict[str, int], dict[str, int]]:
            listed = (await client.get("/v1/collections")).json()["collections"]
            by_name = {c["name"]: c["documents"] for c in listed}
            documents = {
                name: len((await client.get("/v1/documents", params={"collection": name})).json()["documents"])
                for name in ("zoo", "aviary")
            }
            return by_name, {name: count for name, count in documents.items() if count}

        async def counts() -> dict[str, int]:
            counted, listed = await counted_and_listed()
            assert counted == listed
            return counted

        otters = b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n"
        first = await upload_and_wait(client, "otters.md", otters, "zoo")
        assert first["status"] == "indexed"
        await upload_and_wait(client, "seals.md", b"# Seals\n\nSeals are fed at ten.\n", "zoo")
        await upload_and_wait(client, "owls.md", b"# Owls\n\nOwls sleep by day.\n", "aviary")
        assert await counts() == {"zoo": 2, "aviary": 1}

        replaced = await upload_and_wait(client, "otters.md", otters.replace(b"Tuesday", b"Friday"), "zoo")
        assert (replaced["document_id"], replaced["status"]) == (first["document_id"], "indexed")
        assert await counts() == {"zoo": 2, "aviary": 1}

        refused = await upload(client, "otters.exe", b"MZ", "zoo")
        assert refused.status_code == 415
        line = "Paragraph {0} notes that enclosure {0} holds {1} river otters and one keeper. "
        census = "\n\n".join(line.format(i, i % 7) * 6 for i in range(60))  # over 20 chunks
        failed = await upload_and_wait(client, "census.md", f"# Census\n\n{census}\n".encode(), "zoo")
        assert failed["status"] == "failed"  # listed with its error, so counted
        assert await counts() == {"zoo": 3, "aviary": 1}

        for document_id in (failed["document_id"], first["document_id"]):
            assert (await client.delete(f"/v1/documents/{document_id}")).status_code == 202

            async def looked_up(document_id: str = document_id) -> httpx.Response:
                return await client.get(f"/v1/documents/{document_id}")

            await eventually(
                looked_up, lambda r: r.status_code == 404, timeout_s=60, what=f"document {document_id} deleted"
            )
        # the record goes first, its key and count a moment later (the index follows the records)
        settled = ({"zoo": 1, "aviary": 1}, {"zoo": 1, "aviary": 1})
        await eventually(counted_and_listed, lambda c: c == settled, timeout_s=60, what="the zoo's deletes counted")
        owls = (await client.get("/v1/documents", params={"collection": "aviary"})).json()["documents"]
        assert (await client.delete(f"/v1/documents/{owls[0]['document_id']}")).status_code == 202
        await eventually(
            counted_and_listed, lambda c: c == ({"zoo": 1}, {"zoo": 1}), timeout_s=60, what="the aviary emptied"
        )
        assert await counts() == {"zoo": 1}
        assert "aviary" not in [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
