"""Comparisons: "difference between A and B", "A vs B" answered with a line on each side (pure).

A comparison asked of an extractive engine tends to get two sentences about whichever side the
passages mention most. A reader wants both sides, each in the documents' own words, side by side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rag_common.text.quotable import Candidate

_THE = r"(?:the |a |an )?"
_NAME = r"([\w/-]+(?: [\w/-]+){0,3}?)"  # a short name: up to four words
_END = r"(?:\?|$|,| in | when | for )"
_SIDES = (
    re.compile(rf"\bdifferences? between {_THE}(.+?) and {_THE}(.+?){_END}", re.I),
    re.compile(rf"\bcompare {_THE}(.+?) (?:and|with|to|vs\.?|versus) {_THE}(.+?){_END}", re.I),
    re.compile(rf"\bhow (?:does|do|is|are) {_THE}(.+?) differ from {_THE}(.+?){_END}", re.I),
    re.compile(rf"\b(?:use|pick|choose) {_THE}{_NAME} (?:vs\.?|versus|or) {_THE}(.+?){_END}", re.I),
    re.compile(rf"^{_THE}{_NAME} (?:vs\.?|versus) {_THE}(.+?){_END}", re.I),
)


def sides(question: str) -> tuple[str, str] | None:
    """The two things a comparison question names, as written ("pull consumers", "push consumers")."""
    for pattern in _SIDES:
        match = pattern.search(question.strip())
        if match:
            a, b = (part.strip(" ,.?") for part in match.groups())
            if a and b and a.lower() != b.lower():
                return a, b
    return None


def side_by_side(
    question: str,
    ranked: Sequence[Candidate],
    terms: Callable[[str], set[str]],
) -> list[tuple[str, Candidate]]:
    """For each side of a comparison, the best-ranked unit that names it and not the other side
    (or, failing that, the best that names it); [] when the question names no two sides or a
    side has no unit of its own."""
    named = sides(question)
    if named is None:
        return []
    wanted = [terms(side) for side in named]
    # What the two sides share ("consumers" of pull and push consumers) tells them apart from nothing.
    common = wanted[0] & wanted[1]
    own = [w - common or w for w in wanted]
    picked: list[tuple[str, Candidate]] = []
    for index, side in enumerate(named):
        other = own[1 - index]
        holding = [c for c in ranked if own[index] <= terms(f"{c.text} {c.title}")]
        alone = [c for c in holding if not other <= terms(c.text)]
        choice = next((c for c in alone or holding if all(c is not p for _, p in picked)), None)
        if choice is None:
            return []
        picked.append((side, choice))
    return picked
