"""The answer cache through HTTP, as two tenants' clients see it.

Every service and the gateway (authentication on) run on a private nats-server with the answer
cache on; the admin loads three documents of the sample corpus into ``orbitly``; two keys of two
tenants may read and write it. A second identical question is served from the cache (``cached``
true, the same answer); a question about another plan, a question in a conversation with earlier
turns and another tenant's question are not; an upload or a delete in the collection retires what
was cached.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from rag_common.transport.telemetry import ServiceTelemetry
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_gateway.deps import Gateway
from tests.support.http import parse_sse, upload, wait_for_status
from tests.support.polling import eventually
from tests.support.system import SAMPLE_CORPUS, stack_options

pytestmark = pytest.mark.e2e

ADMIN_KEY = "test-admin-key-cache-0123456789abcdefghij"
COLLECTION = "orbitly"
DOCUMENTS = ("pricing.md", "api.md", "security.md")
CACHE_ON = {"answer_cache": True}


@dataclass
class CacheSystem:
    stack: Stack
    acme: str  # a key of tenant acme
    globex: str  # a key of tenant globex

    def client(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.stack.base_url, timeout=60, headers={"Authorization": f"Bearer {key}"})

    def counter(self, service: str, name: str) -> float:
        """A counter of one service's /metrics (each service, the gateway too, has its own registry)."""
        telemetries = [*self.stack.telemetries, self.gateway_telemetry]
        for telemetry in telemetries:
            if telemetry.service == service:
                return telemetry.registry.get_sample_value(name) or 0.0
        raise AssertionError(f"no service {service}")

    @property
    def gateway_telemetry(self) -> ServiceTelemetry:
        assert self.stack.server is not None
        app = self.stack.server.config.app
        assert isinstance(app, FastAPI)
        gateway: Gateway = app.state.gateway
        return gateway.telemetry

    def hits(self) -> float:
        """Every hit: the gateway's (the same words) and the retriever's (normalised, or rephrased)."""
        name = "rag_answer_cache_hits_total"
        return self.counter("gateway", name) + self.counter("retriever", name)


