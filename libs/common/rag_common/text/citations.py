"""How answers cite passages: ``[1]``, ``[1][3]`` and ``[1, 2]``.

One parser for the generator (which maps citations to passages) and the evaluator (which checks
them), so both always agree on what counts as a citation.
"""

from __future__ import annotations

import re

# A following "(" means a Markdown link such as "[1](url)", not a citation.
CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\](?!\()")


def cited_numbers(answer: str) -> list[int]:
    """Passage numbers an answer cites, in order of first appearance, each once."""
    seen: dict[int, None] = {}
    for match in CITATION.finditer(answer):
        for part in match.group(1).split(","):
            seen.setdefault(int(part), None)
    return list(seen)
