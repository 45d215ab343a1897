"""Uploads, idempotency, failures and the error shape, through HTTP."""

from __future__ import annotations

import json
import time

import httpx
import nats
import pytest
from fpdf import FPDF
from prometheus_client.parser import text_string_to_metric_families

from tests.support.http import ask, upload, upload_and_wait
from tests.support.polling import eventually
from tests.support.system import UPLOAD_LIMIT, System

pytestmark = pytest.mark.e2e


def make_pdf(lines: list[str]) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for line in lines:
        pdf.cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, str]:
    assert response.status_code == status, response.text
    error: dict[str, str] = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    assert error["request_id"]
    assert response.headers["x-request-id"] == error["request_id"]
    return error


async def test_same_file_twice_is_unchanged_and_changed_file_replaces_chunks(client: httpx.AsyncClient) -> None:
    first = b"# Kiwi rules\n\nThe kiwi greenhouse is watered at 06:40 every morning by the robot Pollux.\n"
    status = await upload_and_wait(client, "kiwi.md", first, "docs-kiwi")
    assert status["status"] == "indexed"
    again = await upload_and_wait(client, "kiwi.md", first, "docs-kiwi")
    assert again["status"] == "unchanged"
    assert again["document_id"] == status["document_id"]
    assert again["chunks"] == status["chunks"]

    changed = b"# Kiwi rules\n\nThe kiwi greenhouse is watered at 21:15 every evening by the robot Castor.\n"
    replaced = await upload_and_wait(client, "kiwi.md", changed, "docs-kiwi")
    assert replaced["status"] == "indexed"
    body = await ask(client, "When is the kiwi greenhouse watered and by which robot?", collection="docs-kiwi")
    kiwi_texts = " ".join(p["text"] for p in body["passages"] if p["source"] == "kiwi.md")
    assert "Castor" in kiwi_texts
    assert "Pollux" not in kiwi_texts


async def test_failed_ingest_keeps_previous_index_and_dead_letters(system: System, client: httpx.AsyncClient) -> None:
    good = make_pdf(["Walrus handbook", "The walrus enclosure gate code is 4471 on weekdays."])
    indexed = await upload_and_wait(client, "walrus.pdf", good, "docs-walrus")
    assert indexed["status"] == "indexed"

    nc = await nats.connect(system.stack.nats_url)
    try:
        dead = await nc.jetstream().subscribe("rag.dlq.ingest.>", ordered_consumer=True)
        failed = await upload_and_wait(client, "walrus.pdf", b"%PDF-1.7 this is not really a pdf", "docs-walrus")
        assert failed["status"] == "failed"
        assert "parse_failed" in failed["error"]
        # The stream holds other tests' letters too: read until this document's (bounded).
        deadline = time.monotonic() + 10
        while True:
            letter = json.loads((await dead.next_msg(timeout=max(deadline - time.monotonic(), 0.1))).data)
            if failed["document_id"] in letter["payload"]:  # a payload may be cut, so not always JSON
                break
        assert letter["type"] == "rag.dlq.v1"
        assert "parse_failed" in letter["error"]
        assert json.loads(letter["payload"])["document_id"] == failed["document_id"]
    finally:
        await nc.close()

    body = await ask(client, "What is the walrus enclosure gate code?", collection="docs-walrus")
    assert any(c["source"] == "walrus.pdf" and c["page"] == 1 for c in body["citations"])
    assert "4471" in body["answer"]


