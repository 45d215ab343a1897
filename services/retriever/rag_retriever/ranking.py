"""Ranking rules between the fused search hits and the passages (pure functions, no I/O): the
weighted score fusion of three rankings, the keyword query for the sparse (BM25) side, and putting
first the document a question names by its title. Measured in docs/EVALUATION.md; the rules
measured worse left the tree (docs/decisions/0300-decisions-in-force.md).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import TypeVar

from rag_common.store.contract import Hit
from rag_common.text.words import INDEX_STOP_WORDS, QUESTION_WORDS, words
from rag_common.wire.formats import FILE_WORDS

K = TypeVar("K", bound=Hashable)


def weighted_dbsf(sides: Sequence[Sequence[tuple[K, float]]], weights: Sequence[float]) -> list[tuple[K, float]]:
    """Distribution-based score fusion with a weight per side, best first.

    Each side's scores are mapped through its own mean ± 3 standard deviations (sample variance)
    to about 0..1 (one candidate, or all equal: 0.5), multiplied by the side's weight and summed
    per key; a key a side did not return gets nothing from it. With every weight 1 this is Qdrant's
    ``Fusion.DBSF`` (``qdrant_client.hybrid.fusion.distribution_based_score_fusion``), ties
    included: keys keep the order they were first seen in, side by side, when their sums are equal.
    Qdrant's own DBSF takes no weights, hence this for the second dense model (``RAG_SECOND_DENSE``).
    """
    if len(sides) != len(weights):
        raise ValueError(f"{len(sides)} sides but {len(weights)} weights")
    fused: dict[K, float] = {}
    for side, weight in zip(sides, weights, strict=True):
        if not side:
            continue
        for key, score in zip((k for k, _ in side), _dbsf_normalised([s for _, s in side]), strict=True):
            fused[key] = fused.get(key, 0.0) + weight * score
    return sorted(fused.items(), key=lambda item: item[1], reverse=True)


def _dbsf_normalised(scores: Sequence[float]) -> list[float]:
    if len(scores) == 1:
        return [0.5]
    mean = sum(scores) / len(scores)
    variance = sum((s - mean) ** 2 for s in scores) / (len(scores) - 1)
    if variance == 0:
        return [0.5] * len(scores)
    low, high = mean - 3 * variance**0.5, mean + 3 * variance**0.5
    return [(s - low) / (high - low) for s in scores]


# Words that ask rather than name what is asked about, for the sparse side: question words and a few
# requests. Fewer than ``REQUEST_WORDS``: "type", "name" and "kind" are what a search is about in
# "SOC 2 Type II", "the file name" or "delta type", and dropping them moved 20 of the 271 evaluation
# questions' keyword queries.
_ASKING = QUESTION_WORDS | frozenset(
    "please tell explain describe give list show use using used way ways some any".split()
)


def keyword_query(question: str) -> str:
    """The question's content words for the sparse side: stop words and question words dropped.

    BM25 already ignores stop words; dropping "how", "use", "way" and the like as well keeps the
    sparse ranking on the subject of the question rather than on its phrasing.
    """
    kept = [w for w in words(question) if w.lower() not in INDEX_STOP_WORDS and w.lower() not in _ASKING]
    return " ".join(kept) or question


_TITLE_SPLIT = re.compile(r"[^a-z0-9]+")


def title_words(source: str) -> frozenset[str]:
    """The words of a source's file name ("Northwind_Health_Plus_Benefits_Details.pdf" → northwind,
    health, plus, benefits, details), folders, extension, numbers and stop words left out."""
    stem = source.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
    return frozenset(
        w for w in _TITLE_SPLIT.split(stem) if len(w) > 1 and not w.isdigit() and w not in INDEX_STOP_WORDS
    )


_CUES = frozenset("according in from under by per within for with of".split())
_ARTICLES = frozenset("the our your a an this that".split())


def named_source(question: str, sources: Sequence[str]) -> str | None:
    """The one source the question names by its title after a preposition ("according to the
    community forum", "with Northwind Health Plus", "in the Northwind Standard Benefits Details"),
    or None.

    After each cue word (and an article), the run of consecutive words that are title words of a
    source counts for that source. A source is named when that run holds at least half of its title
    words and at least three of them, or two after "according to"; and no other source's run is as
    long. So "Northwind" alone names neither Northwind booklet; a topic that is also a file name
    names nothing without a cue ("why is the timeline view broken"), nor after a plain preposition
    when it is short ("streaming with tool use", "available in Claude.ai": measured, on
    anthropic-docs such topics are what is asked about, not where to look).
    """
    words = [w for w in _TITLE_SPLIT.split(question.lower()) if w]
    starts: list[tuple[int, int]] = []  # (first word after the cue, title words the run needs)
    for i, word in enumerate(words):
        if word in _CUES:
            j, needed = i + 1, 3
            if word == "according" and j < len(words) and words[j] == "to":
                j, needed = j + 1, 2
            while j < len(words) and words[j] in _ARTICLES:
                j += 1
            starts.append((j, needed))
    if not starts:
        return None
    best: str | None = None
    best_count, tie = 0, False
    for source in dict.fromkeys(sources):
        title = title_words(source)
        count = 0
        for j, needed in starts:
            seen: set[str] = set()
            while j < len(words) and (words[j] in title or words[j] in FILE_WORDS or words[j].isdigit()):
                if words[j] in title:
                    seen.add(words[j])
                j += 1
            if len(seen) >= needed and len(seen) * 2 >= len(title):
                count = max(count, len(seen))
        if not count:
            continue
        if count > best_count:
            best, best_count, tie = source, count, False
        elif count == best_count:
            tie = True
    return None if tie else best


def prefer_named_source(question: str, hits: Sequence[Hit]) -> list[Hit]:
    """The candidates of the source the question names first (in their order), then the rest.

    "What does the Pro plan cost according to the community forum?" is about what the forum says:
    the pricing page, however similar, must not outrank the forum's passages.
    """
    source = named_source(question, [str(h.payload.get("source", "")) for h in hits])
    if source is None:
        return list(hits)
    named = [h for h in hits if h.payload.get("source") == source]
    return named + [h for h in hits if h.payload.get("source") != source]
