"""Line patterns (rag_common.text.lines): fences, Q:/A: lines, list items, table rows."""

from __future__ import annotations

import pytest

from rag_common.text.lines import (
    ANSWER_LINE,
    FENCE,
    HEADING_LINE,
    LIST_MARKER,
    QUESTION_LINE,
    TABLE_ROW,
    TABLE_SEPARATOR,
    THEMATIC_BREAK,
    closes_fence,
    table_row,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("line", "fence"), [("```", "```"), ("```python", "```"), ("   ~~~~ yaml", "~~~~")])
def test_a_fence_opens_with_three_backticks_or_tildes(line: str, fence: str) -> None:
    opened = FENCE.match(line)
    assert opened is not None
    assert opened.group(1) == fence


@pytest.mark.parametrize("line", ["``", "    ```", "text ```"])
def test_no_fence_when_too_short_indented_as_code_or_inside_text(line: str) -> None:
    assert FENCE.match(line) is None


def test_a_fence_closes_with_its_own_character_at_least_as_long() -> None:
    assert closes_fence("```", "```")
    assert closes_fence("  `````", "```")
    assert not closes_fence("~~~", "```")
    assert not closes_fence("```python", "```")
    assert not closes_fence("``", "```")


def test_question_and_answer_lines_need_a_space_after_the_colon() -> None:
    assert QUESTION_LINE.match("Q: Is there a trial?")
    assert QUESTION_LINE.match("  Q:")
    assert ANSWER_LINE.match("A: Yes, 14 days.")
    assert not QUESTION_LINE.match("Q:ueue depth")
    assert not ANSWER_LINE.match("A:B testing is on")
    assert QUESTION_LINE.sub("", "Q:   Is there a trial?") == "Is there a trial?"


@pytest.mark.parametrize("line", ["- item", "* item", "+ item", "1. step", "12) step", "a) option", "  - nested"])
def test_list_markers(line: str) -> None:
    assert LIST_MARKER.match(line)


@pytest.mark.parametrize("line", ["-item", "100. not a step", "A) capital", "e.g. this"])
def test_not_list_markers(line: str) -> None:
    assert LIST_MARKER.match(line) is None


def test_heading_lines_thematic_breaks_and_table_separators() -> None:
    assert HEADING_LINE.match("## Setup")
    assert not HEADING_LINE.match("#hashtag")
    assert THEMATIC_BREAK.match("---")
    assert THEMATIC_BREAK.match("* * *")
    assert not THEMATIC_BREAK.match("--")
    assert TABLE_SEPARATOR.match("|:-----|------:|---|")
    assert not TABLE_SEPARATOR.match("| a | b |")


def test_a_table_row_is_written_so_it_reads_alone_and_is_read_back_as_a_row() -> None:
    row = table_row(["Plan", "Price", "Seats"], ["Pro", "$30", ""])
    assert row == "Plan: Pro; Price: $30"
    assert TABLE_ROW.match(row)
    assert table_row(["Plan"], ["Pro", "extra"]) == "Plan: Pro; extra"


def test_prose_with_a_colon_is_no_table_row() -> None:
    assert TABLE_ROW.match("Note: the Pro plan costs $30 per seat.") is None
