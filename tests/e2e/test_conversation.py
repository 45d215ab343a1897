"""Conversation memory and answer flags through HTTP, as a user of the sample corpus sees them."""

from __future__ import annotations

import json
import logging
import uuid

import httpx
import pytest

from tests.support.http import ask
from tests.support.system import System

pytestmark = pytest.mark.e2e


def new_session() -> str:
    return f"e2e-{uuid.uuid4().hex[:12]}"


async def test_a_followup_answers_about_the_earlier_subject(client: httpx.AsyncClient) -> None:
    session = new_session()
    first = await ask(client, "What does the Business plan include?", session_id=session)
    assert first["rewritten_question"] is None
    assert first["session_id"] == session
    followup = await ask(client, "And how much does it cost?", session_id=session)
    assert followup["rewritten_question"] == "How much does the Business plan cost?"
    assert "$24" in followup["answer"]
    assert followup["flags"]["refused"] is False

    alone = await ask(client, "And how much does it cost?")
    assert alone["rewritten_question"] is None
    assert "$24" not in alone["answer"]


async def test_a_session_can_be_read_and_forgotten(client: httpx.AsyncClient) -> None:
    session = new_session()
    await ask(client, "What is the API rate limit?", session_id=session)
    await ask(client, "What happens if I go over it?", session_id=session)
    remembered = (await client.get(f"/v1/sessions/{session}")).json()
    assert remembered["collection"] == "default"
    assert [t["question"] for t in remembered["turns"]] == [
        "What is the API rate limit?",
        "What happens if I go over it?",
    ]
    assert remembered["turns"][1]["rewritten_question"] == "What happens if I go over the API rate limit?"

    assert (await client.delete(f"/v1/sessions/{session}")).status_code == 204
    gone = await client.get(f"/v1/sessions/{session}")
    assert gone.status_code == 404
    assert gone.json()["error"]["request_id"]
    again = await ask(client, "What happens if I go over it?", session_id=session)
    assert again["rewritten_question"] is None  # nothing remembered any more


async def test_a_session_of_another_collection_is_refused_and_leaks_nothing(client: httpx.AsyncClient) -> None:
    session = new_session()
    await ask(client, "What does the Business plan include?", session_id=session)
    crossed = await client.post(
        "/v1/query", json={"question": "And how much does it cost?", "session_id": session, "collection": "other-team"}
    )
    assert crossed.status_code == 409
    error = crossed.json()["error"]
    assert error["code"] == "session_collection_mismatch"
    assert error["request_id"]
    assert "Business" not in crossed.text


@pytest.mark.parametrize("session_id", ["a b", "x" * 129, "../other", ""])
async def test_a_bad_session_id_is_a_clear_error(client: httpx.AsyncClient, session_id: str) -> None:
    response = await client.post(
        "/v1/query", json={"question": "What is the API rate limit?", "session_id": session_id}
    )
    assert response.status_code == 422
    body = response.json()
    assert body["error"]["request_id"]
    assert "session_id" in response.text
    assert (await client.get("/v1/sessions/a%20b")).status_code == 422


async def test_a_failing_flag_is_logged_traced_and_explained(
    system: System, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rag.evaluator")
    body = await ask(client, "How much does the Pro plan cost per user per month?")
    assert body["flags"]["conflicting_sources"]
    assert body["flagged"]
    assert "disagree" in body["answer"]  # said in words, with both citations
    assert "$12" in body["answer"]
    assert "$15" in body["answer"]
    assert body["flag_details"]["conflicting_sources"]
    assert set(body["flags"]) == {
        "refused",
        "citation_invalid",
        "conflicting_sources",
        "ungrounded",
        "low_confidence",
        "injection_suspected",
        "terminology",
        "model_answer_rejected",
    }

    lines = [
        json.loads(r.getMessage().split(" ", 1)[1]) for r in caplog.records if r.getMessage().startswith("EVAL_FAIL")
    ]
    mine = [line for line in lines if line["request_id"] == body["request_id"]]
    assert {line["flag"] for line in mine} >= {"conflicting_sources"}
    assert all(line["trace_id"] == body["trace_id"] for line in mine)

    events = [
        event
        for span in system.spans.get_finished_spans()
        for event in span.events
        if event.name == "gen_ai.evaluation.result"
        and event.attributes is not None
        and event.attributes.get("gen_ai.response.id") == body["request_id"]
    ]
    assert {e.attributes["gen_ai.evaluation.name"] for e in events if e.attributes} >= {"conflicting_sources"}
    assert all(e.attributes and e.attributes["gen_ai.evaluation.score.label"] == "fail" for e in events)


async def test_an_off_topic_question_on_a_technical_corpus_is_refused(client: httpx.AsyncClient) -> None:
    body = await ask(client, "What is the stock price of Apple?")
    assert body["flags"]["refused"] is True
    assert body["answer"] == "I don't have that in the documents."
    assert body["citations"] == []
