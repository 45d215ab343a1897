"""How the chosen units of an extractive answer are written out: whole, in their own Markdown (pure).

A reader trusts a quote that looks like its source. So each unit keeps its form:

- a sentence stays a sentence, cited before its stop ("... by default [1].");
- a list item is a bullet, under its lead-in ("The stream consists of three parts:");
- a table row is a row of a Markdown table under its header, never flattened into
  "field: description ..." prose;
- a code block is a fenced block under its lead-in, never a line of prose.

And a block comes with what makes it readable: a sentence that leads into a command brings the
command, a line of code brings the rest of its block, a lead-in never ends the answer alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from rag_common.text.quotable import KIND_CODE, KIND_ITEM, KIND_ROW, KIND_SENTENCE, Candidate

MAX_BLOCK_LINES = 8  # lines of one code block quoted together: a command and what it prints
MAX_LIST_ITEMS = 8
# A sentence that only presents the example after it ("Here's an example minimal file that ...",
# "... as follows."): without its block it says nothing.
_PRESENTS = re.compile(
    r"^(here(?:'s| is| are)|the following|below is|for (?:example|instance)|an example)\b"
    r"|\b(as follows|the following|below|like this|like so)[.:]?$",
    re.IGNORECASE,
)
_OPENER = {'"': '"', "”": "“", "’": "‘", "'": "'", ")": "(", "]": "["}


def cells(row: str) -> list[tuple[str, str]]:
    """A stored table row ("Field: MaxMsgSize; Version: 2.2.0") as its (header, value) cells."""
    pairs = [cell.partition(": ") for cell in row.split("; ")]
    return [(h.strip(), v.strip()) for h, sep, v in pairs if sep and h.strip()]


def block_of(unit: Candidate, candidates: Sequence[Candidate], kind: str, limit: int) -> list[Candidate]:
    """The run of units of ``kind`` around ``unit`` in its passage (consecutive positions), at most ``limit``."""
    same = {c.position: c for c in candidates if c.n == unit.n and c.kind == kind and c.context == unit.context}
    start = unit.position
    while start - 1 in same and unit.position - (start - 1) < limit:
        start -= 1
    run: list[Candidate] = []
    position = start
    while position in same and len(run) < limit:
        run.append(same[position])
        position += 1
    return run or [unit]


def following(unit: Candidate, candidates: Sequence[Candidate], kind: str, limit: int) -> list[Candidate]:
    """The units of ``kind`` that directly follow ``unit`` in its passage: the block it leads into."""
    after = {c.position: c for c in candidates if c.n == unit.n and c.kind == kind}
    run: list[Candidate] = []
    position = unit.position + 1
    while position in after and len(run) < limit:
        run.append(after[position])
        position += 1
    return run


def with_blocks(
    units: Sequence[Candidate],
    candidates: Sequence[Candidate],
    *,
    code: bool,
    whole_code: bool,
    every: Sequence[Candidate] = (),
) -> list[Candidate]:
    """The chosen units, each with the block that makes it whole.

    With ``whole_code`` (steps: the commands to run) a line of code comes with the rest of its
    block; without it a line is quoted alone (the ``key: value`` line that holds an asked port).
    A sentence that leads into a code block (the next unit of its passage) brings the block when
    ``code`` (the question asks for a command, a value or steps); a unit that ends on a colon
    brings the list or block it introduces, or is left out: an answer never stops on "... consists
    of three parts:". Nor on a sentence that only presents the block after it ("Here's an example
    file ...") when the block is not quoted (``every``: the passages' units, code included, when
    ``candidates`` leaves code out).
    """
    result: list[Candidate] = []
    presenting: list[Candidate] = []
    for unit in units:
        if unit in result:
            continue
        group = [unit]
        if unit.kind == KIND_CODE:
            group = block_of(unit, candidates, KIND_CODE, MAX_BLOCK_LINES) if whole_code else [unit]
        elif not code and _PRESENTS.search(unit.text.strip()) and following(unit, every or candidates, KIND_CODE, 1):
            presenting.append(unit)
            continue
        elif code or unit.text.rstrip().endswith(":"):
            block = following(unit, candidates, KIND_CODE, MAX_BLOCK_LINES) if code else []
            if not block and unit.text.rstrip().endswith(":"):
                block = following(unit, candidates, KIND_ITEM, MAX_LIST_ITEMS)
            if unit.text.rstrip().endswith(":") and not block:
                continue
            group = [unit, *block]
        result.extend(c for c in group if c not in result)
    return result or presenting


def cite(text: str, numbers: Sequence[int]) -> str:
    """The text with its citations before the closing punctuation: "... per month [1]." (and
    "[1][3]" when passage 3 says the same); a closing quote or bracket stays with its words."""
    cites = "".join(f"[{n}]" for n in sorted(set(numbers)))
    closing = re.search(r"([.!?:])([\"'”’)\]]*)$", text)
    if closing:
        stop, marks = closing.groups()
        head = text[: closing.start()].rstrip()
        kept = _balanced_closers(text[: closing.start()], marks)
        return f"{head}{kept} {cites}{stop}"
    return f"{text} {cites}"


def _balanced_closers(head: str, marks: str) -> str:
    """The closing marks after a unit's last stop that close something opened in ``head``."""
    kept = ""
    for mark in marks:
        opener = _OPENER[mark]
        if opener == mark:  # a straight quote closes one opened before it: an odd count so far
            opened = len(re.findall(rf"(?:^|(?<=[\s(\[]))\{mark}", head))
            closed = head.count(mark) - opened
        else:
            opened, closed = head.count(opener), head.count(mark)
            if mark == "’":  # the same sign is an apostrophe ("model’s")
                closed = 0
        if opened > closed:
            kept += mark
            head += mark
    return kept


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: Sequence[Candidate], numbers: Sequence[Sequence[int]], asked: Callable[[str], bool]) -> str:
    """Rows of one table under its header, each row's citation in its last cell.

    The first column names the row; of the others, those whose header the question asks about
    ("How much storage...": Storage) when there are any, else all of them.
    """
    header = [h for h, _ in cells(rows[0].text)]
    keep = [0, *(i for i in range(1, len(header)) if asked(header[i]))]
    keep = keep if len(keep) > 1 else list(range(len(header)))
    header = [header[i] for i in keep]
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for row, cited in zip(rows, numbers, strict=True):
        row_cells = cells(row.text)
        values = [_cell(row_cells[i][1]) if i < len(row_cells) else "" for i in keep]
        values[-1] = f"{values[-1]} " + "".join(f"[{n}]" for n in sorted(set(cited)))
        lines.append("| " + " | ".join(values) + " |")
    return "\n".join(lines)


