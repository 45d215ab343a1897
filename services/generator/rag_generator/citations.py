"""Citation parsing and the extractive answer used when no language model is configured (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_common.citations import cited_numbers
from rag_common.messages import Passage

WORD = re.compile(r"[a-z0-9$€£%.]+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[*])|\n+|;\s+(?=[A-Z][\w ]{0,40}:)")
MARKUP = re.compile(r"\*\*|__|`")
STOP = frozenset(
    "a an and are as at be by can do does for from how i in is it my of on or our the this to was we what "
    "when where which who why will with you your there their about into than then".split()
)
EXTRACTIVE_PREFIX = "Extractive answer (no language model): the most relevant passages say:"


def citations_for(answer: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages an answer cites, each once, in the order it cites them."""
    by_n = {p.n: p for p in passages}
    return [by_n[n] for n in cited_numbers(answer) if n in by_n]


def _terms(text: str) -> set[str]:
    return {w[:6] for w in WORD.findall(text.lower()) if w not in STOP and len(w) > 1}


def split_sentences(text: str) -> list[str]:
    """Sentences, list items and table cells of a passage, whitespace-normalised, bullets removed."""
    parts = (
        MARKUP.sub("", re.sub(r"\s+", " ", s)).strip().lstrip("-*• ").strip() for s in SENTENCE_END.split(text) if s
    )
    return [p for p in parts if len(p) > 2]


def extractive_answer(question: str, passages: Sequence[Passage], max_sentences: int = 3) -> str:
    """Compose an answer from the passages' own sentences that share the most terms with the question.

    Sentences keep their passage's citation number, so every statement is traceable. Ties go to the
    better-ranked passage. Passages from up to three documents contribute, so a disagreement between
    documents stays visible instead of being averaged away.
    """
    wanted = _terms(question)
    scored: list[tuple[float, int, int, str, int]] = []
    for rank, passage in enumerate(passages):
        for position, sentence in enumerate(split_sentences(passage.text)):
            overlap = len(wanted & _terms(sentence))
            if overlap:
                score = overlap - 0.15 * rank - 0.01 * position
                scored.append((score, rank, position, sentence, passage.n))
    if not scored:
        best = passages[0]
        first = split_sentences(best.text)[:max_sentences]
        return f"{EXTRACTIVE_PREFIX}\n" + " ".join(f"{s} [{best.n}]" for s in first)
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    chosen = sorted(scored[:max_sentences], key=lambda item: (item[1], item[2]))
    lines = [f"- {sentence.rstrip()} [{n}]" for _, _, _, sentence, n in chosen]
    return f"{EXTRACTIVE_PREFIX}\n" + "\n".join(lines)