async def test_an_upload_or_delete_that_could_not_be_queued_leaves_the_status_as_it_was(
    system: System, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NATS does not acknowledge the ingest message (503): the status says what it said before, not
    "queued" or "deleting" for a message that never left the gateway."""
    before = await upload_and_wait(client, "herons.md", b"# Herons\n\nThe heron count is on Tuesdays.\n", "unqueued")
    assert before["status"] == "indexed"

    async def unacknowledged(*args: object, **kwargs: object) -> None:
        raise nats.errors.TimeoutError

    monkeypatch.setattr(system.gateway.broker, "publish", unacknowledged)
    changed = await upload(client, "herons.md", b"# Herons\n\nThe heron count is on Fridays.\n", "unqueued")
    new = await upload(client, "egrets.md", b"# Egrets\n\nThe egret count is on Mondays.\n", "unqueued")
    deleted = await client.delete(f"/v1/documents/{before['document_id']}")
    monkeypatch.undo()
    for response in (changed, new, deleted):
        assert_error(response, 503, "unavailable")
        assert response.headers["retry-after"]

    after = (await client.get(f"/v1/documents/{before['document_id']}")).json()
    assert {k: after[k] for k in ("status", "content_hash", "chunks")} == {
        k: before[k] for k in ("status", "content_hash", "chunks")
    }
    listed = (await client.get("/v1/documents", params={"collection": "unqueued"})).json()["documents"]
    assert [(d["source"], d["status"]) for d in listed] == [("herons.md", "indexed")]
    body = await ask(client, "On which day is the heron count?", collection="unqueued")
    assert "Tuesdays" in body["answer"]


async def test_delete_removes_document_and_its_passages(client: httpx.AsyncClient) -> None:
    status = await upload_and_wait(
        client, "ephemeral.md", b"# Ephemeral\n\nThe quokka festival happens on Mars.\n", "docs-delete"
    )
    response = await client.delete(f"/v1/documents/{status['document_id']}")
    assert response.status_code == 202
    assert response.json()["status"] == "deleting"

    async def status_code() -> int:
        return (await client.get(f"/v1/documents/{status['document_id']}")).status_code

    await eventually(status_code, lambda code: code == 404, timeout_s=30, what="deleted document gone (404)")
    body = await ask(client, "Where does the quokka festival happen?", collection="docs-delete")
    assert "ephemeral.md" not in {p["source"] for p in body["passages"]}


async def test_bad_input_gets_clear_errors(client: httpx.AsyncClient) -> None:
    assert_error(await client.post("/v1/query", json={"question": "   "}), 422, "invalid_request")
    assert_error(await client.post("/v1/query", json={}), 422, "invalid_request")
    assert_error(
        await client.post("/v1/query", content=b"{not json", headers={"content-type": "application/json"}),
        422,
        "invalid_request",
    )
    unknown = assert_error(
        await client.post("/v1/query", json={"question": "What is the rate limit?", "collection": "nope"}),
        404,
        "collection_not_found",
    )
    assert "nope" in unknown["message"]
    assert_error(
        await client.post("/v1/query", json={"question": "x?", "collection": "Bad Name!"}), 422, "invalid_request"
    )
    assert_error(await upload(client, "notes.exe", b"MZ..."), 415, "unsupported_media_type")
    assert_error(await upload(client, "big.md", b"a" * (UPLOAD_LIMIT + 1)), 413, "too_large")
    assert_error(await upload(client, "empty.md", b""), 422, "empty_file")
    assert_error(await upload(client, "meta.md", b"# x\n\ntext", metadata="[1,2]"), 422, "invalid_metadata")
    assert_error(await client.get("/v1/documents/does-not-exist"), 404, "document_not_found")
    assert_error(await client.delete("/v1/documents/does-not-exist"), 404, "document_not_found")


async def test_request_id_from_client_is_echoed_as_a_label(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/query", json={"question": "hello"}, headers={"X-Request-ID": "abc123"})
    body = response.json()
    assert body["client_request_id"] == "abc123"
    assert response.headers["x-client-request-id"] == "abc123"
    assert response.headers["x-request-id"] == body["request_id"] != "abc123"


async def test_health_readiness_and_metrics(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    services = {"vector_store", "ingest", "router", "retriever", "generator", "evaluator"}
    assert ready.json() == {
        "status": "ready",
        "checks": {"nats": "ok", "buckets": "ok", "streams": "ok"},
        "services": dict.fromkeys(services, "ok"),
        "missing": [],
        "degraded": [],
    }
    await ask(client, "What is the API rate limit?")
    metrics = (await client.get("/metrics")).text
    assert 'rag_queries_total{outcome="answered"' in metrics
    assert "rag_http_request_duration_seconds_bucket" in metrics
    counted = [line for line in metrics.splitlines() if line.startswith("rag_http_request_duration_seconds_count")]
    answered = [line for line in counted if 'route="/v1/query"' in line and 'status="200"' in line]
    assert answered, counted
    assert float(answered[0].rsplit(" ", 1)[1]) >= 1, counted
    assert 'rag_query_stage_duration_seconds_bucket{le="0.001",stage="retriever"}' in metrics


async def test_folders_in_file_names_are_kept_and_cannot_escape(client: httpx.AsyncClient) -> None:
    first = await upload_and_wait(
        client, "guides/setup.md", b"# Setup\n\nGuides setup uses the blue cable.\n", "docs-folders"
    )
    second = await upload_and_wait(
        client, "admin/setup.md", b"# Setup\n\nAdmin setup uses the red cable.\n", "docs-folders"
    )
    assert (first["source"], second["source"]) == ("guides/setup.md", "admin/setup.md")
    assert first["document_id"] != second["document_id"]
    escaped = await upload(client, "../../etc/notes.md", b"# Notes\n\nplain\n", "docs-folders")
    assert escaped.status_code == 202
    assert escaped.json()["source"] == "etc/notes.md"


async def test_upload_outcomes_are_counted_as_they_happened(client: httpx.AsyncClient) -> None:
    def outcomes(text: str) -> dict[str, float]:
        found = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "rag_uploads_total":
                    found[sample.labels["outcome"]] = sample.value
        return found

    before = outcomes((await client.get("/metrics")).text)
    assert set(before) == {"accepted", "unchanged", "rejected", "failed"}
    content = b"# Outcomes\n\nThe osprey count is 4.\n"
    assert (await upload_and_wait(client, "outcomes.md", content, "docs-outcomes"))["status"] == "indexed"
    assert (await upload(client, "outcomes.md", content, "docs-outcomes")).status_code == 202
    assert (await upload(client, "outcomes.exe", b"MZ")).status_code == 415
    after = outcomes((await client.get("/metrics")).text)
    assert {k: after[k] - before[k] for k in after} == {"accepted": 1, "unchanged": 1, "rejected": 1, "failed": 0}
