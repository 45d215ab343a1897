"""The reranker stage: reorders the fused candidates before the top_k are picked (pure, no I/O).

``Reranker`` is the interface a cross-encoder would implement; none can be installed offline here
(the PyPI packages that bundle one fetch their weights from a model hub at run time), so the
implementations are lexical. ``lexical`` adds to each candidate's fused relevance how many of the
question's content words its heading path and its text contain; ``heading`` adds how much of the
chunk's own heading the question covers. A heading that names what was asked ("Why use
examples?") is strong evidence the dense model cannot see in a 200-token chunk. Both are measured
in docs/EVALUATION.md and off by default (each loses on one of the sets)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from rag_common.embedding import STOPWORDS
from rag_common.vectors import Hit
from rag_retriever.ranking import keyword_query

_TOKEN = re.compile(r"[a-z0-9]+")


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        """The same hits, best first; ``score`` is the reranker's."""
        ...


def stem(word: str) -> str:
    """A crude suffix stripper: "examples" and "example", "using" and "use" meet."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    return {stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS}


class LexicalReranker:
    """``score = relevance + heading_weight·heading_overlap + text_weight·text_overlap``.

    ``relevance`` is the fused score scaled to 0..1 over the candidates; an overlap is the share of
    the question's words (stemmed, stop words dropped) found in the heading path with the file
    name, and of its content words (question words dropped too) found in the text.
    """

    name = "lexical"

    def __init__(self, heading_weight: float = 0.5, text_weight: float = 0.3) -> None:
        self.heading_weight = heading_weight
        self.text_weight = text_weight

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        asked = terms(question)  # headings are often phrased as questions: "Why use examples?"
        wanted = terms(keyword_query(question))
        high, low = max(h.score for h in hits), min(h.score for h in hits)
        span = (high - low) or 1.0
        scored = []
        for h in hits:
            relevance = (h.score - low) / span
            path = h.payload.get("section_path") or [h.payload.get("section", "")]
            if asked:
                heading = terms(" ".join([str(h.payload.get("source", "")), *map(str, path)]))
                relevance += self.heading_weight * len(asked & heading) / len(asked)
            if wanted:
                body = terms(str(h.payload.get("text", "")))
                relevance += self.text_weight * len(wanted & body) / len(wanted)
            scored.append(replace(h, score=relevance))
        return sorted(scored, key=lambda h: h.score, reverse=True)


class HeadingReranker:
    """``score = relevance + heading_weight·coverage``: how much of the chunk's own heading the
    question covers (its words, stemmed, stop words dropped), counted only when at least two of
    them are asked.

    Where the lexical reranker asks how many question words a heading holds (so a long heading
    path or file name collects words by chance), this asks whether the heading is what was asked:
    "Why use examples?" covers all of "Why use examples?" and half of "Crafting effective
    examples". Chunks without a heading keep their fused order relative to each other.
    """

    name = "heading"

    def __init__(self, heading_weight: float = 0.5) -> None:
        self.heading_weight = heading_weight

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        asked = terms(question)
        high, low = max(h.score for h in hits), min(h.score for h in hits)
        span = (high - low) or 1.0
        scored = []
        for h in hits:
            relevance = (h.score - low) / span
            heading = terms(str(h.payload.get("section") or ""))
            shared = len(asked & heading)
            if heading and shared >= 2:
                relevance += self.heading_weight * shared / len(heading)
            scored.append(replace(h, score=relevance))
        return sorted(scored, key=lambda h: h.score, reverse=True)


def make_reranker(name: str, heading_weight: float, text_weight: float) -> Reranker | None:
    """The reranker a setting names; ``off`` is none."""
    if name == "lexical":
        return LexicalReranker(heading_weight, text_weight)
    if name == "heading":
        return HeadingReranker(heading_weight)
    return None
