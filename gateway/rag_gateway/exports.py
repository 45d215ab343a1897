"""An assessment as a teacher takes it away: Markdown (the paper, then the answer key) and Moodle
GIFT (pure). A short or long answer's marking scheme goes with its model answer in every export:
the marker needs the points and their marks, not only the answer.

GIFT (https://docs.moodle.org/en/GIFT_format): one question a block, blocks apart by a blank line;
``::title::`` then the stem, then ``{...}`` with ``=right`` and ``~wrong`` options (MCQ) or an
empty ``{}`` (an essay question: short and long answers are marked by the teacher). The characters
``~ = # { } :`` and the backslash are escaped with a backslash wherever they are text.
"""

from __future__ import annotations

from rag_common.wire.messages.assessment import AssessmentState, Citation, Question

_GIFT_SPECIAL = "\\~=#{}:"


def gift_escape(text: str) -> str:
    """Text as GIFT reads it literally (one line: GIFT ends a question at a blank line)."""
    flat = " ".join(text.split())
    return "".join(f"\\{c}" if c in _GIFT_SPECIAL else c for c in flat)


def _where(citation: Citation) -> str:
    parts = [citation.source]
    if citation.section:
        parts.append(citation.section)
    if citation.page is not None:
        parts.append(f"p. {citation.page}")
    return ", ".join(parts)


def _marks(marks: float) -> str:
    return f"{marks:g} mark{'' if marks == 1 else 's'}"


def scheme_lines(question: Question) -> list[str]:
    """The marking scheme, a point a line: its marks, then what earns them."""
    return [f"{_marks(p.marks)}: {p.point}" for p in question.scheme]


def grader_notes(question: Question) -> str:
    """The model answer and the marking scheme as one paragraph (GIFT feedback, Moodle grader info)."""
    notes = f"Model answer: {question.answer}"
    if question.scheme:
        notes += " Marking scheme: " + "; ".join(scheme_lines(question)) + "."
    return notes


def gift_question(question: Question, number: int) -> str:
    """One GIFT question, titled with its number in the paper (questions dropped leave no gap)."""
    title = gift_escape(f"Q{number} {question.kind} {question.bloom}")
    stem = gift_escape(question.stem)
    source = gift_escape("; ".join(_where(c) for c in question.citations))
    comment = f"// source: {source}\n" if source else ""
    if question.kind == "mcq":
        options = " ".join(
            f"{'=' if i == question.answer_index else '~'}{gift_escape(option)}"
            for i, option in enumerate(question.options)
        )
        return f"{comment}::{title}::{stem} {{ {options} }}"
    feedback = gift_escape(grader_notes(question))
    return f"{comment}::{title}::[markdown]{stem} {{ ####{feedback} }}"


def to_gift(state: AssessmentState) -> str:
    """The questions in Moodle GIFT; the key is marked ``=``, model answers are general feedback."""
    return "\n\n".join(gift_question(q, n) for n, q in enumerate(state.questions, start=1)) + "\n"


def _title(state: AssessmentState) -> str:
    units = ", ".join(state.blueprint.units) or "whole collection"
    return f"Assessment {state.id[:8]}: {state.blueprint.collection} ({units})"


def to_markdown(state: AssessmentState) -> str:
    """The paper (stems, options, marks) then the answer key (keys, model answers, marking schemes,
    sources)."""
    total = sum(q.marks for q in state.questions)
    lines = [f"# {_title(state)}", "", f"Total marks: {total:g}. Difficulty: {state.blueprint.difficulty}.", ""]
    for number, q in enumerate(state.questions, start=1):
        lines.append(f"**{number}.** {q.stem} *({q.marks:g} mark{'s' if q.marks != 1 else ''}; {q.bloom})*")
        lines.append("")
        for i, option in enumerate(q.options):
            lines.append(f"   {chr(65 + i)}. {option}")
        if q.options:
            lines.append("")
    lines += ["---", "", "## Answer key", ""]
    for number, q in enumerate(state.questions, start=1):
        if q.kind == "mcq" and q.answer_index is not None:
            lines.append(f"**{number}.** {chr(65 + q.answer_index)}. {q.answer}")
        else:
            lines.append(f"**{number}.** {q.answer}")
        if q.scheme:
            lines.append("   - Marking scheme:")
            lines += [f"      - {line}" for line in scheme_lines(q)]
        for c in q.citations:
            lines.append(f"   - Source: {_where(c)}")
        lines.append("")
    return "\n".join(lines)
