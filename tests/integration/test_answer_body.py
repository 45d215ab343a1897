"""The answer body every HTTP consumer reads stays the recorded one.

A probe stands in for the router, the retriever and the generator: it answers every question with
one fixed drafted answer on ``rag.query.drafted``. The real evaluator flags it, the real gateway
shapes it. The body of ``POST /v1/query``, the ``done`` event of ``POST /v1/query/stream`` and the
``rag`` field of ``POST /v1/chat/completions`` (plain and streamed) all equal the body recorded in
``tests/support/recorded/answer_body.json`` (from the gateway before the final message became
parts), values that differ per request (ids, measured timings) aside.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from nats.aio.msg import Msg

from rag_common.store.docindex import DocumentIndex
from rag_common.store.documents import StatusStore
from rag_common.wire import subjects
from rag_common.wire.messages import Draft, Passage, Query, QueryDrafted, QueryRequested, Retrieval, Route, Usage
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.http import parse_sse
from tests.support.system import stack_options

pytestmark = pytest.mark.integration

RECORDED = Path(__file__).resolve().parents[1] / "support" / "recorded" / "answer_body.json"
QUESTION = {"question": "How much does the Pro plan cost per user per month?", "session_id": "s-body"}
CLIENT_ID = {"X-Request-ID": "client-body-1"}
# Stage timings the probe reports; the evaluator's and the gateway's own are measured.
PROBE_TIMINGS = {"router": 1.25, "retriever": 20.5, "generator": 3.0}

PASSAGES = [
    Passage(
        n=1,
        source="pricing.md",
        section="Plans",
        page=2,
        chunk_index=3,
        score=0.031,
        similarity=0.81,
        document_id="d-pricing",
        text="Plan: Pro; Price per user per month: $12; Max projects: 50",
    ),
    Passage(
        n=2,
        source="brochure.md",
        section="Pro",
        chunk_index=0,
        score=0.029,
        similarity=0.74,
        document_id="d-brochure",
        text="The Pro plan costs $15 per user per month and includes unlimited guests.",
    ),
]


def drafted_for(query: Query) -> QueryDrafted:
    """The one drafted answer the probe gives: cites [1], while [2] disagrees on the price."""
    return QueryDrafted(
        query=query,
        route=Route(tier="fast", model="extractive", score=2, signals={"words": 10}, reason="a short factual question"),
        timings_ms=dict(PROBE_TIMINGS),
        retrieval=Retrieval(
            rewritten_question="How much does the Pro plan cost per user per month?",
            threshold=0.3,
            passages=PASSAGES,
        ),
        draft=Draft(
            answer="The Pro plan costs $12 per user per month [1].",
            model="extractive",
            cited=[1],
            usage=Usage(input_tokens=120, output_tokens=14, cost_usd=0.0001),
        ),
    )


@pytest.fixture
async def gateway_url(tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path) -> AsyncIterator[str]:
    """The gateway and the evaluator on a real server, the probe drafting every question."""
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ("evaluator",)
    async with Stack(options) as stack:
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()

        async def draft(msg: Msg) -> None:
            requested = QueryRequested.model_validate_json(msg.data)
            await js.publish(subjects.QUERY_DRAFTED, drafted_for(requested.query).model_dump_json().encode())

        await nc.subscribe(subjects.QUERY_REQUESTED, cb=draft)
        # A document in "default", so the OpenAI-compatible API lists it as a model.
        index = DocumentIndex(js, await js.key_value(subjects.DOC_INDEX_BUCKET))
        await StatusStore(await js.key_value(subjects.DOC_STATUS_BUCKET), index).accept_upload(
            document_id="d-pricing",
            collection="default",
            source="pricing.md",
            version_hash="h1",
            size=10,
            request_id="upload-1",
            metadata={},
        )
        try:
            yield stack.base_url
        finally:
            await nc.close()


def normalised(body: dict[str, Any], request_id: str) -> dict[str, Any]:
    """The body with what differs per request replaced by placeholders, each checked first."""
    assert body["request_id"] == request_id
    assert re.fullmatch(r"[0-9a-f]{32}", body["trace_id"]), body["trace_id"]
    timings = body["timings_ms"]
    assert timings.keys() == {*PROBE_TIMINGS, "evaluator", "total"}
    assert all(isinstance(ms, float) and ms >= 0 for ms in timings.values())
    measured = {stage: "<ms>" for stage in ("evaluator", "total")}
    return body | {"request_id": "<request_id>", "trace_id": "<trace_id>", "timings_ms": timings | measured}


def recorded() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(RECORDED.read_text())
    return body


async def test_the_query_body_is_the_recorded_one(gateway_url: str) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        response = await client.post("/v1/query", json=QUESTION, headers=CLIENT_ID)
    assert response.status_code == 200, response.text
    body = response.json()
    assert normalised(body, response.headers["x-request-id"]) == recorded()
    # Keys in the recorded order too: a client printing the JSON sees it unchanged.
    assert list(body) == list(recorded())


async def test_the_streamed_done_event_is_the_recorded_body(gateway_url: str) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        response = await client.post("/v1/query/stream", json=QUESTION, headers=CLIENT_ID)
    assert response.status_code == 200, response.text
    events = parse_sse(response.text)
    assert [event for event, _ in events] == ["done"]
    assert normalised(events[0][1], response.headers["x-request-id"]) == recorded()


async def test_the_openai_rag_field_is_the_recorded_body(gateway_url: str) -> None:
    chat = {"model": "default", "messages": [{"role": "user", "content": QUESTION["question"]}]}
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as client:
        plain = await client.post("/v1/chat/completions", json=chat, headers=CLIENT_ID)
        streamed = await client.post("/v1/chat/completions", json=chat | {"stream": True}, headers=CLIENT_ID)
    assert plain.status_code == 200, plain.text
    completion = plain.json()
    # The chat has no session: the recorded body's session_id is the only difference.
    expected = recorded() | {"session_id": None}
    assert completion["choices"][0]["message"]["content"] == expected["answer"]
    assert completion["usage"] == {"prompt_tokens": 120, "completion_tokens": 14, "total_tokens": 134}
    assert normalised(completion["rag"], plain.headers["x-request-id"]) == expected

    data = [line[6:] for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    last = json.loads(data[-2])
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["usage"]["total_tokens"] == 134
    assert normalised(last["rag"], streamed.headers["x-request-id"]) == expected
