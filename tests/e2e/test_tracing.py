"""One trace per question across every hop, checked with an in-memory span exporter."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import System
from tests.support.http import ask, upload

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
    services = services_in_trace(system, body["trace_id"])
    assert {"rag-gateway", "rag-router", "rag-retriever", "rag-generator", "rag-evaluator"} <= services.keys()
    assert any("rag.query.requested" in name for name in services["rag-router"])
    assert "hybrid_search" in services["rag-retriever"]


async def test_upload_is_traced_into_ingest(system: System, client: httpx.AsyncClient) -> None:
    response = await upload(client, "traced.md", b"# Traced\n\nThe heron count is 12.\n")
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
