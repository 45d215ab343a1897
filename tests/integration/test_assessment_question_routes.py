"""A teacher removes a question from a finished paper, or has it written again: the owner's only,
on a finished paper only, by its number in the paper; the exports follow a removal.

The gateway runs in this process on a real nats-server with auth on; no service runs, so the test
writes the finished paper into the bucket as the evaluator would, and reads the rewrite the gateway
queues for the retriever from the stream (the pipeline's side is in tests/e2e/test_assessment_rewrite.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import nats
import pytest
from defusedxml import ElementTree

from rag_common.wire import subjects
from rag_common.wire.messages.assessment import AssessmentRejected, AssessmentState, Citation, Question, Validation
from rag_devrun.natsserver import LocalNatsServer
from tests.support.gift import parse_gift
from tests.support.http import upload
from tests.support.inprocess import bearer, gateway_app, gateway_settings

pytestmark = pytest.mark.integration

COLLECTION = "course"
UNKNOWN = "0123456789abcdef0123456789abcdef"
CHECKED = Validation(valid=True, checks={"grounded": True})


def question(index: int, kind: str, stem: str, answer: str, marks: float, **extra: Any) -> Question:
    cited = [Citation(source="billing.md", section=f"Billing > Part {index}", quote=f"Sentence {index}.")]
    return Question.model_validate(
        {
            "index": index,
            "kind": kind,
            "stem": stem,
            "answer": answer,
            "bloom": "remember" if kind == "mcq" else "understand",
            "difficulty": "medium",
            "marks": marks,
            "unit": "billing.md",
            "citations": [c.model_dump() for c in cited],
            "validation": CHECKED.model_dump(),
            **extra,
        }
    )


# Blueprint question 3 was dropped: the paper numbers its four questions 1 to 4 all the same.
QUESTIONS = [
    question(0, "mcq", "Which plan keeps 90 days of history?", "Pro", 1, options=["Starter", "Pro", "Team", "Max"],
             answer_index=1),
    question(1, "mcq", "How much does the Starter plan cost per user?", "$8", 2, options=["$8", "$12", "$25", "$40"],
             answer_index=0),
    question(3, "short", "Why are refunds prorated?", "Customers pay only for the months they used.", 3),
    question(4, "long", "Explain how invoices reach the finance team.", "Invoices are emailed monthly.", 6),
]  # fmt: skip


@pytest.fixture
async def gateway(nats_server: LocalNatsServer) -> AsyncIterator[httpx.AsyncClient]:
    async with gateway_app(gateway_settings(nats_server.url, assessment_timeout_s=0.5)) as (_, client, _):
        made = await upload(client, "billing.md", b"# Billing\n\nThe Pro plan keeps 90 days of history.\n", COLLECTION)
        assert made.status_code == 202, made.text
        yield client


async def new_key(admin: httpx.AsyncClient, **fields: Any) -> dict[str, str]:
    response = await admin.post("/v1/keys", json={"name": "k", "collections": {COLLECTION: ["read"]}, **fields})
    assert response.status_code == 201, response.text
    return bearer(response.json()["key"])


async def queued(client: httpx.AsyncClient, key: dict[str, str]) -> str:
    created = await client.post(
        "/v1/assessments", json={"collection": COLLECTION, "counts": {"mcq": 3, "short": 1, "long": 1}}, headers=key
    )
    assert created.status_code == 202, created.text
    return str(created.json()["id"])


async def finish(nats_url: str, assessment_id: str) -> None:
    """The paper as the evaluator stores it when done."""
    connection = await nats.connect(nats_url)
    try:
        kv = await connection.jetstream().key_value(subjects.ASSESSMENTS_BUCKET)
        state = AssessmentState.model_validate_json((await kv.get(assessment_id)).value or b"")
        state.status, state.questions = "done", [q.model_copy(deep=True) for q in QUESTIONS]
        state.marks_met = sum(q.marks for q in QUESTIONS)
        await kv.put(assessment_id, state.model_dump_json().encode())
    finally:
        await connection.close()


async def finished(client: httpx.AsyncClient, nats_url: str, key: dict[str, str]) -> str:
    assessment_id = await queued(client, key)
    await finish(nats_url, assessment_id)
    return assessment_id


async def export(client: httpx.AsyncClient, assessment_id: str, key: dict[str, str], format: str) -> str:
    response = await client.get(f"/v1/assessments/{assessment_id}/export?format={format}", headers=key)
    assert response.status_code == 200, response.text
    return response.text


async def test_a_removed_question_leaves_every_export_renumbered_with_its_marks_off(
    gateway: httpx.AsyncClient, nats_server: LocalNatsServer
) -> None:
    teacher = await new_key(gateway, tenant="acme")
    assessment_id = await finished(gateway, nats_server.url, teacher)
    assert "Total marks: 12." in await export(gateway, assessment_id, teacher, "markdown")

    removed = await gateway.delete(f"/v1/assessments/{assessment_id}/questions/2", headers=teacher)

    assert removed.status_code == 200, removed.text
    paper = removed.json()
    kept = [QUESTIONS[0].stem, QUESTIONS[2].stem, QUESTIONS[3].stem]
    assert [q["stem"] for q in paper["questions"]] == kept
    assert paper["marks_met"] == 10
    assert paper["edits"] == [f"Removed question 2 (mcq, 2 marks): {QUESTIONS[1].stem}"]
    stored = await gateway.get(f"/v1/assessments/{assessment_id}", headers=teacher)
    assert [q["stem"] for q in stored.json()["questions"]] == kept

    as_json = AssessmentState.model_validate_json(await export(gateway, assessment_id, teacher, "json"))
    assert [q.stem for q in as_json.questions] == kept
    markdown = await export(gateway, assessment_id, teacher, "markdown")
    assert "Total marks: 10." in markdown
    assert QUESTIONS[1].stem not in markdown
    assert f"**2.** {QUESTIONS[2].stem}" in markdown
    assert f"**3.** {QUESTIONS[3].stem}" in markdown
    gift = parse_gift(await export(gateway, assessment_id, teacher, "gift"))
    assert [q.title.split()[0] for q in gift] == ["Q1", "Q2", "Q3"]
    assert QUESTIONS[1].stem.rstrip("?") not in await export(gateway, assessment_id, teacher, "gift")
    quiz = ElementTree.fromstring((await export(gateway, assessment_id, teacher, "moodle")).encode())
    names = [q.findtext("name/text") for q in quiz.findall("question")]
    assert names == ["Q1 mcq remember", "Q2 short understand", "Q3 long understand"]
    assert [q.findtext("defaultgrade") for q in quiz.findall("question")] == ["1", "3", "6"]

    again = await gateway.delete(f"/v1/assessments/{assessment_id}/questions/3", headers=teacher)
    assert [q["stem"] for q in again.json()["questions"]] == kept[:2]
    assert again.json()["edits"][-1] == f"Removed question 3 (long, 6 marks): {QUESTIONS[3].stem}"


async def test_another_owner_gets_the_404_of_an_unknown_id_and_changes_nothing(
    gateway: httpx.AsyncClient, nats_server: LocalNatsServer
) -> None:
    teacher = await new_key(gateway, tenant="acme")
    colleague = await new_key(gateway, tenant="acme")
    outsider = await new_key(gateway, tenant="globex")
    no_tenant = await new_key(gateway)
    assessment_id = await finished(gateway, nats_server.url, teacher)
    for other in (outsider, no_tenant):
        for method, suffix in (("DELETE", "/questions/1"), ("POST", "/questions/1/rewrite")):
            unknown = await gateway.request(method, f"/v1/assessments/{UNKNOWN}{suffix}", headers=other)
            theirs = await gateway.request(method, f"/v1/assessments/{assessment_id}{suffix}", headers=other)
            assert theirs.status_code == unknown.status_code == 404, theirs.text
            error, expected = theirs.json()["error"], unknown.json()["error"]
            assert error["code"] == expected["code"] == "assessment_not_found"
            assert error["message"] == expected["message"].replace(UNKNOWN, assessment_id)
            assert error["request_id"] == theirs.headers["x-request-id"]
    stored = await gateway.get(f"/v1/assessments/{assessment_id}", headers=teacher)
    assert len(stored.json()["questions"]) == 4
    mine = await gateway.delete(f"/v1/assessments/{assessment_id}/questions/4", headers=colleague)
    assert mine.status_code == 200, mine.text  # the tenant's paper: any of its keys edits it


async def test_a_number_outside_the_paper_is_a_422_and_a_paper_in_the_making_a_409(
    gateway: httpx.AsyncClient, nats_server: LocalNatsServer
) -> None:
    teacher = await new_key(gateway, tenant="acme")
    making = await queued(gateway, teacher)
    for method, suffix in (("DELETE", "/questions/1"), ("POST", "/questions/1/rewrite")):
        response = await gateway.request(method, f"/v1/assessments/{making}{suffix}", headers=teacher)
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "assessment_not_done"
        assert "is queued" in response.json()["error"]["message"]
    assessment_id = await finished(gateway, nats_server.url, teacher)
    for number in ("0", "5", "-1"):
        for method, suffix in (("DELETE", f"/questions/{number}"), ("POST", f"/questions/{number}/rewrite")):
            response = await gateway.request(method, f"/v1/assessments/{assessment_id}{suffix}", headers=teacher)
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert error["code"] == "question_not_in_paper"
            assert error["message"] == f"assessment {assessment_id} has questions 1 to 4; there is no question {number}"
            assert error["request_id"] == response.headers["x-request-id"]
    bad = await gateway.delete(f"/v1/assessments/{assessment_id}/questions/two", headers=teacher)
    assert bad.status_code == 422, bad.text
    assert bad.json()["error"]["code"] == "invalid_request"


async def test_a_rewrite_sends_the_question_back_to_the_pipeline_and_holds_the_paper(
    gateway: httpx.AsyncClient, nats_server: LocalNatsServer
) -> None:
    teacher = await new_key(gateway, tenant="acme")
    assessment_id = await finished(gateway, nats_server.url, teacher)

    accepted = await gateway.post(f"/v1/assessments/{assessment_id}/questions/3/rewrite", headers=teacher)

    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["id"] == assessment_id
    assert accepted.json()["status"] == "queued"
    assert accepted.headers["location"] == f"/v1/assessments/{assessment_id}"
    connection = await nats.connect(nats_server.url)
    try:
        sent = await connection.jetstream().get_last_msg(subjects.ASSESSMENT_STREAM, subjects.ASSESSMENT_REJECTED)
    finally:
        await connection.close()
    message = AssessmentRejected.model_validate_json(sent.data or b"")
    assert message.assessment.id == assessment_id
    assert message.assessment.request_id == accepted.json()["request_id"]
    assert message.assessment.rewrite == QUESTIONS[2].index
    redo = [item for item in message.items if item.question is None]
    assert len(redo) == 1
    assert len(message.items) == 4
    spec = redo[0].spec
    assert (spec.kind, spec.bloom, spec.unit, spec.marks) == ("short", "understand", "billing.md", 3)
    assert spec.topic == "billing.md > Billing > Part 3"
    # Not the old question again, nor a copy of another: the sentences of all of them are avoided.
    assert [q.stem for q in redo[0].rejected] == [QUESTIONS[n].stem for n in (2, 0, 1, 3)]
    # Until the pipeline puts the new question in, the paper is being made: no export, no other edit.
    state = (await gateway.get(f"/v1/assessments/{assessment_id}", headers=teacher)).json()
    assert state["status"] == "queued"
    assert len(state["questions"]) == 4
    assert (await gateway.get(f"/v1/assessments/{assessment_id}/export", headers=teacher)).status_code == 409
    second = await gateway.delete(f"/v1/assessments/{assessment_id}/questions/1", headers=teacher)
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "assessment_not_done"
