"""Deterministic, explainable query-complexity score (the ClearPath design) and greeting detection.

Seven signals add points; a score at or above the threshold (4 by default) goes to the ``strong``
tier, anything below to ``fast``. Every signal that fired is reported with its points, so a user
can see why a question was routed where it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag_common.text.words import names
from rag_common.text.words import words as words_in

ANALYTICAL = ("how", "why", "compare", "explain", "difference", "troubleshoot", "analyze", "analyse")
ERROR_TERMS = (
    "not working",
    "broken",
    "error",
    "errors",
    "fail",
    "fails",
    "failed",
    "failing",
    "failure",
    "crash",
    "crashes",
    "crashed",
    "crashing",
    "bug",
    "bugs",
    "issue",
    "issues",
)
# "isn't loading", "won't open", "can't sync": a negated verb of use describes a malfunction too.
ERROR_PHRASE = re.compile(
    r"\b(?:isn't|is not|aren't|not|won't|doesn't|does not|can't|cannot|unable to|stopped)\s+"
    r"(?:load|open|start|sync|connect|sav|show|work|display|log|send|upload|import|export)\w*",
    re.IGNORECASE,
)
NEGATIONS = ("not", "can't", "cannot", "doesn't", "won't", "unable", "isn't", "don't", "didn't", "aren't", "wasn't")
SENSITIVE = ("pricing", "price", "prices", "security", "compliance", "billing", "enterprise", "sla", "slas")
GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|howdy|good (?:morning|afternoon|evening)|greetings|"
    r"thanks|thank you|thank you very much|thanks a lot|thx|ty|cheers|bye|goodbye)"
    r"(?:\s+(?:there|all|everyone|team|so much|a lot|again))*\s*[!.?]*\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Score:
    score: int
    signals: dict[str, int] = field(default_factory=dict)

    def tier(self, threshold: int) -> str:
        return "strong" if self.score >= threshold else "fast"

    def reason(self, threshold: int) -> str:
        fired = ", ".join(f"{name} +{points}" for name, points in self.signals.items()) or "no signal"
        comparison = ">=" if self.score >= threshold else "<"
        return f"score {self.score} {comparison} {threshold} ({fired})"


def is_greeting(text: str) -> bool:
    """Small talk that needs neither retrieval nor a model: "hi", "thanks a lot!", "hello there"."""
    return bool(GREETING.match(text))


def _has_any(words: set[str], terms: tuple[str, ...]) -> bool:
    return any(t in words for t in terms if " " not in t)


def score_query(text: str) -> Score:
    """Score a question with the seven signals; pure and deterministic."""
    lowered = text.lower().replace("’", "'")
    tokens = words_in(lowered)
    words = set(tokens)
    signals: dict[str, int] = {}
    if len(tokens) > 25:
        signals["length"] = 2
    elif len(tokens) > 15:
        signals["length"] = 1
    if _has_any(words, ANALYTICAL):
        signals["analytical"] = 2
    if _has_any(words, ERROR_TERMS) or "not working" in lowered or ERROR_PHRASE.search(lowered):
        signals["error"] = 1
    if _has_any(words, NEGATIONS):
        signals["negation"] = 1
    if len(names(text)) >= 2:
        signals["named_entities"] = 2
    if (
        text.count("?") >= 2
        or ";" in text
        or re.search(r"\w[^.?!]*\band\b\s+(?:how|what|why|can|does|do|is|are|i|we|it|the)\b", lowered)
    ):
        signals["compound"] = 1
    if _has_any(words, SENSITIVE):
        signals["sensitive"] = 1
    return Score(score=sum(signals.values()), signals=signals)
