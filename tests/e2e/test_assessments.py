"""Assessments through the running system: blueprint in, checked paper out, exports, metrics."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from defusedxml import ElementTree
from fastapi import FastAPI

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.e2e.test_tracing import services_in_trace
from tests.support.gift import parse_gift
from tests.support.http import parse_sse, upload_and_wait
from tests.support.system import System, stack_options

pytestmark = pytest.mark.e2e

BILLING = b"""# Billing

## Plans

The Starter plan costs $8 per user per month and keeps 30 days of history.
The Pro plan costs $12 per user per month and keeps 90 days of history.
The Enterprise plan costs $25 per user per month and keeps 365 days of history.

## Refunds

A refund is a return of the unused part of a prepaid annual subscription.
Refunds are prorated because customers should only pay for the months they used.
Customers request a refund by contacting Northwind Support within 14 days of renewal.

## Invoices

An invoice is a monthly statement of seats, add-ons and taxes sent to the billing contact.
Invoices are emailed on the first day of the month so that finance teams can reconcile them early.
"""

CHAPTER = b"""# Chapter 2: Refunds and credits

## Refunds

A refund on a monthly plan is paid back to the card that was charged.
Refunds are sent within five working days because the bank needs time to settle them.

## Credits

A credit is an amount kept on the account for future invoices.
Credits expire after twelve months so that old balances do not build up.
"""

SECURITY = b"""# Security

## Encryption

Data at rest is encrypted with AES-256 keys that rotate every 90 days.
Single sign-on is a login method that lets staff use one identity provider for every tool.
Admins enforce two-factor authentication by turning it on in the Contoso Admin Console.

## Audit logs