@pytest.fixture(scope="module")
async def cache_system(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> AsyncIterator[CacheSystem]:
    data_dir = tmp_path_factory.mktemp("cache")
    server = LocalNatsServer(data_dir / "nats")
    server.start()
    gateway = {"auth": "on", "admin_key": ADMIN_KEY, "query_timeout_s": 30, **CACHE_ON}
    options = stack_options(data_dir, server.url, model_dir, gateway=gateway, retriever=CACHE_ON, evaluator=CACHE_ON)
    try:
        async with Stack(options) as stack:
            admin = httpx.AsyncClient(
                base_url=stack.base_url, timeout=60, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
            )
            async with admin:
                for name in DOCUMENTS:
                    response = await upload(admin, name, (SAMPLE_CORPUS / name).read_bytes(), COLLECTION)
                    assert response.status_code == 202, response.text
                    assert (await wait_for_status(admin, response.json()["document_id"]))["status"] == "indexed"
                keys = []
                for tenant in ("acme", "globex"):
                    scope = {"name": f"{tenant} bot", "tenant": tenant, "collections": {COLLECTION: ["read", "write"]}}
                    created = await admin.post("/v1/keys", json=scope)
                    assert created.status_code == 201, created.text
                    keys.append(created.json()["key"])
            yield CacheSystem(stack, *keys)
    finally:
        server.stop()


async def ask(client: httpx.AsyncClient, question: str, **fields: Any) -> dict[str, Any]:
    response = await client.post("/v1/query", json={"question": question, "collection": COLLECTION, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def unflagged(body: dict[str, Any]) -> None:
    raised = [name for name, on in body["flags"].items() if on]
    assert not raised, f"{body['answer']!r} raised {raised}: such an answer is never kept"


async def test_the_same_question_again_is_answered_from_the_cache(cache_system: CacheSystem) -> None:
    hits, stores = cache_system.hits(), cache_system.counter("evaluator", "rag_answer_cache_stores_total")
    misses = cache_system.counter("retriever", "rag_answer_cache_misses_total")
    async with cache_system.client(cache_system.acme) as acme:
        first = await ask(acme, "How much storage does the Business plan include?")
        unflagged(first)
        assert first["cached"] is False
        assert "1 TB" in first["answer"]
        second = await ask(acme, "How much storage does the Business plan include?")
        # Other case and spacing, no question mark: the same key, found after the router.
        normalised = await ask(acme, "how much storage does the business plan   include")
    assert second["cached"] is True
    assert second["answer"] == first["answer"]
    assert [c["source"] for c in second["citations"]] == [c["source"] for c in first["citations"]]
    assert second["request_id"] != first["request_id"]
    assert "generator" not in second["timings_ms"]  # the stages were skipped
    assert second["usage"]["output_tokens"] == 0
    assert normalised["cached"] is True
    assert normalised["answer"] == first["answer"]
    assert set(normalised["timings_ms"]) >= {"router", "retriever"}
    assert "generator" not in normalised["timings_ms"]
    assert cache_system.hits() == hits + 2
    assert cache_system.counter("retriever", "rag_answer_cache_misses_total") == misses + 1
    assert cache_system.counter("evaluator", "rag_answer_cache_stores_total") == stores + 1


async def test_a_streamed_question_gets_the_cached_answer_as_a_token_then_done(cache_system: CacheSystem) -> None:
    async with cache_system.client(cache_system.acme) as acme:
        first = await ask(acme, "What is the API rate limit?")
        unflagged(first)
        response = await acme.post(
            "/v1/query/stream", json={"question": "What is the API rate limit?", "collection": COLLECTION}
        )
    events = parse_sse(response.text)
    assert [event for event, _ in events] == ["token", "done"]
    assert events[0][1]["text"] == first["answer"]
    assert events[1][1]["cached"] is True
    assert events[1][1]["answer"] == first["answer"]


async def test_a_question_about_another_plan_is_not_served_the_cached_answer(cache_system: CacheSystem) -> None:
    async with cache_system.client(cache_system.acme) as acme:
        business = await ask(acme, "How much does the Business plan cost?")
        unflagged(business)
        assert (await ask(acme, "How much does the Business plan cost?"))["cached"] is True
        pro = await ask(acme, "How much does the Pro plan cost?")
        rephrased = await ask(acme, "What does the Business plan cost?")
    assert pro["cached"] is False
    assert "$12" in pro["answer"]
    assert "$24" not in pro["answer"].split("$12")[0]
    assert pro["answer"] != business["answer"]
    # Measured cosine 0.98 with the same anchor ("Business"): the same meaning, served.
    assert rephrased["cached"] is True
    assert rephrased["answer"] == business["answer"]


async def test_a_flagged_answer_is_not_kept(cache_system: CacheSystem) -> None:
    async with cache_system.client(cache_system.acme) as acme:
        first = await ask(acme, "Who won the football world cup in 1998?")
        second = await ask(acme, "Who won the football world cup in 1998?")
    assert first["flags"]["refused"] is True
    assert second["cached"] is False


async def test_a_conversation_with_earlier_turns_is_not_answered_from_the_cache(cache_system: CacheSystem) -> None:
    question = "Which encryption standard protects data at rest?"
    async with cache_system.client(cache_system.acme) as acme:
        unflagged(await ask(acme, question))
        assert (await ask(acme, question))["cached"] is True
        opening = await ask(acme, question, session_id="cache-conversation")
        follow_up = await ask(acme, question, session_id="cache-conversation")
        chat = await acme.post(
            "/v1/chat/completions",
            json={
                "model": COLLECTION,
                "messages": [
                    {"role": "user", "content": "How much does the Business plan cost?"},
                    {"role": "assistant", "content": "The Business plan is $24 per user per month."},
                    {"role": "user", "content": question},
                ],
            },
        )
    assert opening["cached"] is True  # no earlier turn yet: the question stands alone
    assert follow_up["cached"] is False
    assert chat.status_code == 200, chat.text
    assert chat.json()["rag"]["cached"] is False


async def test_another_tenant_never_gets_a_cached_answer_of_the_first(cache_system: CacheSystem) -> None:
    question = "How long are API tokens valid by default?"
    async with cache_system.client(cache_system.acme) as acme, cache_system.client(cache_system.globex) as globex:
        unflagged(await ask(acme, question))
        assert (await ask(acme, question))["cached"] is True
        first = await ask(globex, question)
        second = await ask(globex, question)
    assert first["cached"] is False
    assert second["cached"] is True  # its own


async def test_an_upload_or_a_delete_in_the_collection_retires_its_cached_answers(cache_system: CacheSystem) -> None:
    question = "Which plans include single sign-on?"
    invalidations = cache_system.counter("ingest", "rag_answer_cache_invalidations_total")
    async with cache_system.client(cache_system.acme) as acme:
        unflagged(await ask(acme, question))
        assert (await ask(acme, question))["cached"] is True
        content = (SAMPLE_CORPUS / "support-hours.txt").read_bytes()
        response = await upload(acme, "support-hours.txt", content, COLLECTION)
        assert response.status_code == 202, response.text
        document_id = response.json()["document_id"]
        assert (await wait_for_status(acme, document_id))["status"] == "indexed"
        after_upload = await ask(acme, question)
        assert (await ask(acme, question))["cached"] is True
        assert (await acme.delete(f"/v1/documents/{document_id}")).status_code == 202

        async def gone() -> int:
            return (await acme.get(f"/v1/documents/{document_id}")).status_code

        await eventually(gone, lambda status: status == 404, timeout_s=60, what="the document deleted")
        after_delete = await ask(acme, question)
    assert after_upload["cached"] is False
    assert after_delete["cached"] is False
    assert cache_system.counter("ingest", "rag_answer_cache_invalidations_total") >= invalidations + 2
