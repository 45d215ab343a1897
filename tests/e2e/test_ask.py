"""Asking questions through HTTP, as a user would, against the sample corpus."""

from __future__ import annotations

import httpx
import pytest

from tests.support.http import ask, parse_sse, upload_and_wait
from tests.support.system import System

pytestmark = pytest.mark.e2e

ANSWER_FIELDS = {
    "request_id",
    "answer",
    "citations",
    "passages",
    "route",
    "flags",
    "flag_details",
    "flagged",
    "usage",
    "timings_ms",
    "trace_id",
}
PASSAGE_FIELDS = {"n", "source", "section", "page", "chunk_index", "score", "text"}


async def test_sample_corpus_is_fully_indexed(system: System, client: httpx.AsyncClient) -> None:
    assert len(system.corpus.statuses) >= 10
    assert system.corpus.failed == []
    listed = (await client.get("/v1/documents", params={"collection": "default"})).json()["documents"]
    sources = {d["source"] for d in listed}
    assert {"pricing.md", "faq.md", "sales-brochure-2025.pdf", "release-notes.txt"} <= sources
    assert all(d["chunks"] > 0 for d in listed if d["source"] in sources)


async def test_answer_cites_the_passage_with_the_fact(client: httpx.AsyncClient) -> None:
    body = await ask(client, "What is the API rate limit per token?")
    assert body.keys() >= ANSWER_FIELDS
    assert body["flags"]["refused"] is False
    assert "600" in body["answer"]
    assert body["model"] == "extractive"
    assert body["citations"], "an answer must cite passages"
    assert all(c.keys() >= PASSAGE_FIELDS for c in body["citations"])
    cited = next(c for c in body["citations"] if c["source"] == "api.md")
    assert f"[{cited['n']}]" in body["answer"]
    assert body["passages"][0]["n"] == 1
    assert set(body["timings_ms"]) >= {"router", "retriever", "generator", "evaluator", "total"}
    assert len(body["trace_id"]) == 32
    assert body["usage"] == {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}


async def test_pdf_passages_carry_their_page(client: httpx.AsyncClient) -> None:
    body = await ask(client, "What uptime does the Enterprise SLA promise?")
    pdf_passages = [p for p in body["passages"] if p["source"] == "enterprise-sla.pdf"]
    assert pdf_passages, body["passages"]
    assert all(isinstance(p["page"], int) and p["page"] >= 1 for p in pdf_passages)
    assert "99.95%" in body["answer"]


async def test_greeting_gets_canned_reply_without_retrieval(client: httpx.AsyncClient) -> None:
    body = await ask(client, "hi")
    assert body["route"]["tier"] == "greeting"
    assert body["model"] == "canned"
    assert body["passages"] == []
    assert "retriever" not in body["timings_ms"]
    assert "generator" not in body["timings_ms"]
    assert body["flagged"] is False


async def test_question_outside_the_documents_is_refused(client: httpx.AsyncClient) -> None:
    body = await ask(client, "What is the capital of Australia?")
    assert body["flags"]["refused"] is True
    assert body["answer"] == "I don't have that in the documents."
    assert body["citations"] == []
    assert "similar" in body["flag_details"]["refused"]


async def test_conflicting_prices_are_flagged(client: httpx.AsyncClient) -> None:
    body = await ask(client, "How much does the Pro plan cost per user per month?")
    assert body["flags"]["conflicting_sources"] is True
    assert body["flagged"] is True
    conflict = body["flag_details"]["conflicting_sources"][0]
    assert conflict["values"] == {"pricing.md": ["$12"], "sales-brochure-2025.pdf": ["$15"]}
    assert "$12" in body["answer"]
    assert "$15" in body["answer"]


async def test_route_explains_score_signals_and_tier(client: httpx.AsyncClient) -> None:
    body = await ask(
        client, "Why does my Timeline view fail to load, and how do I troubleshoot the Google Calendar sync?"
    )
    route = body["route"]
    assert route["tier"] == "strong"
    assert route["score"] >= 4
    assert {"analytical", "error"} <= set(route["signals"])
    assert "score" in route["reason"]
    simple = (await ask(client, "What is the API rate limit?"))["route"]
    assert simple["tier"] == "fast"
    assert simple["score"] < 4


async def test_stream_sends_tokens_then_done(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/query/stream", json={"question": "What is the API rate limit per token?"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "done"
    assert kinds.count("done") == 1
    assert kinds[:-1]
    assert set(kinds[:-1]) == {"token"}
    streamed = "".join(data["text"] for kind, data in events if kind == "token")
    done = events[-1][1]
    assert streamed == done["answer"]
    assert done["citations"]
    assert done["route"]["tier"] in {"fast", "strong"}


async def test_uploaded_markdown_is_indexed_and_cited(client: httpx.AsyncClient) -> None:
    doc = b"# Orbitly Moon Base\n\n## Oxygen policy\n\nThe Orbitly moon base keeps 17 days of oxygen in reserve.\n"
    status = await upload_and_wait(client, "moon-base.md", doc, collection="moon")
    assert status["status"] == "indexed"
    assert status["chunks"] >= 1
    body = await ask(client, "How many days of oxygen does the moon base keep in reserve?", collection="moon")
    assert any(c["source"] == "moon-base.md" and c["section"] == "Oxygen policy" for c in body["citations"])
    assert "17 days" in body["answer"]


async def test_collections_never_see_each_other(client: httpx.AsyncClient) -> None:
    doc = b"# Falcon project\n\nThe Falcon project codename for the secret warehouse is BLUEHERON.\n"
    await upload_and_wait(client, "falcon.md", doc, collection="team-b")
    inside = await ask(client, "What is the Falcon project warehouse codename?", collection="team-b")
    assert {p["source"] for p in inside["passages"]} == {"falcon.md"}
    outside = await ask(client, "What is the Falcon project warehouse codename?")
    assert "falcon.md" not in {p["source"] for p in outside["passages"]}
    assert "BLUEHERON" not in outside["answer"]
    only_b = (await client.get("/v1/documents", params={"collection": "team-b"})).json()["documents"]
    assert [d["source"] for d in only_b] == ["falcon.md"]
