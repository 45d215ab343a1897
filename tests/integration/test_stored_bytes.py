"""The object store keeps only bytes a status record still names: failed, replaced and deleted
versions leave nothing behind, and a sweep removes what a crash or an older release left."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import nats
import pytest

from rag_common.store.documents import StatusStore, content_hash, document_id_for, object_name
from rag_common.wire import subjects
from rag_common.wire.messages import DocumentStatus
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_ingest.reconcile import remove_orphans
from tests.support.http import wait_for_status
from tests.support.polling import eventually
from tests.support.system import stack_options

pytestmark = pytest.mark.integration

MB = 1024 * 1024


async def stored_objects(url: str) -> list[str]:
    connection = await nats.connect(url)
    try:
        objects = await connection.jetstream().object_store(subjects.DOCUMENTS_BUCKET)
        try:
            return sorted(str(info.name) for info in await objects.list(ignore_deletes=True))
        except nats.js.errors.NotFoundError:
            return []
    finally:
        await connection.close()


@pytest.fixture
async def ingest_stack(tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path) -> AsyncIterator[Stack]:
    options = stack_options(
        tmp_path, nats_server.url, model_dir, gateway={"max_upload_bytes": 5 * MB}, ingest={"orphan_grace_s": 0}
    )
    options.services = ("ingest",)
    async with Stack(options) as stack:
        yield stack


async def test_five_failed_versions_then_a_delete_leave_no_bytes(ingest_stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=ingest_stack.base_url, timeout=60) as client:
        document_id = ""
        for _ in range(5):  # five different 4 MB binaries under one Markdown name
            response = await client.post(
                "/v1/documents", files={"file": ("blob.md", os.urandom(4 * MB))}, data={"collection": "bytes"}
            )
            assert response.status_code == 202, response.text
            document_id = response.json()["document_id"]
            assert (await wait_for_status(client, document_id, timeout_s=120))["status"] == "failed"
        assert (await client.delete(f"/v1/documents/{document_id}")).status_code == 202

        async def gone() -> int:
            return (await client.get(f"/v1/documents/{document_id}")).status_code

        await eventually(gone, lambda status: status == 404, timeout_s=60, what="the document deleted")
    left = await eventually(
        lambda: stored_objects(ingest_stack.nats_url), lambda names: names == [], timeout_s=30, what="no bytes left"
    )
    assert left == []


async def test_the_sweep_removes_orphans_but_not_named_or_fresh_bytes(nats_server: LocalNatsServer) -> None:
    connection = await nats.connect(nats_server.url)
    try:
        js = connection.jetstream()
        objects = await js.create_object_store(subjects.DOCUMENTS_BUCKET)
        status = StatusStore(await js.create_key_value(bucket=subjects.DOC_STATUS_BUCKET))
        kept_id, gone_id = document_id_for("c", "kept.md"), document_id_for("c", "gone.md")
        failed_id = document_id_for("c", "failed.md")
        for record in (
            DocumentStatus(document_id=kept_id, collection="c", source="k.md", status="indexed", content_hash="h2"),
            DocumentStatus(document_id=failed_id, collection="c", source="f.md", status="failed", content_hash="h"),
        ):
            await status.kv.put(record.document_id, record.model_dump_json().encode())
        named = object_name("c", kept_id, "h2")
        orphans = [
            object_name("c", kept_id, "h1"),  # a replaced version of a live document
            object_name("c", gone_id, "h1"),  # a deleted document's bytes
            object_name("c", failed_id, "h"),  # a failed version
            f"c/{gone_id}",  # an older release's name, no record
        ]
        for name in [named, *orphans, "not-ours"]:
            await objects.put(name, b"bytes")

        assert await remove_orphans(objects, status, grace_s=600) == []  # all fresh: maybe being accepted
        assert sorted(await remove_orphans(objects, status, grace_s=0)) == sorted(orphans)
        left = sorted(str(info.name) for info in await objects.list(ignore_deletes=True))
        assert left == sorted([named, "not-ours"])
    finally:
        await connection.close()


async def test_ingest_sweeps_orphans_at_start_up(tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path) -> None:
    connection = await nats.connect(nats_server.url)
    try:
        objects = await connection.jetstream().create_object_store(subjects.DOCUMENTS_BUCKET)
        orphan = object_name("c", document_id_for("c", "crashed.md"), "h1")
        await objects.put(orphan, b"bytes of an upload whose record is gone")
    finally:
        await connection.close()
    assert await stored_objects(nats_server.url) == [orphan]
    options = stack_options(tmp_path, nats_server.url, model_dir, ingest={"orphan_grace_s": 0})
    options.services, options.gateway = ("ingest",), False
    async with Stack(options):
        await eventually(
            lambda: stored_objects(nats_server.url), lambda names: names == [], timeout_s=30, what="orphan swept"
        )


async def object_stream_state(url: str) -> tuple[int, int]:
    """Messages and bytes of the object store's stream: what the bucket costs the server."""
    connection = await nats.connect(url)
    try:
        state = (await connection.jetstream().stream_info(f"OBJ_{subjects.DOCUMENTS_BUCKET}")).state
        return state.messages, state.bytes
    finally:
        await connection.close()


@pytest.fixture
async def sweeping_stack(tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path) -> AsyncIterator[Stack]:
    """Ingest sweeping every second, orphans of any age."""
    ingest = {"orphan_grace_s": 0, "orphan_sweep_interval_s": 1}
    options = stack_options(tmp_path, nats_server.url, model_dir, ingest=ingest)
    options.services = ("ingest",)
    async with Stack(options) as stack:
        yield stack


async def test_a_hundred_failed_uploads_leave_no_residue_after_the_sweep(sweeping_stack: Stack) -> None:
    kept = b"# Kept\n\nThe default port is 8080.\n"
    async with httpx.AsyncClient(base_url=sweeping_stack.base_url, timeout=60) as client:
        indexed = await client.post("/v1/documents", files={"file": ("kept.md", kept)}, data={"collection": "bytes"})
        assert (await wait_for_status(client, indexed.json()["document_id"]))["status"] == "indexed"
        baseline = await eventually(
            lambda: object_stream_state(sweeping_stack.nats_url), lambda s: s[0] > 0, timeout_s=30, what="stored"
        )
        failed = []
        for n in range(100):  # binary bytes under a Markdown name: each version fails
            response = await client.post(
                "/v1/documents", files={"file": (f"blob-{n}.md", os.urandom(2048))}, data={"collection": "bytes"}
            )
            assert response.status_code == 202, response.text
            failed.append(response.json()["document_id"])
        for document_id in failed:
            assert (await wait_for_status(client, document_id, timeout_s=120))["status"] == "failed"
    residue = await eventually(
        lambda: object_stream_state(sweeping_stack.nats_url),
        lambda state: state == baseline,
        timeout_s=30,
        what=f"the object stream back to {baseline} (messages, bytes)",
    )
    assert residue == baseline
    assert await stored_objects(sweeping_stack.nats_url) == [
        object_name("bytes", document_id_for("bytes", "kept.md"), content_hash(kept))
    ]
