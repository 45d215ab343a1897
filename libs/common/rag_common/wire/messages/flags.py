"""The evaluator's flags: the names an answer's ``Evaluation.flags`` and ``details`` are keyed by.

The names travel as plain strings (the JSON of ``rag.answer.final.v2`` and of ``POST /v1/query``
is ``{"refused": false, ...}``); ``Flag`` gives the code one spelling of each, checked by mypy, in
place of string literals a typo would turn into a flag that is never raised.
"""

from __future__ import annotations

from enum import StrEnum


class Flag(StrEnum):
    """A check the evaluator runs on every answer.

    A ``StrEnum``: a member is its name, so ``flags[Flag.REFUSED]`` and ``flags["refused"]`` read
    the same entry and a member serialises as the bare name. The members are in the order an
    answer lists its flags (``Evaluation.flags`` is built in this order, and clients see it).
    """

    REFUSED = "refused"
    CITATION_INVALID = "citation_invalid"
    CONFLICTING_SOURCES = "conflicting_sources"
    UNGROUNDED = "ungrounded"
    LOW_CONFIDENCE = "low_confidence"
    INJECTION_SUSPECTED = "injection_suspected"
    TERMINOLOGY = "terminology"
    MODEL_ANSWER_REJECTED = "model_answer_rejected"


# Informational: declining to answer from insufficient context is correct behaviour, and a model's
# answer that failed its checks was replaced by the extractive one, which is judged on its own.
INFORMATIONAL_FLAGS = frozenset({Flag.REFUSED, Flag.MODEL_ANSWER_REJECTED})
# What ``Evaluation.flagged`` means: one of these is raised.
FAILING_FLAGS = frozenset(set(Flag) - INFORMATIONAL_FLAGS)
