"""The answer cache when a concise model writes the answers, through HTTP.

A model that answers with the one passage sentence nearest the question (``FakeLLM(concise=True)``)
writes each answer; the whole system runs on a private nats-server with the answer cache on and
the sample corpus's price list loaded. A question of opposite meaning in close words ("do not
include", "below", "less than") is answered afresh by the model, never served the cached answer
of its opposite; a rephrasing of the same question is served from the cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.fake_llm import FakeLLM
from tests.support.http import upload_and_wait
from tests.support.system import SAMPLE_CORPUS, stack_options

pytestmark = pytest.mark.e2e

CACHE_ON = {"answer_cache": True}
MODEL = "openai/concise"


@dataclass
class ModelSystem:
    client: httpx.AsyncClient
    llm: FakeLLM


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
            options = stack_options(
                data_dir,
                server.url,
                model_dir,
                gateway={"query_timeout_s": 30, **CACHE_ON},
                retriever=CACHE_ON,
                evaluator=CACHE_ON,
                generator=generator,
            )
            async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
                await upload_and_wait(client, "pricing.md", (SAMPLE_CORPUS / "pricing.md").read_bytes())
                yield ModelSystem(client, llm)
    finally:
        server.stop()


async def ask(system: ModelSystem, question: str) -> dict[str, Any]:
    response = await system.client.post("/v1/query", json={"question": question})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def kept(system: ModelSystem, question: str) -> dict[str, Any]:
    """Ask ``question`` twice: the model's answer, then the same from the cache."""
    first = await ask(system, question)
    raised = [name for name, on in first["flags"].items() if on]
    assert not raised, f"{first['answer']!r} raised {raised}: such an answer is never kept"
    assert first["cached"] is False
    assert first["model"] == MODEL
    again = await ask(system, question)
    assert again["cached"] is True
    assert again["answer"] == first["answer"]
    return first


@pytest.mark.parametrize(
    ("question", "opposite"),
    [
        # MiniLM cosines 0.98, 0.996 and 0.98: each was served its opposite's answer before.
        ("Which plans include single sign-on?", "Which plans don't include single sign-on?"),
        ("What happens to projects above the Free limit?", "What happens to projects below the Free limit?"),
        ("Which plans cost more than $12 per user?", "Which plans cost less than $12 per user?"),
    ],
)
async def test_a_question_of_opposite_meaning_is_answered_by_the_model_not_the_cache(
    model_system: ModelSystem, question: str, opposite: str
) -> None:
    await kept(model_system, question)
    calls = len(model_system.llm.requests)
    answered = await ask(model_system, opposite)
    assert answered["cached"] is False
    assert "generator" in answered["timings_ms"]
    assert len(model_system.llm.requests) == calls + 1  # the model was asked


async def test_a_rephrasing_of_a_model_answer_is_served_from_the_cache(model_system: ModelSystem) -> None:
    first = await kept(model_system, "How much storage does the Business plan include?")
    assert "1 TB" in first["answer"]
    calls = len(model_system.llm.requests)
    rephrased = await ask(model_system, "How much storage is included in the Business plan?")
    assert rephrased["cached"] is True
    assert rephrased["answer"] == first["answer"]
    assert len(model_system.llm.requests) == calls
