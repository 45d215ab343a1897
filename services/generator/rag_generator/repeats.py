"""Whether two quotable units say the same thing (pure): one fact is quoted once.

Compared as read: the same words, the same value of the same subject said two ways, or one unit
holding the other word for word.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag_common.text.quotable import KIND_CODE, KIND_ROW, Candidate
from rag_common.text.words import STOP_WORDS, content_words, normal_words
from rag_generator.asking import AnswerType, Asked
from rag_generator.relevance import term, terms

SAME_VALUE_SHARE = 0.75  # of the shorter unit's content words, for two units stating the same numbers
NEAR_DUPLICATE = 0.8  # token Jaccard above which two units with the same numbers say the same
MIN_CONTAINED_WORDS = 4  # a shorter unit held word for word in a longer one is the same sentence


def _near_duplicate(a: str, b: str) -> bool:
    """Same words (and the same numbers): quoting both would only repeat the answer. So does ``a``
    when every word of it that carries content is in ``b`` ("The Business plan is $24 per user per
    month" after "The Business plan costs $24 per user per month")."""
    if normal_words(a) == normal_words(b):
        return True
    ta, tb = set(normal_words(a).split()), set(normal_words(b).split())
    numbers_a, numbers_b = {t for t in ta if t[0].isdigit()}, {t for t in tb if t[0].isdigit()}
    if numbers_a != numbers_b:
        return False
    if len(ta & tb) >= NEAR_DUPLICATE * len(ta | tb) or ta - STOP_WORDS <= tb:
        return True
    # The same value of the same subject said two ways ("Pro plan: price per user per month $12"
    # and "The Pro plan is $12 per user per month"): one fact, however the words differ.
    content_a, content_b = {term(t) for t in ta - STOP_WORDS}, {term(t) for t in tb - STOP_WORDS}
    shorter = min(len(content_a), len(content_b))
    return bool(numbers_a) and shorter > 0 and len(content_a & content_b) >= SAME_VALUE_SHARE * shorter


# Two sentences run together without a space ("... long documents.Tool Use & Function Calling..."):
# of a unit that holds another whole, the shorter one reads better.
GLUED_STOP = re.compile(r"[a-z]{2}[.!?][A-Z][a-z]")


def contains(a: str, b: str) -> bool:
    """Whether ``a`` holds all of ``b`` word for word (and more): "PDF Upload & SummarizationLearn
    how to upload PDFs ... long documents.Tool Use & ..." holds "Learn how to upload PDFs ... long
    documents." Letters are compared without spaces, so a heading glued to a word still counts."""
    inner = _letters(b)
    return len(b.split()) >= MIN_CONTAINED_WORDS and len(inner) < len(_letters(a)) and inner in _letters(a)


@lru_cache(maxsize=4096)
def _letters(text: str) -> str:
    # Cached: each unit is compared with every chosen one, on both sides.
    return normal_words(text).replace(" ", "")


def same_fact(a: str, b: str) -> bool:
    """Two units as read say the same: near duplicates, or one holds the other word for word."""
    return _near_duplicate(a, b) or contains(a, b) or contains(b, a)


def add_unless_repeated(chosen: list[Candidate], unit: Candidate) -> list[Candidate]:
    """``chosen`` and ``unit``, unless one holds the other word for word: then the longer one, or
    the shorter when the longer is two sentences run together."""
    for i, c in enumerate(chosen):
        if contains(unit.text, c.text) or normal_words(unit.text) == normal_words(c.text):
            return chosen
        if contains(c.text, unit.text):
            return [*chosen[:i], unit, *chosen[i + 1 :]] if GLUED_STOP.search(c.text) else chosen
    return [*chosen, unit]


def as_read(candidate: Candidate, asked: Asked) -> str:
    """A unit as a reader should see it: a table row as a phrase, code in a code span."""
    if candidate.kind == KIND_ROW:
        return readable_row(candidate.text, asked)
    if candidate.kind == KIND_CODE:
        span = f"`{candidate.text.replace('`', '')}`"
        return f"{candidate.intro} {span}" if candidate.intro else span
    # A card's name says what the card is about: "GitHub prompting tutorial: An example-filled tutorial...".
    if candidate.title:
        return f"{candidate.title}: {candidate.text}"
    return candidate.text


def readable_row(row: str, asked: Asked) -> str:
    """ "Plan: Business; Price per user per month: $24; Storage: 1 TB" as "Business plan: price per
    user per month $24, storage 1 TB"; for a value question only the asked columns
    ("Business plan: storage 1 TB")."""
    cells = [cell.partition(": ") for cell in row.split("; ")]
    pairs = [(h.strip(), v.strip()) for h, sep, v in cells if sep and h.strip() and v.strip()]
    if len(pairs) < 2:
        return row
    (head, subject), rest = pairs[0], pairs[1:]
    named = f"{subject} {head.lower()}" if len(head.split()) == 1 and len(subject.split()) <= 3 else f"{head} {subject}"
    if asked.answer_type in (AnswerType.QUANTITY, AnswerType.VALUE, AnswerType.DATE, AnswerType.ENTITY):
        focus = {term(w) for w in content_words(asked.question)}
        picked = [(h, v) for h, v in rest if terms(h) & focus]
        rest = picked or rest
    described = ", ".join(f"{_lower_first(h)} {v}" for h, v in rest)
    return f"{named}: {described}."


def _lower_first(header: str) -> str:
    """ "Price per user" -> "price per user"; "API calls" and "SSO" keep their capitals."""
    first, _, others = header.partition(" ")
    if first.isupper() or any(c.isupper() for c in first[1:]):
        return header
    return f"{first.lower()} {others}".strip()
