"""One trace per question across every hop, checked with an in-memory span exporter."""

from __future__ import annotations

import json

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from tests.support.http import ask, upload, upload_and_wait
from tests.support.polling import eventually
from tests.support.system import System

pytestmark = pytest.mark.e2e


def services_in_trace(system: System, trace_id: str) -> dict[str, list[str]]:
    by_service: dict[str, list[str]] = {}
    for span in system.spans.get_finished_spans():
        if format(span.context.trace_id, "032x") == trace_id:
            service = str(span.resource.attributes["service.name"])
            by_service.setdefault(service, []).append(span.name)
    return by_service


async def test_question_is_one_trace_through_gateway_and_query_services(
    system: System, client: httpx.AsyncClient
) -> None:
    body = await ask(client, "What is the API rate limit per token?")
    trace = body["trace_id"]
    services = services_in_trace(system, trace)
    assert {"rag-gateway", "rag-router", "rag-retriever", "rag-generator", "rag-evaluator"} <= services.keys()
    assert any("rag.query.requested" in name for name in services["rag-router"])
    assert "hybrid_search" in services["rag-retriever"]
    hops = [name for names in services.values() for name in names if name.startswith("rag.")]
    assert not [n for n in hops if n.endswith((" create", " publish"))], "one span per hop, where it is consumed"
    for subject in ("rag.query.requested", "rag.query.routed", "rag.query.retrieved", "rag.query.drafted"):
        assert hops.count(f"{subject} process") == 1, (subject, sorted(hops))
    # The final answer's hop back is one span in the gateway, child of the evaluator's.
    assert services["rag-gateway"].count("rag.answer.*.*.final process") == 1, services["rag-gateway"]
    spans = {s.name: s for s in system.spans.get_finished_spans() if format(s.context.trace_id, "032x") == trace}
    final, evaluated = spans["rag.answer.*.*.final process"], spans["rag.query.drafted process"]
    assert final.parent is not None
    assert final.parent.span_id == evaluated.context.span_id


async def test_upload_is_traced_into_ingest(system: System, client: httpx.AsyncClient) -> None:
    response = await upload(client, "traced.md", b"# Traced\n\nThe heron count is 12.\n", "traces")
    assert response.status_code == 202
    traceparent_spans = [
        s
        for s in system.spans.get_finished_spans()
        if s.resource.attributes["service.name"] == "rag-gateway" and "/v1/documents" in s.name
    ]
    trace_id = format(traceparent_spans[-1].context.trace_id, "032x")
    for _ in range(400):
        if "rag-ingest" in services_in_trace(system, trace_id):
            break
        await client.get(f"/v1/documents/{response.json()['document_id']}")
    assert "rag-ingest" in services_in_trace(system, trace_id)


async def test_streamed_answer_has_no_span_per_token_and_no_request_id_in_span_names(
    system: System, client: httpx.AsyncClient
) -> None:
    response = await client.post("/v1/query/stream", json={"question": "What is the API rate limit per token?"})
    done = [line for line in response.text.splitlines() if line.startswith("data:")][-1]
    body = json.loads(done.removeprefix("data:"))
    tokens = response.text.count("event: token")
    assert tokens >= 2, "the answer streamed in several deltas"
    spans = [s for s in system.spans.get_finished_spans() if format(s.context.trace_id, "032x") == body["trace_id"]]
    names = [s.name for s in spans]
    assert not [n for n in names if body["request_id"] in n], names
    assert not [n for n in names if n.endswith(".delta process") or ".delta " in n], names
    assert not [n for n in names if n.endswith((" http send", " http receive"))], "no span per SSE chunk"
    assert len(spans) < 30, f"{len(spans)} spans for one question: {sorted(names)}"
    finals = [s for s in spans if s.name.startswith("rag.answer.*.*.final")]
    assert finals
    assert all(s.attributes and s.attributes.get("rag.request_id") == body["request_id"] for s in finals)


async def test_ingest_steps_are_child_spans_and_status_polls_start_no_trace(
    system: System, client: httpx.AsyncClient
) -> None:
    before = len(system.spans.get_finished_spans())
    document = await upload_and_wait(client, "spans.md", b"# Spans\n\nThe kestrel count is 31.\n", "traces")
    assert document["status"] == "indexed"
    for _ in range(3):
        await client.get(f"/v1/documents/{document['document_id']}")
    new = system.spans.get_finished_spans()[before:]
    assert not [s for s in new if s.name.startswith("GET /v1/documents")], "status polls are not traced"

    async def finished() -> dict[str, ReadableSpan]:
        return {s.name: s for s in system.spans.get_finished_spans()[before:]}

    spans = await eventually(finished, lambda names: "ingest.upsert" in names, timeout_s=10, what="ingest spans")
    index = spans["ingest.index"]
    for step in ("ingest.parse", "ingest.chunk", "ingest.embed", "ingest.upsert"):
        child = spans[step]
        assert child.parent is not None, step
        assert child.parent.span_id == index.context.span_id, step
        assert child.context.trace_id == index.context.trace_id
