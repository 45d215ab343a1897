"""What the Assessments tab says when the paper falls short, or the job fails: the teacher reads
the shortfall per question type, in marks, with why, and the request id of a refused unit.

The assessment API is answered by the test (``page.route``), so the page is shown a paper with a
known shortfall; the API itself is covered by ``tests/e2e/test_assessments.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.async_api import Page, Route, expect

from tests.support.system import System

pytestmark = pytest.mark.browser

ASSESSMENT_ID = "0123456789abcdef0123456789abcdef"
STATE: dict[str, Any] = {
    "id": ASSESSMENT_ID,
    "status": "done",
    "blueprint": {"collection": "default", "counts": {"mcq": 2, "short": 1}},
    "progress": {"stage": "done", "done": 4, "total": 4},
    "counts": {"requested": 3, "generated": 4, "valid": 1, "rejected": 1, "regenerated": 1, "dropped": 2},
    "questions": [
        {
            "index": 0,
            "kind": "mcq",
            "stem": "Which plan keeps 90 days of history?",
            "options": ["Starter", "Pro", "Enterprise", "Team"],
            "answer_index": 1,
            "answer": "Pro",
            "bloom": "remember",
            "difficulty": "medium",
            "marks": 1,
            "citations": [{"source": "billing.md", "section": "Billing > Plans"}],
        }
    ],
    "summary": "1 of 3 questions, 1 of 5 marks: missing 1 multiple-choice of 2 (1 mark), "
    "1 short-answer of 1 (3 marks).",
    "shortfall": [
        {
            "kind": "mcq",
            "requested": 2,
            "written": 1,
            "missing": 1,
            "marks_missing": 1,
            "reasons": ["question 2: asks the same as question 1 (the same stem)"],
        },
        {
            "kind": "short",
            "requested": 1,
            "written": 0,
            "missing": 1,
            "marks_missing": 3,
            "reasons": [
                "question 3: no short-answer question could be written from billing.md > Billing > Plans: "
                "its passages offered nothing to ask"
            ],
        },
    ],
}


def sse(*events: tuple[str, dict[str, Any]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


async def answer(page: Page, events: str, request_id: str = "req-1") -> None:
    async def created(route: Route) -> None:
        if route.request.method != "POST":
            await route.fallback()
            return
        body = {"id": ASSESSMENT_ID, "status": "queued", "request_id": request_id}
        await route.fulfill(status=202, content_type="application/json", body=json.dumps(body))

    async def stream(route: Route) -> None:
        await route.fulfill(status=200, content_type="text/event-stream", body=events)

    await page.route("**/v1/assessments", created)
    await page.route(f"**/v1/assessments/{ASSESSMENT_ID}/events", stream)


async def test_a_short_paper_shows_what_is_missing_per_type_in_marks_and_why(page: Page, system: System) -> None:
    progress = {key: STATE[key] for key in ("id", "status", "blueprint", "counts")}
    await answer(
        page,
        sse(("progress", {**progress, "progress": {"stage": "generating", "done": 1, "total": 3}}), ("done", STATE)),
    )
    await page.goto(f"{system.base_url}/assessments")
    await page.get_by_role("button", name="Make assessment").click()
    await expect(page.locator("#a-status")).to_have_text(
        "Done: 1 question. 1 of 3 questions, 1 of 5 marks: missing 1 multiple-choice of 2 (1 mark), "
        "1 short-answer of 1 (3 marks)."
    )
    missing = page.get_by_role("list", name="Missing from the paper")
    await expect(missing).to_be_visible()
    await expect(missing.locator(":scope > li > p")).to_have_text(
        ["1 of 2 multiple-choice missing (1 mark)", "1 of 1 short-answer missing (3 marks)"]
    )
    await expect(missing.locator(".why")).to_have_text(
        [
            "question 2: asks the same as question 1 (the same stem)",
            "question 3: no short-answer question could be written from billing.md > Billing > Plans: "
            "its passages offered nothing to ask",
        ]
    )
    await expect(page.get_by_role("link", name="Moodle XML")).to_have_attribute(
        "href", f"/v1/assessments/{ASSESSMENT_ID}/export?format=moodle"
    )


async def test_a_refused_unit_shows_its_candidates_and_the_request_id(page: Page, system: System) -> None:
    message = (
        "unit_ambiguous: unit 'Introduction' names 2 parts of collection 'default': "
        "'a.md > Introduction'; 'b.md > Introduction'. "
        "Ask for one of them as written here (or several, as several units)"
    )
    failed = {"code": "assessment_failed", "message": message, "id": ASSESSMENT_ID, "request_id": "req-7"}
    await answer(page, sse(("error", failed)), request_id="req-7")
    await page.goto(f"{system.base_url}/assessments")
    await page.get_by_role("button", name="Make assessment").click()
    await expect(page.locator("#a-status")).to_have_text(f"Failed: {message} (request req-7)")
