"""Ingest under concurrency and faults: the status always names what the index holds."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from rag_common.store.documents import StatusStore
from rag_common.store.edge import EdgeStore
from rag_common.store.vectors import VectorStore
from rag_common.wire import subjects
from rag_common.wire.messages import DocumentStatus
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.http import upload, upload_and_wait, wait_for_status
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


def version(i: int) -> bytes:
    return f"# Otter pool\n\nThe otter pool is cleaned by team number {i} of the zoo.\n".encode()


async def indexed_passages(client: httpx.AsyncClient) -> list[str]:
    response = await client.post(
        "/v1/query", json={"question": "Which team cleans the otter pool?", "filters": {"source": "race.md"}}
    )
    assert response.status_code == 200, response.text
    return [p["text"] for p in response.json()["passages"]]


async def test_concurrent_uploads_of_one_name_end_with_one_version_in_text_status_and_hash(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        responses = await asyncio.gather(*(upload(client, "race.md", version(i)) for i in range(10)))
        assert [r.status_code for r in responses] == [202] * 10
        document_id = responses[0].json()["document_id"]
        record = await wait_for_status(client, document_id, timeout_s=120)
        assert record["status"] == "indexed", record
        winner = next(i for i in range(10) if hashlib.sha256(version(i)).hexdigest() == record["content_hash"])
        assert record["size"] == len(version(winner))
        passages = await indexed_passages(client)
        assert passages, (winner, passages)
        assert all(f"team number {winner} " in text for text in passages), (winner, passages)
        assert record["chunks"] == 1

        again = await upload_and_wait(client, "race.md", version(winner))
        assert again["status"] == "unchanged"
        assert again["chunks"] == 1
        other = (winner + 1) % 10
        replaced = await upload_and_wait(client, "race.md", version(other))
        assert replaced["status"] == "indexed"
        assert all(f"team number {other} " in text for text in await indexed_passages(client))


async def test_a_lost_status_write_after_indexing_is_repaired_from_the_index(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NATS goes away just after the chunks are written: the retry must not say "unchanged, 0 chunks"."""
    real_put_if = StatusStore.put_if
    failures: list[str] = []

    async def flaky_put_if(self: StatusStore, status: DocumentStatus, revision: int) -> bool:
        if status.status == "indexed" and not failures:
            failures.append(status.document_id)
            raise ConnectionError("nats: connection lost (injected)")
        return await real_put_if(self, status, revision)

    monkeypatch.setattr(StatusStore, "put_if", flaky_put_if)
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        body = b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n\n## Food\n\nOtters eat fish at noon.\n"
        record: dict[str, Any] = await upload_and_wait(client, "otters.md", body)
        assert failures == [record["document_id"]]
        assert record["status"] == "indexed"
        assert record["chunks"] >= 1
        answer = (await client.post("/v1/query", json={"question": "When is the otter pool cleaned?"})).json()
        assert "Tuesday" in answer["answer"]


def long_document(paragraphs: int) -> bytes:
    line = "Paragraph {0} notes that enclosure {0} holds {1} river otters and one keeper."
    lines = [line.format(i, i % 7) for i in range(paragraphs)]
    return ("# Census\n\n" + "\n\n".join(" ".join([line] * 6) for line in lines) + "\n").encode()


async def test_a_document_beyond_the_chunk_limit_fails_with_a_clear_status(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir, ingest={"max_chunks_per_document": 20})
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        record = await upload_and_wait(client, "census.md", long_document(60))
        assert record["status"] == "failed"
        assert record["error"].startswith("too_many_chunks: census.md makes ")
        assert "RAG_INGEST_MAX_CHUNKS_PER_DOCUMENT=20" in record["error"]
        small = await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
        assert small["status"] == "indexed"


async def test_a_long_document_is_not_redelivered_and_does_not_hold_up_small_ones(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    """Ack wait 1 s, a document that takes several: in-progress beats keep it with its worker,
    and the second ingest worker indexes a small document meanwhile."""
    options = stack_options(tmp_path, nats_server.url, model_dir, ingest={"ack_wait_s": 1.0, "concurrency": 2})
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        big = await upload(client, "census.md", long_document(400))
        assert big.status_code == 202
        big_id = big.json()["document_id"]
        deadline = time.monotonic() + 30
        while (await client.get(f"/v1/documents/{big_id}")).json()["status"] != "processing":
            assert time.monotonic() < deadline, "the long document never started"
            await asyncio.sleep(0.02)
        small = await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
        assert small["status"] == "indexed"
        assert (await client.get(f"/v1/documents/{big_id}")).json()["status"] == "processing"

        record = await wait_for_status(client, big_id, timeout_s=300)
        assert record["status"] == "indexed"
        assert record["chunks"] > 100
        nc = await nats.connect(nats_server.url)
        try:
            info = await nc.jetstream().consumer_info(subjects.INGEST_STREAM, subjects.INGEST_CONSUMER)
        finally:
            await nc.close()
        assert info.delivered.consumer_seq == 2  # two uploads, two deliveries: nothing was redelivered


async def test_an_ingest_that_dies_between_writing_and_dropping_leaves_only_the_new_version(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new version's chunks are written, then the worker fails before the replaced version's
    are dropped (as a killed process would): the retried message must not call the document
    indexed while the old revision's text is still found beside the new one."""
    failures: list[str] = []

    def dying(real_drop: Callable[[Any, str, str, str], None]) -> Callable[[Any, str, str, str], None]:
        def dying_drop(self: Any, name: str, document_id: str, version: str) -> None:
            if failures == ["armed"]:
                failures.append(version)
                raise ConnectionError("worker died after writing the new version (injected)")
            real_drop(self, name, document_id, version)

        return dying_drop

    for backend in (VectorStore, EdgeStore):  # whichever RAG_VECTOR_BACKEND chose
        monkeypatch.setattr(backend, "_drop_other_versions", dying(backend._drop_other_versions))
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        first = await upload_and_wait(client, "race.md", version(1))
        assert first["status"] == "indexed"
        # Two replacements: the index lists the new version's chunks after the old one's in one and
        # before them in the other (chunk ids hash the version), so a repair that trusts whichever
        # chunk it finds first is caught either way.
        for new in (2, 3):
            failures[:] = ["armed"]
            record = await upload_and_wait(client, "race.md", version(new))
            assert len(failures) == 2, "the fault was not injected"
            assert record["status"] == "indexed", (new, record)
            assert record["chunks"] == 1, (new, record)
            passages = await indexed_passages(client)
            assert passages, (new, passages)
            assert all(f"team number {new} " in text for text in passages), (new, passages)


async def test_questions_during_re_indexing_see_one_whole_revision(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    """While a document is replaced again and again, every question filtered to it finds its
    text: the old revision's or the new one's, never neither and never both."""
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await upload_and_wait(client, "race.md", version(0))
        replaced = asyncio.Event()
        seen: list[set[str]] = []

        async def asker() -> None:
            while not replaced.is_set():
                passages = await indexed_passages(client)
                seen.append({word for text in passages for word in re.findall(r"team number (\d+) ", text)})

        asking = asyncio.create_task(asker())
        try:
            for revision in range(1, 7):
                record = await upload_and_wait(client, "race.md", version(revision))
                assert record["status"] == "indexed", record
        finally:
            replaced.set()
            await asking
        assert seen, "no question was asked while the document was re-indexed"
        assert all(len(teams) == 1 for teams in seen), [sorted(t) for t in seen if len(t) != 1]
