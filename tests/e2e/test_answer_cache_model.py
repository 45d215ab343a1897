"""The answer cache when a concise model writes the answers, through HTTP.

A model that answers with the one passage sentence nearest the question (``FakeLLM(concise=True)``)
writes each answer; the whole system runs on a private nats-server with authentication and the
answer cache on and the sample corpus loaded. Each pair of ``samples/orbitly/cache_adversarial.jsonl``
that MiniLM places at the cache's threshold or above is asked by a tenant of its own (so no other
pair's kept answer interferes): its first question, then the other. A question of opposite
meaning in close words ("do not include", "below", "less than") is answered afresh by the model,
never served the cached answer of its opposite; a rephrasing is served from the cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.cache import ADVERSARIAL, Pair, load_pairs, score_pairs
from rag_common.store.answer_cache import DEFAULT_MIN_COSINE
from rag_common.store.embedding import get_embedder
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.fake_llm import FakeLLM
from tests.support.http import upload, wait_for_status
from tests.support.system import SAMPLE_CORPUS, stack_options

pytestmark = pytest.mark.e2e

ADMIN_KEY = "test-admin-key-cache-model-0123456789abcdef"
COLLECTION = "orbitly"
CACHE_ON = {"answer_cache": True}
MODEL = "openai/concise"


@dataclass
class ModelSystem:
    stack: Stack
    admin: httpx.AsyncClient
    llm: FakeLLM
    tenants: int = 0

    async def tenant(self) -> httpx.AsyncClient:
        """A client with a key of a tenant of its own: a cache no other question has used."""
        self.tenants += 1
        scope = {"name": f"reader {self.tenants}", "tenant": f"t{self.tenants}", "collections": {COLLECTION: ["read"]}}
        created = await self.admin.post("/v1/keys", json=scope)
        assert created.status_code == 201, created.text
        headers = {"Authorization": f"Bearer {created.json()['key']}"}
        return httpx.AsyncClient(base_url=self.stack.base_url, timeout=60, headers=headers)


@pytest.fixture(scope="module")
async def model_system(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> AsyncIterator[ModelSystem]:
    data_dir = tmp_path_factory.mktemp("cache-model")
    server = LocalNatsServer(data_dir / "nats")
    server.start()
    try:
        async with FakeLLM(concise=True) as llm:
            generator = {
                "model_fast": MODEL,
                "model_strong": MODEL,
                "api_base": llm.base_url,
                "api_key": "test-key",
                "num_retries": 0,
            }
            gateway = {"auth": "on", "admin_key": ADMIN_KEY, "query_timeout_s": 30, **CACHE_ON}
            options = stack_options(
                data_dir,
                server.url,
                model_dir,
                gateway=gateway,
                retriever=CACHE_ON,
                evaluator=CACHE_ON,
                generator=generator,
            )
            headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
            async with (
                Stack(options) as stack,
                httpx.AsyncClient(base_url=stack.base_url, timeout=60, headers=headers) as admin,
            ):
                accepted = []
                for path in sorted(SAMPLE_CORPUS.iterdir()):
                    response = await upload(admin, path.name, path.read_bytes(), COLLECTION)
                    assert response.status_code == 202, response.text
                    accepted.append(response.json()["document_id"])
                for document_id in accepted:
                    assert (await wait_for_status(admin, document_id))["status"] == "indexed"
                yield ModelSystem(stack, admin, llm)
    finally:
        server.stop()


def close_pairs(model_dir: Path, same: bool) -> list[Pair]:
    """The adversarial file's pairs of one kind that MiniLM places at the threshold or above."""
    pairs = [pair for pair in load_pairs(ADVERSARIAL) if pair.same is same]
    return [s.pair for s in score_pairs(get_embedder(model_dir), pairs) if s.cosine >= DEFAULT_MIN_COSINE]


async def ask(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    response = await client.post("/v1/query", json={"question": question, "collection": COLLECTION})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def unflagged(body: dict[str, Any]) -> bool:
    """Whether an answer may be kept: no flag raised (a flagged one is never kept, so its pair tests nothing)."""
    return not any(body["flags"].values())


async def test_no_question_of_opposite_meaning_is_served_its_opposite_s_model_answer(
    model_system: ModelSystem, model_dir: Path
) -> None:
    pairs = close_pairs(model_dir, same=False)
    kept, served = 0, []
    for pair in pairs:
        async with await model_system.tenant() as client:
            first = await ask(client, pair.kept)
            if not unflagged(first):
                continue
            assert first["model"] == MODEL
            kept += 1
            calls = len(model_system.llm.requests)
            other = await ask(client, pair.asked)
        if other["cached"] or len(model_system.llm.requests) == calls:
            served.append((pair.kept, pair.asked, first["answer"]))
    assert len(pairs) >= 30  # MiniLM alone would serve these
    assert kept >= 20, f"only {kept} of {len(pairs)} first answers were kept: the test would prove little"
    assert served == []


async def test_a_rephrasing_of_a_model_answer_is_served_from_the_cache(model_system: ModelSystem) -> None:
    async with await model_system.tenant() as client:
        first = await ask(client, "How much storage does the Business plan include?")
        assert unflagged(first), first["flags"]
        assert first["cached"] is False
        assert first["model"] == MODEL
        assert "1 TB" in first["answer"]
        calls = len(model_system.llm.requests)
        rephrased = await ask(client, "How much storage is included in the Business plan?")
        negated = await ask(client, "How much storage is not included in the Business plan?")
    assert rephrased["cached"] is True
    assert rephrased["answer"] == first["answer"]
    assert negated["cached"] is False
    assert len(model_system.llm.requests) == calls + 1  # the negated question only