An audit log is a record of every sign-in, export and permission change in the workspace.
Audit logs are kept for 400 days because regulated customers must show a year of history.
Auditors read the logs through the Fabrikam Reporting API using a read-only token.
"""


async def test_an_assessment_is_queued_built_checked_and_exported(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=120) as client:
        await upload_and_wait(client, "billing.md", BILLING)
        await upload_and_wait(client, "security.md", SECURITY)
        blueprint = {
            "collection": "default",
            "units": ["billing.md", "Security > Audit logs"],
            "counts": {"mcq": 2, "short": 2, "long": 1},
            "difficulty": "medium",
            "bloom_levels": ["remember", "understand"],
            "total_marks": 20,
            "seed": 7,
        }
        created = await client.post("/v1/assessments", json=blueprint)
        assert created.status_code == 202, created.text
        assessment_id = created.json()["id"]
        events = parse_sse((await client.get(f"/v1/assessments/{assessment_id}/events")).text)
        state = (await client.get(f"/v1/assessments/{assessment_id}")).json()
        gift = (await client.get(f"/v1/assessments/{assessment_id}/export", params={"format": "gift"})).text
        markdown = (await client.get(f"/v1/assessments/{assessment_id}/export", params={"format": "markdown"})).text
        moodle = await client.get(f"/v1/assessments/{assessment_id}/export", params={"format": "moodle"})
        registries = {t.service: t.registry for t in stack.telemetries}
        assert stack.server is not None
        app = stack.server.config.app
        assert isinstance(app, FastAPI)
        registries["gateway"] = app.state.gateway.telemetry.registry

    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "done", events[-1]
    assert "progress" in kinds
    assert state["status"] == "done", state
    questions = state["questions"]
    assert [q["kind"] for q in questions] == ["mcq", "mcq", "short", "short", "long"]
    assert sum(q["marks"] for q in questions) == 20
    assert state["units_met"] == {"billing.md": 3, "Security > Audit logs": 2}
    for q in questions:
        assert q["validation"]["valid"] is True, q
        assert q["citations"]
        assert q["citations"][0]["source"] in {"billing.md", "security.md"}
        assert q["citations"][0]["section"]
        assert q["bloom"] in {"remember", "understand"}
        if q["unit"] == "Security > Audit logs":
            assert q["citations"][0]["section"].endswith("Audit logs")
    for mcq in questions[:2]:
        assert len(mcq["options"]) == 4
        assert mcq["options"][mcq["answer_index"]] == mcq["answer"]
        quote = mcq["citations"][0]["quote"]
        assert mcq["answer"].lower() in quote.lower()  # a key opening its sentence loses the capital
        for i, option in enumerate(mcq["options"]):
            if i != mcq["answer_index"]:
                assert option not in quote
    parsed = parse_gift(gift)
    assert len(parsed) == 5
    assert [p.kind for p in parsed] == ["mcq", "mcq", "essay", "essay", "essay"]
    assert parsed[0].right == [questions[0]["answer"]]
    assert "## Answer key" in markdown
    assert state["summary"].startswith("As asked: 5 questions, 20 marks. Material: unit 'billing.md' holds ")
    # Two small documents: each unit's sentences and those the paper uses, and no room for another paper.
    material = {m["unit"]: m for m in state["material"]}
    assert set(material) == {"billing.md", "Security > Audit logs"}
    assert material["Security > Audit logs"]["used"] == len(
        {c["quote"] for q in questions if q["unit"] == "Security > Audit logs" for c in q["citations"]}
    )
    assert not material["billing.md"]["enough"]
    assert "Too little for a second, different paper from unit 'billing.md'" in state["summary"]
    assert moodle.headers["content-type"].startswith("application/xml")
    assert moodle.headers["content-disposition"].endswith('.xml"')
    quiz = ElementTree.fromstring(moodle.content)
    assert [q.get("type") for q in quiz.findall("question")][:2] == ["multichoice", "multichoice"]
    assert sum(float(q.findtext("defaultgrade") or 0) for q in quiz.findall("question")) == 20
    assert questions[0]["answer"] in markdown.split("## Answer key")[1]

    def sample(service: str, name: str, **labels: str) -> float | None:
        return registries[service].get_sample_value(name, labels)

    assert sample("gateway", "rag_assessments_total", outcome="started") == 1
    assert sample("evaluator", "rag_assessments_total", outcome="done") == 1
    assert sample("generator", "rag_assessment_questions_total", outcome="generated") >= 5  # type: ignore[operator]
    assert sample("generator", "rag_assessment_question_seconds_count", kind="mcq") >= 2  # type: ignore[operator]


async def test_bad_blueprints_get_clear_errors_with_a_request_id(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await upload_and_wait(client, "billing.md", BILLING)
        await upload_and_wait(client, "chapter2.md", CHAPTER)
        unknown = await client.post("/v1/assessments", json={"collection": "nope", "counts": {"mcq": 1}})
        zero = await client.post("/v1/assessments", json={"counts": {"mcq": 0}})
        many = await client.post("/v1/assessments", json={"counts": {"mcq": 90, "short": 20}})
        marks = await client.post("/v1/assessments", json={"counts": {"mcq": 5}, "total_marks": 2})
        missing = await client.get("/v1/assessments/0123456789abcdef")
        bad_unit = await client.post("/v1/assessments", json={"counts": {"mcq": 1}, "units": ["Nowhere > Else"]})
        failed = [e for e in parse_sse((await client.get(f"/v1/assessments/{bad_unit.json()['id']}/events")).text)]
        ambiguous = await client.post("/v1/assessments", json={"counts": {"mcq": 1}, "units": ["Refunds"]})
        refused = parse_sse((await client.get(f"/v1/assessments/{ambiguous.json()['id']}/events")).text)
        topic = await client.post("/v1/assessments", json={"counts": {"short": 1}, "units": ["Refunds and credits"]})
        found = parse_sse((await client.get(f"/v1/assessments/{topic.json()['id']}/events")).text)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "collection_not_found"
    assert zero.status_code == 422
    assert "at least one question" in zero.json()["error"]["message"]
    assert many.status_code == 422
    assert "at most 100" in many.json()["error"]["message"]
    assert marks.status_code == 422
    assert "total_marks" in marks.json()["error"]["message"]
    assert missing.status_code == 404
    for response in (unknown, zero, many, marks, missing):
        assert response.json()["error"]["request_id"] == response.headers["X-Request-ID"]
    assert failed[-1][0] == "error"
    assert "Nowhere > Else" in failed[-1][1]["message"]
    assert failed[-1][1]["request_id"] == bad_unit.json()["request_id"]
    # A name that fits two headings is answered with both, each written so that it names one.
    assert refused[-1][0] == "error"
    assert refused[-1][1]["message"].startswith("unit_ambiguous: unit 'Refunds' names 2 parts")
    assert (
        "'billing.md > Billing > Refunds'; 'chapter2.md > Chapter 2: Refunds and credits > Refunds'"
        in (refused[-1][1]["message"])
    )
    assert refused[-1][1]["request_id"] == ambiguous.json()["request_id"]
    # A chapter asked for by its topic, without "Chapter 2:", is found.
    assert found[-1][0] == "done", found[-1]
    assert {c["source"] for q in found[-1][1]["questions"] for c in q["citations"]} == {"chapter2.md"}


async def test_one_assessment_is_one_trace_across_the_services(system: System, client: httpx.AsyncClient) -> None:
    created = await client.post("/v1/assessments", json={"counts": {"mcq": 1, "short": 1}, "seed": 5})
    assessment_id = created.json()["id"]
    events = parse_sse((await client.get(f"/v1/assessments/{assessment_id}/events")).text)
    assert events[-1][0] == "done"
    trace_id = events[-1][1]["trace_id"]
    assert trace_id
    services = services_in_trace(system, trace_id)
    assert {"rag-gateway", "rag-retriever", "rag-generator", "rag-evaluator"} <= set(services), services
    names = {name for found in services.values() for name in found}
    assert {"assessment_retrieval", "assessment_generation", "assessment_validation"} <= names
