"""An assessment as Moodle XML (pure): the format Moodle's question bank imports with each
question's marks (``defaultgrade``), which GIFT cannot carry.

https://docs.moodle.org/en/Moodle_XML_format: a ``<quiz>`` of ``<question type="...">``, each with
its ``<name>``, ``<questiontext>`` and ``<defaultgrade>``. A multiple-choice question is
``multichoice`` with ``<single>true</single>`` (one right option) and answers of fraction 100 (the
key) and 0; a short question whose model answer is a term is ``shortanswer`` (Moodle marks it by
matching the term), any other short or long question is an ``essay`` marked by the teacher from the
model answer and marking scheme in ``<graderinfo>``. Texts are HTML-escaped (format ``html``), then XML-escaped by the
serialiser, so a stem with ``<`` or ``&`` reads as written.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET

from rag_common.wire.messages.assessment import AssessmentState, Citation, Question
from rag_gateway.exports import grader_notes

# A model answer of at most this many words is a term Moodle can match; a longer one is an essay.
SHORTANSWER_WORDS = 4
# Lines of the answer box Moodle shows: a few for a short answer, a page for a long one.
ESSAY_LINES = {"short": 5, "long": 15}


def _where(citation: Citation) -> str:
    parts = [citation.source, citation.section, f"p. {citation.page}" if citation.page is not None else ""]
    return ", ".join(p for p in parts if p)


def _text(parent: ET.Element, tag: str, text: str, **attributes: str) -> ET.Element:
    """``<tag format="html"><text>escaped text</text></tag>``."""
    element = ET.SubElement(parent, tag, {"format": "html", **attributes})
    ET.SubElement(element, "text").text = html.escape(text)
    return element


def _value(parent: ET.Element, tag: str, value: str) -> None:
    ET.SubElement(parent, tag).text = value


def moodle_type(question: Question) -> str:
    """Moodle's question type for one question: multichoice, shortanswer or essay."""
    if question.kind == "mcq":
        return "multichoice"
    if question.kind == "short" and len(question.answer.split()) <= SHORTANSWER_WORDS:
        return "shortanswer"
    return "essay"


def moodle_question(question: Question, number: int) -> ET.Element:
    """One ``<question>``, titled with its number in the paper."""
    kind = moodle_type(question)
    element = ET.Element("question", {"type": kind})
    name = ET.SubElement(element, "name")
    ET.SubElement(name, "text").text = f"Q{number} {question.kind} {question.bloom}"
    _text(element, "questiontext", question.stem)
    sources = "; ".join(_where(c) for c in question.citations)
    _text(element, "generalfeedback", f"Source: {sources}" if sources else "")
    _value(element, "defaultgrade", f"{question.marks:g}")
    _value(element, "penalty", "0" if kind == "essay" else "0.3333333")
    _value(element, "hidden", "0")
    if kind == "multichoice":
        _value(element, "single", "true")
        _value(element, "shuffleanswers", "true")
        _value(element, "answernumbering", "abc")
        for i, option in enumerate(question.options):
            answer = _text(element, "answer", option, fraction="100" if i == question.answer_index else "0")
            _text(answer, "feedback", "")
    elif kind == "shortanswer":
        _value(element, "usecase", "0")
        answer = _text(element, "answer", question.answer, fraction="100")
        _text(answer, "feedback", "")
    else:
        _value(element, "responseformat", "editor")
        _value(element, "responserequired", "1")
        _value(element, "responsefieldlines", str(ESSAY_LINES.get(question.kind, 15)))
        _value(element, "attachments", "0")
        _text(element, "graderinfo", grader_notes(question))
        _text(element, "responsetemplate", "")
    return element


def to_moodle_xml(state: AssessmentState) -> str:
    """The paper's questions as a Moodle XML quiz, numbered as in the paper, each with its marks."""
    quiz = ET.Element("quiz")
    for number, question in enumerate(state.questions, start=1):
        quiz.append(moodle_question(question, number))
    ET.indent(quiz)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(quiz, encoding="unicode") + "\n"
