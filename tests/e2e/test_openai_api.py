"""The OpenAI-compatible API, driven by the official ``openai`` client against the running gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest

from tests.support.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
async def oai(system: System) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=f"{system.base_url}/v1", api_key="not-needed", max_retries=0) as client:
        yield client


def rag_of(model: Any) -> dict[str, Any]:
    """The ``rag`` extension field the openai client keeps as an extra attribute."""
    extra = model.model_extra or {}
    rag: dict[str, Any] = extra["rag"]
    return rag


async def test_models_are_the_collections(oai: openai.AsyncOpenAI) -> None:
    models = await oai.models.list()
    ids = [m.id for m in models.data]
    assert "default" in ids
    assert all(m.object == "model" for m in models.data)
    assert (await oai.models.retrieve("default")).id == "default"


async def test_completion_answers_with_citations_in_rag(oai: openai.AsyncOpenAI) -> None:
    completion = await oai.chat.completions.create(
        model="default",
        messages=[
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "What is the API rate limit per token?"},
        ],
    )
    assert completion.object == "chat.completion"
    assert completion.model == "default"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert "600" in (choice.message.content or "")
    rag = rag_of(completion)
    assert "api.md" in {c["source"] for c in rag["citations"]}
    assert rag["flags"]["refused"] is False
    assert rag["route"]["tier"] in ("fast", "strong")
    assert completion.usage is not None
    assert completion.usage.total_tokens == 0


async def test_streaming_chunks_then_stop_with_rag(oai: openai.AsyncOpenAI) -> None:
    stream = await oai.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "What uptime does the Enterprise SLA promise?"}],
        stream=True,
    )
    pieces: list[str] = []
    finishes: list[str | None] = []
    last: Any = None
    async for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        pieces.append(chunk.choices[0].delta.content or "")
        finishes.append(chunk.choices[0].finish_reason)
        last = chunk
    text = "".join(pieces)
    assert "99.95%" in text
    assert finishes[-1] == "stop"
    assert finishes.count("stop") == 1
    rag = rag_of(last)
    assert rag["citations"]
    assert rag["flags"]["refused"] is False
    assert rag["answer"] == text


async def test_stream_ends_with_done_on_the_wire(system: System) -> None:
    body = {"model": "default", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    async with httpx.AsyncClient(base_url=system.base_url, timeout=60) as http:
        response = await http.post("/v1/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert '"finish_reason":"stop"' in data[-2]


async def test_earlier_messages_are_the_conversation(oai: openai.AsyncOpenAI) -> None:
    first_question = "How much does the Pro plan cost per user per month?"
    first = await oai.chat.completions.create(model="default", messages=[{"role": "user", "content": first_question}])
    follow_up = await oai.chat.completions.create(
        model="default",
        messages=[
            {"role": "user", "content": first_question},
            {"role": "assistant", "content": first.choices[0].message.content or ""},
            {"role": "user", "content": "And what does it cost per year?"},
        ],
    )
    rag = rag_of(follow_up)
    rewritten = rag["rewritten_question"]
    assert rewritten, rag
    assert "pro" in rewritten.lower(), rag
    alone = await oai.chat.completions.create(
        model="default", messages=[{"role": "user", "content": "And what does it cost per year?"}]
    )
    assert rag_of(alone)["rewritten_question"] is None


async def test_unknown_model_is_404_in_openai_shape(oai: openai.AsyncOpenAI, system: System) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await oai.chat.completions.create(model="no-such-collection", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 404
    async with httpx.AsyncClient(base_url=system.base_url, timeout=60) as http:
        response = await http.post(
            "/v1/chat/completions", json={"model": "nope", "messages": [{"role": "user", "content": "hi"}]}
        )
    error = response.json()["error"]
    assert {"message", "type", "param", "code"} <= error.keys()
    assert error["code"] == "model_not_found"
    assert error["param"] == "model"
    assert error["type"] == "invalid_request_error"


async def test_bad_request_is_400_in_openai_shape(oai: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await oai.chat.completions.create(model="default", messages=[{"role": "assistant", "content": "hi"}])
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["param"] == "messages"


async def test_a_huge_message_list_is_a_clear_400(oai: openai.AsyncOpenAI) -> None:
    history: list[Any] = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(400)]
    history.append({"role": "user", "content": "What is the API rate limit?"})
    with pytest.raises(openai.BadRequestError) as caught:
        await oai.chat.completions.create(model="default", messages=history)
    body = caught.value.body
    assert isinstance(body, dict)
    assert "200" in body["message"]
