"""The notice that opens an answer when sources disagree on the value asked about (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from rag_common.text.conflicts import names_subject
from rag_common.text.quotable import Candidate, mask_spans
from rag_common.wire.messages import Passage


class ConflictLike(Protocol):
    """Documents stating different values for one subject (the evaluator's ``Conflict`` fits)."""

    @property
    def subject(self) -> str: ...

    @property
    def values(self) -> Mapping[str, Sequence[str]]: ...


def conflict_sentences(
    question: str,
    chosen: Sequence[Candidate],
    passages: Sequence[Passage],
    conflicts: Sequence[ConflictLike],
    excluded: Mapping[int, Sequence[tuple[int, int]]],
) -> list[tuple[str, ConflictLike]]:
    """One sentence per relevant conflict, naming each source's value with its citation, with the conflict."""
    asked = f"{question} {' '.join(c.text for c in chosen)}"
    chosen_ns = [c.n for c in chosen]
    sentences: list[tuple[str, ConflictLike]] = []
    for conflict in conflicts:
        if not conflict.subject.split() or not names_subject(asked, conflict.subject.lower()):
            continue
        claims = []
        for source, values in conflict.values.items():
            if not values:
                continue
            n = _passage_for(source, values, passages, chosen_ns, excluded)
            if n is not None:
                claims.append(f"{source} says {_either(list(values))} [{n}]")
        if len(claims) >= 2:
            listed = ", ".join(claims[:-1]) + (" and " if len(claims) > 2 else ", while ") + claims[-1]
            sentences.append((f"The sources disagree on {_display(conflict.subject, question)}: {listed}.", conflict))
    return sentences


def restates(unit: Candidate, conflict: ConflictLike) -> bool:
    """Whether a unit states one of a conflict's values for its subject ("The Pro plan is $12 ...")."""
    values = {v for vs in conflict.values.values() for v in vs}
    return any(v in unit.text for v in values) and names_subject(unit.text.lower(), conflict.subject.lower())


def _passage_for(
    source: str,
    values: Sequence[str],
    passages: Sequence[Passage],
    preferred: Sequence[int],
    excluded: Mapping[int, Sequence[tuple[int, int]]],
) -> int | None:
    """The passage of ``source`` stating one of ``values`` outside excluded text, quoted ones first."""
    holding = [
        p
        for p in passages
        if p.source == source and any(v in mask_spans(p.text, excluded.get(p.n, ())) for v in values)
    ]
    if not holding:
        return None
    return min(holding, key=lambda p: (p.n not in preferred, passages.index(p))).n


def _either(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + f" or {values[-1]}"


def _display(subject: str, question: str) -> str:
    """The subject as the user wrote it ("Pro"), else as the conflict names it."""
    match = re.search(rf"(?<!\w){re.escape(subject)}(?!\w)", question, re.IGNORECASE)
    return match.group() if match else subject
