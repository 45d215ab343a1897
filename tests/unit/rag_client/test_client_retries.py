"""The client's retries: 429/5xx retried, Retry-After honoured, other errors surfaced at once."""

from __future__ import annotations

import httpx
import pytest

from rag_client.client import AsyncRagClient, RagClient
from rag_client.errors import RagError, retry_after_seconds

pytestmark = pytest.mark.unit

ANSWER = {
    "request_id": "r1",
    "answer": "Six hundred [1].",
    "model": "extractive",
    "citations": [{"n": 1, "source": "api.md", "section": "Rate limits", "text": "600 requests"}],
    "passages": [{"n": 1, "source": "api.md", "section": "Rate limits", "text": "600 requests"}],
    "route": {"tier": "fast"},
    "flags": {"refused": False},
    "flagged": False,
    "usage": {},
    "timings_ms": {"total": 12.0},
}


def scripted(*responses: httpx.Response) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.MockTransport(handler), seen


def error(status: int, code: str, **headers: str) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code} happened", "request_id": "abc"}}
    return httpx.Response(status, json=body, headers=headers)


def test_429_waits_what_retry_after_says_then_succeeds() -> None:
    transport, seen = scripted(error(429, "rate_limited", **{"Retry-After": "7"}), httpx.Response(200, json=ANSWER))
    waits: list[float] = []
    with RagClient("http://gw", transport=transport, sleep=waits.append) as client:
        answer = client.ask("rate limit?")
    assert answer.citations[0].source == "api.md"
    assert len(seen) == 2
    assert waits == [7.0]


def test_5xx_retried_with_backoff_until_attempts_run_out() -> None:
    transport, seen = scripted(*(error(503, "unavailable") for _ in range(3)))
    waits: list[float] = []
    with (
        RagClient("http://gw", transport=transport, sleep=waits.append, retries=2) as client,
        pytest.raises(RagError) as caught,
    ):
        client.ask("anything")
    assert caught.value.status == 503
    assert caught.value.code == "unavailable"
    assert len(seen) == 3
    assert len(waits) == 2
    assert all(0 < w <= 30 for w in waits)


def test_retry_after_is_capped() -> None:
    transport, _ = scripted(error(429, "rate_limited", **{"Retry-After": "3600"}), httpx.Response(200, json=ANSWER))
    waits: list[float] = []
    with RagClient("http://gw", transport=transport, sleep=waits.append, max_retry_wait_s=5) as client:
        client.ask("x")
    assert waits == [5]


def test_client_errors_are_not_retried() -> None:
    transport, seen = scripted(error(404, "document_not_found"))
    with (
        RagClient("http://gw", transport=transport, sleep=lambda _: None) as client,
        pytest.raises(RagError) as caught,
    ):
        client.document("nope")
    assert len(seen) == 1
    assert (caught.value.status, caught.value.code, caught.value.request_id) == (404, "document_not_found", "abc")


def test_api_key_is_sent_as_bearer() -> None:
    transport, seen = scripted(httpx.Response(200, json={"collections": []}))
    with RagClient("http://gw", api_key="s3cret", transport=transport) as client:
        assert client.collections() == []
    assert seen[0].headers["authorization"] == "Bearer s3cret"


async def test_async_client_retries_too() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return (
            error(502, "bad_gateway", **{"Retry-After": "1"}) if len(calls) == 1 else httpx.Response(200, json=ANSWER)
        )

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    async with AsyncRagClient("http://gw", transport=httpx.MockTransport(handler), sleep=fake_sleep) as client:
        answer = await client.ask("x")
    assert answer.answer == "Six hundred [1]."
    assert waits == [1.0]


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert retry_after_seconds("2.5") == 2.5
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None