def _code(lines: Sequence[Candidate], numbers: Sequence[int], after_sentence: bool) -> str:
    """A code block: one short line as a code span in its lead-in, more lines fenced under it."""
    first = lines[0]
    cites = "".join(f"[{n}]" for n in sorted(set(numbers)))
    if len(lines) == 1:
        span = f"`{first.text.replace('`', '')}`"
        return f"{first.intro} {span} {cites}" if first.intro else f"{span} {cites}"
    fence = "```"
    body = "\n".join(line.text for line in lines)
    while fence in body:
        fence += "`"
    # A block without a lead-in of its own is introduced by where it stands: "From “Evicting a peer” [1]:".
    where = first.context.strip()
    intro = (
        cite(first.intro, numbers)
        if first.intro
        else ""
        if after_sentence
        else cite(f"From “{where}”:", numbers)
        if where
        else cites
    )
    return "\n".join(part for part in (intro, fence, body, fence) if part)


def _same_table(a: Candidate, b: Candidate) -> bool:
    return a.n == b.n and [h for h, _ in cells(a.text)] == [h for h, _ in cells(b.text)]


def render(
    units: Sequence[Candidate],
    also: Mapping[int, Sequence[int]],
    readable: Mapping[int, str],
    asked_column: Callable[[str], bool] = lambda header: False,
) -> str:
    """The answer's Markdown: sentences as a paragraph, items as a list under their lead-in,
    rows as a table, code fenced. ``also`` holds, per unit index, further passages saying the
    same; ``readable`` a unit's text as quoted when it differs from its own (a card's name);
    ``asked_column`` tells a table column the question asks about."""
    pieces: list[str] = []
    i = 0
    while i < len(units):
        unit = units[i]
        j = i + 1
        numbers = [[units[k].n, *also.get(k, ())] for k in range(len(units))]
        if unit.kind == KIND_ROW and len(cells(unit.text)) >= 2:
            while j < len(units) and units[j].kind == KIND_ROW and _same_table(unit, units[j]):
                j += 1
            pieces.append(_table(units[i:j], numbers[i:j], asked_column))
        elif unit.kind == KIND_CODE:
            while j < len(units) and units[j].kind == KIND_CODE and units[j].n == unit.n:
                j += 1
            after_sentence = i > 0 and units[i - 1].n == unit.n and units[i - 1].kind == KIND_SENTENCE
            pieces.append(_code(units[i:j], [n for k in range(i, j) for n in numbers[k]], after_sentence))
        elif unit.kind == KIND_ITEM:
            while j < len(units) and units[j].kind == KIND_ITEM:
                j += 1
            lead = unit.context.rsplit("  ", 1)[-1] if unit.context.endswith(":") else ""
            shown = any(lead and lead in units[k].text for k in range(i))
            lines = [lead] if lead and not shown else []
            lines += [f"- {cite(readable.get(k, units[k].text), numbers[k])}" for k in range(i, j)]
            pieces.append("\n".join(lines))
        else:
            while j < len(units) and units[j].kind not in (KIND_ROW, KIND_CODE, KIND_ITEM):
                j += 1
            pieces.append(" ".join(cite(readable.get(k, units[k].text), numbers[k]) for k in range(i, j)))
        i = j
    return "\n\n".join(pieces)


__all__ = ["KIND_SENTENCE", "block_of", "cells", "cite", "following", "render", "with_blocks"]
