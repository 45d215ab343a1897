"""Word, PowerPoint and HTML course material through HTTP: indexed, and answers cite the section or slide.

The files are made by the tests (tests/support/office_files.py): a handbook with headings, a list
and a table; slides with bullets, a table and speaker notes; a lesson page inside navigation, a
cookie banner and a footer. Hostile files of each type end ``failed`` with their reason, and the
collection keeps answering.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import nats
import pytest

from rag_common.wire import subjects
from tests.support.http import ask, upload, upload_and_wait
from tests.support.office_files import course_docx, course_html, course_pptx, lying_bomb, with_macros, with_member
from tests.support.system import System

pytestmark = pytest.mark.e2e

COLLECTION = "course-material"


@pytest.fixture(scope="module")
async def course(system: System) -> dict[str, dict[str, Any]]:
    """The three files, indexed once for the module's questions."""
    statuses = {}
    async with httpx.AsyncClient(base_url=system.base_url, timeout=60) as client:
        for name, data in (
            ("glacier-handbook.docx", course_docx()),
            ("reefs.pptx", course_pptx()),
            ("lessons/moon.html", course_html()),
        ):
            statuses[name] = await upload_and_wait(client, name, data, COLLECTION)
    return statuses


async def dead_lettered_documents(system: System) -> set[str]:
    """The document ids of every ingest message in the dead-letter stream."""
    nc = await nats.connect(system.stack.nats_url)
    try:
        js = nc.jetstream()
        state = (await js.stream_info(subjects.DLQ_STREAM)).state
        documents = set()
        for sequence in range(state.first_seq, state.last_seq + 1):
            letter = json.loads((await js.get_msg(subjects.DLQ_STREAM, sequence)).data or b"{}")
            if letter.get("subject", "").startswith(subjects.INGEST_REQUESTED):
                try:
                    documents.add(json.loads(letter["payload"])["document_id"])
                except (ValueError, KeyError):  # a payload cut to the dead-letter size limit
                    continue
        return documents
    finally:
        await nc.close()


def cited(body: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """The citations of ``source`` that the answer's text refers to by number."""
    return [c for c in body["citations"] if c["source"] == source and f"[{c['n']}]" in body["answer"]]


async def test_word_powerpoint_and_html_files_are_indexed(
    course: dict[str, dict[str, Any]], client: httpx.AsyncClient
) -> None:
    assert {name: s["status"] for name, s in course.items()} == dict.fromkeys(course, "indexed")
    assert all(s["chunks"] > 0 for s in course.values())
    listed = (await client.get("/v1/documents", params={"collection": COLLECTION})).json()["documents"]
    assert {d["source"] for d in listed} == set(course)


@pytest.mark.parametrize(
    ("question", "fact", "section"),
    [
        ("Who is the instructor for ice core drilling?", "Tomasz Wielgosz", "Field station timetable"),
        ("What do you do after building a snow anchor in crevasse rescue?", "pulley", "Crevasse rescue"),
        ("How much of the final grade does the field report count for?", "forty percent", "Grading"),
    ],
)
async def test_word_answers_cite_the_section(
    course: dict[str, dict[str, Any]], client: httpx.AsyncClient, question: str, fact: str, section: str
) -> None:
    body = await ask(client, question, collection=COLLECTION)
    assert fact in body["answer"], body["answer"]
    citations = cited(body, "glacier-handbook.docx")
    assert citations, body["citations"]
    assert citations[0]["section"] == section, body["citations"]
    assert citations[0]["page"] is None


@pytest.mark.parametrize(
    ("question", "fact", "section", "slide"),
    [
        ("What is the bleaching threshold of the Red Sea?", "32.0", "Bleaching thresholds", 2),
        ("Which boat takes the class on the snorkelling trip?", "Nautilus", "Field trip", 3),
        ("What gives corals their colour?", "zooxanthellae", "Coral reef ecology", 1),
    ],
)
async def test_powerpoint_answers_cite_the_slide_by_title_and_number(
    course: dict[str, dict[str, Any]], client: httpx.AsyncClient, question: str, fact: str, section: str, slide: int
) -> None:
    body = await ask(client, question, collection=COLLECTION)
    assert fact in body["answer"], body["answer"]
    citations = cited(body, "reefs.pptx")
    assert citations, body["citations"]
    assert (citations[0]["section"], citations[0]["page"]) == (section, slide), body["citations"]


async def test_speaker_notes_are_marked_as_notes(course: dict[str, dict[str, Any]], client: httpx.AsyncClient) -> None:
    body = await ask(client, "Which boat takes the class on the snorkelling trip?", collection=COLLECTION)
    passage = next(p for p in body["passages"] if "Nautilus" in p["text"])
    assert "Speaker notes: The boat for the snorkelling trip is the Nautilus" in passage["text"]


@pytest.mark.parametrize(
    ("question", "fact", "section"),
    [
        ("What is the diameter of the crater Clavius?", "231 km", "Craters to find"),
        ("Which torch keeps night vision intact?", "red torch", "Equipment"),
    ],
)
async def test_html_answers_cite_the_heading_and_never_the_navigation(
    course: dict[str, dict[str, Any]], client: httpx.AsyncClient, question: str, fact: str, section: str
) -> None:
    body = await ask(client, question, collection=COLLECTION)
    assert fact in body["answer"], body["answer"]
    citations = cited(body, "lessons/moon.html")
    assert citations, body["citations"]
    assert citations[0]["section"] == section, body["citations"]
    passages = " ".join(p["text"] for p in body["passages"])
    assert "Observatory site" not in passages
    assert "cookies" not in passages
    assert "Copyright" not in passages


async def test_hostile_office_files_fail_with_their_reason_and_are_dead_lettered(
    system: System, course: dict[str, dict[str, Any]], client: httpx.AsyncClient
) -> None:
    word, slides = course_docx(), course_pptx()
    cases = [
        ("bomb.docx", with_member(word, "word/media/image9.png", 110 << 20), "zip bomb"),
        ("liar.pptx", lying_bomb(slides, "ppt/media/image9.png", 110 << 20), "Bad CRC-32"),
        ("macros.pptx", with_macros(slides, "ppt"), "contains macros"),
        ("cut.docx", word[: len(word) // 3], "corrupt Word archive"),
        ("menu.html", b"<html><body><nav><a href='/a'>Home</a> <a href='/b'>Courses</a></nav></body></html>", ""),
    ]
    failed_ids = set()
    for name, data, reason in cases:
        status = await upload_and_wait(client, name, data, COLLECTION)
        assert status["status"] == "failed", (name, status)
        assert status["error"].startswith("parse_failed: "), status["error"]
        assert reason in status["error"], status["error"]
        assert "Traceback" not in status["error"]
        assert "BytesIO" not in status["error"]
        failed_ids.add(status["document_id"])
    assert failed_ids <= await dead_lettered_documents(system)
    refused = await upload(client, "macros.docm", with_macros(word, "word"), COLLECTION)
    assert refused.status_code == 415
    assert ".docx" in refused.json()["error"]["message"]

    body = await ask(client, "Who is the instructor for ice core drilling?", collection=COLLECTION)
    assert "Tomasz Wielgosz" in body["answer"]
    health = await client.get("/readyz")
    assert health.status_code == 200, health.text
