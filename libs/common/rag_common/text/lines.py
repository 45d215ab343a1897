"""What one line of a document is (pure): a code fence, a Q:/A: line, a list item, a table row.

Ingest cuts documents into blocks by these patterns (``rag_ingest.parsing``) and the quotable
units are cut from the chunks by the same ones (``quotable``), so a line that ingest read as a
question, a fence or a table row is read the same way wherever its text goes next. The patterns
accept a line as it stands in a document (up to three spaces of indentation where Markdown
allows it) or stripped.
"""

from __future__ import annotations

import re

# A fenced code block opens and closes with three or more backticks or tildes (CommonMark), indented
# by at most three spaces. The run of fence characters is group 1.
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# "Q: ..." opens a question and "A: ..." its answer, as ingest writes FAQ blocks; "Q:value" is not one.
QUESTION_LINE = re.compile(r"^\s*Q:(?:\s+|$)")
ANSWER_LINE = re.compile(r"^\s*A:(?:\s+|$)")
# A list item's marker: "-", "*", "+", "1." / "1)" or "a." / "a)", then a space.
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,2}[.)]|[a-z][.)])\s+")
# A Markdown heading line ("## Setup") as it may stand inside a chunk's text.
HEADING_LINE = re.compile(r"^\s*#{1,6}\s")
# A thematic break ("---", "* * *"): a separator, not text.
THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
# The line under a pipe table's header row ("|:---|---:|").
TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
# A table row as ``table_row`` writes it: "Header: value; Header: value" (two cells or more).
_CELL = r"[^:;\n]{1,60}:\s[^;\n]*"
TABLE_ROW = re.compile(rf"^{_CELL}(?:;\s{_CELL})+$")


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes the code block that the fence ``fence`` opened.

    Args:
        line: A line inside the block.
        fence: The opening fence's run of backticks or tildes (``FENCE``'s group 1).

    Returns:
        True when the line holds only the fence's character, at least as many of it as opened it.
    """
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def table_row(headers: list[str], cells: list[str]) -> str:
    """One table row as text that still says what each value means read alone (see ``TABLE_ROW``).

    Args:
        headers: The column headers; a missing or empty one leaves its value bare.
        cells: The row's values; empty ones are left out.

    Returns:
        "Header: value; Header: value", e.g. "Plan: Pro; Price: $30".
    """
    parts = []
    for position, value in enumerate(cells):
        header = headers[position] if position < len(headers) else ""
        if value:
            parts.append(f"{header}: {value}" if header else value)
    return "; ".join(parts)
