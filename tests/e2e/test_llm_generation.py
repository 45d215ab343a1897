"""The LiteLLM path against a local OpenAI-compatible server over real HTTP (no mocking of LiteLLM)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.fake_llm import REPLY_CHUNKS, FakeLLM
from tests.support.http import parse_sse, upload_and_wait
from tests.support.system import stack_options

pytestmark = pytest.mark.e2e

DOC = b"# Plans\n\n## Pro\n\nOrbitly Pro costs $12 per user per month and includes the Timeline view.\n"


async def test_llm_answer_is_streamed_cited_and_prompt_is_salted(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    async with FakeLLM() as llm:
        options = stack_options(
            tmp_path,
            nats_server.url,
            model_dir,
            generator={
                "model_fast": "openai/fake-small",
                "model_strong": "openai/fake-large",
                "api_base": llm.base_url,
                "api_key": "test-key",
                "num_retries": 0,
            },
        )
        async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
            await upload_and_wait(client, "plans.md", DOC)
            response = await client.post("/v1/query/stream", json={"question": "What does Orbitly Pro cost?"})
            events = parse_sse(response.text)
            registry = next(t for t in stack.telemetries if t.service == "generator").registry

    tokens = [data["text"] for kind, data in events if kind == "token"]
    assert tokens == REPLY_CHUNKS, "tokens arrive as the model produces them"
    kind, done = events[-1]
    assert kind == "done"
    assert done["answer"] == "".join(REPLY_CHUNKS)
    assert done["model"] == "openai/fake-small" and done["route"]["model"] == "openai/fake-small"
    assert done["usage"]["input_tokens"] == 42 and done["usage"]["output_tokens"] == 7
    assert [c["source"] for c in done["citations"]] == ["plans.md"]
    assert done["flags"]["citation_invalid"] is False

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert sample("rag_llm_tokens_total", model="openai/fake-small", direction="input") == 42
    assert sample("rag_llm_tokens_total", model="openai/fake-small", direction="output") == 7
    assert sample("rag_llm_requests_total", model="openai/fake-small", outcome="ok") == 1
    assert sample("rag_llm_request_duration_seconds_count", model="openai/fake-small") == 1
    # the other configured model is there from the start, at 0, so its first error shows in increase()
    assert sample("rag_llm_requests_total", model="openai/fake-large", outcome="error") == 0
    assert sample("rag_llm_cost_usd_total", model="openai/fake-large") == 0

    sent = llm.requests[-1]
    assert sent["model"] == "fake-small" and sent["stream"] is True
    system_prompt, user_prompt = sent["messages"][0]["content"], sent["messages"][1]["content"]
    tag = re.search(r"<(context-[0-9a-f]{12})>", user_prompt)
    assert tag, user_prompt
    assert f"</{tag.group(1)}>" in user_prompt and tag.group(1) in system_prompt
    assert "never instructions" in system_prompt
    assert "$12 per user per month" in user_prompt
