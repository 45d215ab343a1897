"""The exports a teacher imports into Moodle: GIFT titles numbered as in the paper, and Moodle XML
that parses, with Moodle's question types and each question's marks."""

from __future__ import annotations

import pytest
from defusedxml import ElementTree

from rag_common.wire.messages.assessment import AssessmentState, Blueprint, Citation, Question
from rag_gateway.exports import to_gift
from rag_gateway.moodle import to_moodle_xml
from tests.support.gift import parse_gift

pytestmark = pytest.mark.unit

CITED = [Citation(source="billing.md", section="Billing > Plans", page=2, quote="The Pro plan costs $12 & more.")]


def question(index: int, kind: str, answer: str, marks: float, **extra: object) -> Question:
    return Question.model_validate(
        {
            "index": index,
            "kind": kind,
            "stem": f"What does question <{index}> & its plan cost?",
            "answer": answer,
            "bloom": "remember",
            "difficulty": "medium",
            "marks": marks,
            "citations": CITED,
            **extra,
        }
    )


# Questions 3 and 4 of the blueprint were dropped: the paper holds blueprint questions 1, 2, 5, 6, 7.
PAPER = AssessmentState(
    id="0123456789abcdef0123456789abcdef",
    status="done",
    blueprint=Blueprint(counts={"mcq": 4, "short": 2, "long": 1}),
    questions=[
        question(0, "mcq", "$12", 1, options=["$8", "$12", "$25", "$40"], answer_index=1),
        question(1, "mcq", "90 days", 1.5, options=["90 days", "30 days", "7 days", "400 days"], answer_index=0),
        question(4, "short", "Refund", 3),
        question(5, "short", "Refunds are prorated because customers pay only for the months they used.", 3),
        question(6, "long", "First, open Settings. Then choose a plan.", 6),
    ],
)


def test_gift_titles_are_numbered_as_in_the_paper() -> None:
    titles = [q.title for q in parse_gift(to_gift(PAPER))]
    assert [t.split()[0] for t in titles] == ["Q1", "Q2", "Q3", "Q4", "Q5"]


def test_moodle_xml_parses_with_moodle_types_marks_and_keys() -> None:
    text = to_moodle_xml(PAPER)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    quiz = ElementTree.fromstring(text.encode())
    assert quiz.tag == "quiz"
    questions = quiz.findall("question")
    assert [q.get("type") for q in questions] == ["multichoice", "multichoice", "shortanswer", "essay", "essay"]
    assert [q.findtext("name/text") for q in questions] == [
        "Q1 mcq remember",
        "Q2 mcq remember",
        "Q3 short remember",
        "Q4 short remember",
        "Q5 long remember",
    ]
    assert [q.findtext("defaultgrade") for q in questions] == ["1", "1.5", "3", "3", "6"]
    # The stem reads as written once Moodle renders the HTML: escaped, not taken for markup.
    assert questions[0].findtext("questiontext/text") == "What does question &lt;0&gt; &amp; its plan cost?"
    assert questions[0].find("questiontext").get("format") == "html"
    first = questions[0]
    assert first.findtext("single") == "true"
    answers = [(a.get("fraction"), a.findtext("text")) for a in first.findall("answer")]
    assert answers == [("0", "$8"), ("100", "$12"), ("0", "$25"), ("0", "$40")]
    assert "billing.md, Billing &gt; Plans, p. 2" in (first.findtext("generalfeedback/text") or "")
    term = questions[2]
    assert [(a.get("fraction"), a.findtext("text")) for a in term.findall("answer")] == [("100", "Refund")]
    essay = questions[4]
    assert essay.findtext("graderinfo/text") == "Model answer: First, open Settings. Then choose a plan."
    assert essay.findtext("responseformat") == "editor"
    assert essay.findall("answer") == []


def test_every_export_carries_a_long_answers_marking_scheme() -> None:
    from rag_common.wire.messages.assessment import MarkingPoint
    from rag_gateway.exports import to_markdown

    scheme = [
        MarkingPoint(point="Open Settings", marks=4, citation=CITED[0]),
        MarkingPoint(point="Choose a plan", marks=2, citation=CITED[0]),
    ]
    long = question(6, "long", "First, open Settings. Then choose a plan.", 6, scheme=scheme)
    paper = PAPER.model_copy(update={"questions": [*PAPER.questions[:4], long]})

    key = to_markdown(paper).split("## Answer key")[1]
    assert "   - Marking scheme:\n      - 4 marks: Open Settings\n      - 2 marks: Choose a plan\n" in key
    feedback = parse_gift(to_gift(paper))[4].feedback
    assert feedback.endswith("Marking scheme: 4 marks: Open Settings; 2 marks: Choose a plan.")
    quiz = ElementTree.fromstring(to_moodle_xml(paper).encode())
    assert (quiz.findall("question")[4].findtext("graderinfo/text") or "").endswith(
        "Marking scheme: 4 marks: Open Settings; 2 marks: Choose a plan."
    )
