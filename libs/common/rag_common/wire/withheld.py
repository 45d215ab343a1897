"""Planted text shown to a reader as withheld: the passage stays visible, the payload does not.

Ingest marks instructions planted in a chunk (``injection_spans``); no stage quotes them. When an
answer's body lists such a passage (it raised ``injection_suspected``, or the answer cites one of
its other sentences), each marked range is replaced by ``WITHHELD`` so the reader sees where the
planted text was and why the answer is flagged, never the text itself.
"""

from __future__ import annotations

from collections.abc import Sequence

WITHHELD = "[withheld: text planted to instruct the assistant]"


def withhold_spans(text: str, spans: Sequence[Sequence[int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with every marked range replaced by ``WITHHELD``, and the notices' ranges in it.

    Overlapping or touching ranges make one notice; ranges past the text's end are cut to it.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted((max(0, int(s)), min(len(text), int(e))) for s, e, *_ in spans):
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    pieces: list[str] = []
    notices: list[tuple[int, int]] = []
    cursor, length = 0, 0
    for start, end in merged:
        kept = text[cursor:start]
        pieces += [kept, WITHHELD]
        length += len(kept)
        notices.append((length, length + len(WITHHELD)))
        length += len(WITHHELD)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), notices
