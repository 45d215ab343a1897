"""The evaluator's flags: the names an answer's ``Evaluation.flags`` and ``details`` are keyed by.

The names travel as plain strings (the JSON of ``rag.answer.final.v2`` and of ``POST /v1/query``
is ``{"refused": false, ...}``); ``Flag`` gives the code one spelling of each, checked by mypy, in
place of string literals a typo would turn into a flag that is never raised.

Each flag's words live here too (``WORDS``): the chat page shows a raised flag's ``notice`` (the
gateway fills them into the page it serves) and ``docs/FLAGS.md`` is generated from ``meaning``
(``python -m rag_common.wire.flags_doc``), so neither keeps a copy of its own that could drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FlagWords:
    """What a flag says to the two audiences that read it."""

    notice: str
    """The page's words when the flag is raised: for the person who asked, in plain language."""
    meaning: str
    """The reference's words: when the evaluator raises it and what ``flag_details`` holds."""


WORDS: Mapping[Flag, FlagWords] = {
    Flag.REFUSED: FlagWords(
        notice="The documents do not answer this.",
        meaning=(
            "The answer declines (the documents do not answer it, or an attack); the detail is the router's "
            "or the generator's reason."
        ),
    ),
    Flag.CITATION_INVALID: FlagWords(
        notice="Some citation numbers do not match a source.",
        meaning="A citation names no returned passage, or the answer cites none at all.",
    ),
    Flag.CONFLICTING_SOURCES: FlagWords(
        notice="Sources disagree on this.",
        meaning=(
            "Two documents give different values for a subject the question or the answer names as a whole "
            'word ("Pro" is not named by "projects"; planted text never counts). The details list each '
            "subject and the values per source."
        ),
    ),
    Flag.UNGROUNDED: FlagWords(
        notice="Part of this answer is weakly supported.",
        meaning=(
            "The weakest sentence: under half of its content words, or one of its numbers, are not in the "
            "passages it cites. The details hold the sentence, its support and the missing numbers."
        ),
    ),
    Flag.LOW_CONFIDENCE: FlagWords(
        notice="The documents match this question only loosely: check the sources.",
        meaning=(
            "The passages only just passed the collection's threshold, or the weakest sentence is only "
            "marginally supported."
        ),
    ),
    Flag.INJECTION_SUSPECTED: FlagWords(
        notice=(
            "A source holds text that tries to instruct the assistant (marked among the sources, that text "
            "withheld): read this answer with care."
        ),
        meaning=(
            "The question tries to override instructions, or a passage with text planted for the assistant "
            "was retrieved; the details name source, section and page, never the planted text."
        ),
    ),
    Flag.TERMINOLOGY: FlagWords(
        notice="This answer uses a term the collection names differently.",
        meaning=(
            "The answer uses a rival term of the collection profile's terminology; the details list "
            "`rival`, `preferred` and `found` for each."
        ),
    ),
    Flag.MODEL_ANSWER_REJECTED: FlagWords(
        notice="The model's answer failed its checks: this one is drawn from the documents instead.",
        meaning="A model's answer failed its checks and the extractive answer replaced it; the detail says why.",
    ),
}
if WORDS.keys() != set(Flag):
    raise RuntimeError(f"flags without words: {sorted(set(Flag) - WORDS.keys())}")
