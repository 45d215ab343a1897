"""Which passages an answer cites, and whether a model's answer is a refusal (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_common.text.citations import cited_numbers
from rag_common.wire.messages import Passage

# How models decline when told to answer only from the passages, beyond the exact text asked for.
_DECLINES = re.compile(
    r"^(?:i'?m sorry,?\s*(?:but\s*)?)?(?:i\s+(?:do not|don't|cannot|can't|could not|couldn't)\s+"
    r"(?:have|find|see|answer)|(?:the|these)\s+(?:provided\s+)?(?:documents|passages|sources)\s+"
    r"(?:do not|don't)\s+(?:contain|mention|say|cover|include)|there is no information)",
    re.IGNORECASE,
)


def citations_for(answer: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages an answer cites, each once, in the order it cites them."""
    by_n = {p.n: p for p in passages}
    return [by_n[n] for n in cited_numbers(answer) if n in by_n]


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s@.']", " ", text.lower().replace("’", "'")).split()).rstrip(".")


def is_refusal(answer: str, refusal: str) -> bool:
    """Whether a model's answer declines instead of answering: the refusal it was asked for, or its own.

    A refusal cites nothing; an answer that cites a passage states something from it, even when it
    starts with "I don't have the exact figure, but...".
    """
    text = answer.strip()
    if not text or cited_numbers(text):
        return False
    return _normal(refusal) in _normal(text) or bool(_DECLINES.match(text))
