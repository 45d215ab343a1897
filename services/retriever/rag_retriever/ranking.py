"""Ranking steps between the fused search hits and the passages (pure functions, no I/O).

Each step is switched by a retriever setting and measured in docs/EVALUATION.md: boilerplate
down-weighting, maximal marginal relevance (MMR), splitting two-part questions (fusing their
rankings, or covering each part's best section), the keyword query for the sparse (BM25) side,
and putting first the document a question names by its title.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import TypeVar

from rag_common.embedding import STOPWORDS
from rag_common.vectors import Hit

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


def hit_key(hit: Hit) -> tuple[str, int]:
    return str(hit.payload.get("document_id", hit.payload.get("source", ""))), int(hit.payload.get("chunk_index", 0))


def downweight_boilerplate(hits: Sequence[Hit], weight: float) -> list[Hit]:
    """Multiply the fused score of navigation chunks (payload ``boilerplate``) by ``weight`` and re-rank.

    "Next steps" and link lists share many words with questions while answering none; with RRF a
    weight of 0.5 moves such a chunk below every content chunk found by both retrievers.
    """
    if weight >= 1.0:
        return list(hits)
    weighted = [replace(h, score=h.score * weight) if h.payload.get("boilerplate") else h for h in hits]
    return sorted(weighted, key=lambda h: h.score, reverse=True)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))  # unit vectors


def _section(hit: Hit) -> tuple[str, str, object]:
    p = hit.payload
    return str(p.get("source", "")), str(p.get("section", "")), p.get("page")


def mmr(hits: Sequence[Hit], limit: int, lambda_: float) -> list[Hit]:
    """Maximal marginal relevance: each next pick maximises ``λ·relevance − (1−λ)·redundancy``.

    Relevance is the fused score scaled to 0..1 over the candidates (RRF scores are ranks, not
    similarities); redundancy is the highest cosine to a passage already picked, and 1 for a
    second chunk of a section already picked (the same section rarely adds a new fact).
    """
    pool = list(hits)
    if not pool:
        return []
    high, low = max(h.score for h in pool), min(h.score for h in pool)
    span = (high - low) or 1.0
    relevance = {id(h): (h.score - low) / span for h in pool}
    picked: list[Hit] = []
    while pool and len(picked) < limit:
        best, best_value = pool[0], -math.inf
        for h in pool:
            redundancy = 0.0
            for p in picked:
                if _section(p) == _section(h):
                    redundancy = 1.0
                    break
                if h.dense and p.dense:
                    redundancy = max(redundancy, _cosine(h.dense, p.dense))
            value = lambda_ * relevance[id(h)] - (1 - lambda_) * redundancy
            if value > best_value:
                best, best_value = h, value
        picked.append(best)
        pool.remove(best)
    return picked


_PART_START = r"(?:how|what|which|why|when|where|who|whom|whose|can|could|does|do|did|is|are|should|would|will)"
_SPLITS = (
    re.compile(r"\?\s+(?=\S)"),  # two questions in one message
    re.compile(rf",?\s+and\s+(?={_PART_START}\b)", re.IGNORECASE),  # "..., and how does ..."
)


def split_question(question: str, min_words: int = 3) -> list[str]:
    """The parts of a two-part question ("What is X, and how does it relate to Y?"), or [] when
    it has one part. Each part must keep ``min_words`` words, so "pros and cons" is not split."""
    text = question.strip()
    for pattern in _SPLITS:
        parts = [p.strip(" ,;?") for p in pattern.split(text)]
        parts = [p for p in parts if p]
        if len(parts) >= 2 and all(len(p.split()) >= min_words for p in parts):
            return [p if p.endswith("?") else f"{p}?" for p in parts[:3]]
    return []


def cover_parts(ranked: Sequence[Hit], parts: Sequence[Sequence[Hit]], limit: int, at: int = 2) -> list[Hit]:
    """The whole question's top ``limit``, changed only so that each part's best section is in it.

    A part's best hit whose (source, section, page) is not among the first ``limit`` goes in at
    rank ``at + 1`` (the next one after it), pushing the rest down; so the first
    ranks stay the whole question's and a two-part question gets both parts' evidence.
    """
    top = list(ranked[:limit])
    added = 0
    for part in parts:
        if not part or any(_section(h) == _section(part[0]) for h in top):
            continue
        top.insert(min(at + added, len(top)), part[0])
        top = top[:limit]
        added += 1
    return top


def fuse(rankings: Sequence[Sequence[Hit]], rrf_k: int, weights: Sequence[float] | None = None) -> list[Hit]:
    """Reciprocal rank fusion of several ranked hit lists (one chunk counted once, best payload kept)."""
    scores: dict[tuple[str, int], float] = {}
    first: dict[tuple[str, int], Hit] = {}
    for index, ranking in enumerate(rankings):
        weight = weights[index] if weights else 1.0
        for rank, hit in enumerate(ranking, start=1):
            key = hit_key(hit)
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            if key not in first or hit.similarity > first[key].similarity:
                first[key] = hit
    ordered = sorted(scores, key=lambda k: scores[k], reverse=True)
    return [replace(first[k], score=scores[k]) for k in ordered]


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.'/-]*")
_QUESTION_WORDS = frozenset(
    """what which who whom whose when where why how can could would should will shall may might must
    does do did is are was were please tell explain describe give list show use using used way ways
    some any""".split()
)


def keyword_query(question: str) -> str:
    """The question's content words for the sparse side: stop words and question words dropped.

    BM25 already ignores stop words; dropping "how", "use", "way" and the like as well keeps the
    sparse ranking on the subject of the question rather than on its phrasing.
    """
    words = [w.strip(".'/-") for w in _WORD.findall(question)]
    kept = [w for w in words if w and w.lower() not in STOPWORDS and w.lower() not in _QUESTION_WORDS]
    return " ".join(kept) or question


def section_units(hits: Sequence[Hit], child_weight: float) -> list[Hit]:
    """Sections as the retrieval unit, chunks as the evidence (parent/child).

    Each (source, section, page) is scored by its best chunk plus ``child_weight`` times the fused
    scores of its other candidate chunks, so a section that several chunks match outranks one
    that a single chunk only brushes; its best chunk stands for it. The other chunks follow, in
    their order, for steps that fill slots from them (section diversity's second pass).
    """
    groups: dict[tuple[str, str, object], list[Hit]] = {}
    for h in hits:
        groups.setdefault(_section(h), []).append(h)
    heads = [
        replace(chunks[0], score=chunks[0].score + child_weight * sum(c.score for c in chunks[1:]))
        for chunks in groups.values()
    ]
    heads.sort(key=lambda h: h.score, reverse=True)
    rest = [c for chunks in groups.values() for c in chunks[1:]]
    return heads + rest


def penalize_used(hits: Sequence[Hit], used: dict[str, int], factor: float) -> list[Hit]:
    """The usage penalty: a hit whose source earlier turns of the session cited ``n`` times has its
    score multiplied by ``factor ** n`` (0.85 in seed 002), so a conversation moves on to material
    it has not shown yet when that is about as relevant; then re-ranked."""
    if factor >= 1.0 or not used:
        return list(hits)
    scored = [
        replace(h, score=h.score * factor ** used[str(h.payload.get("source", ""))])
        if used.get(str(h.payload.get("source", "")))
        else h
        for h in hits
    ]
    return sorted(scored, key=lambda h: h.score, reverse=True)


_TITLE_SPLIT = re.compile(r"[^a-z0-9]+")


def title_words(source: str) -> frozenset[str]:
    """The words of a source's file name ("Northwind_Health_Plus_Benefits_Details.pdf" → northwind,
    health, plus, benefits, details), folders, extension, numbers and stop words left out."""
    stem = source.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
    return frozenset(w for w in _TITLE_SPLIT.split(stem) if len(w) > 1 and not w.isdigit() and w not in STOPWORDS)


_CUES = frozenset("according in from under by per within for with of".split())
_ARTICLES = frozenset("the our your a an this that".split())
_FILE_WORDS = frozenset("pdf md txt markdown docx".split())


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
            while j < len(words) and (words[j] in title or words[j] in _FILE_WORDS or words[j].isdigit()):
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


def relevance(hits: Sequence[Hit]) -> list[float]:
    """Each hit's fused score scaled to 0..1 over the candidates (all equal: 1)."""
    if not hits:
        return []
    high, low = max(h.score for h in hits), min(h.score for h in hits)
    span = high - low
    return [(h.score - low) / span if span else 1.0 for h in hits]


def file_strength(hits: Sequence[Hit]) -> dict[str, float]:
    """Per source, the evidence its candidates give together, as a share of the strongest file's
    (0..1): the sum over its sections of their best chunk's relevance (fused score scaled 0..1).

    Counting a section once keeps a long section's many near-identical chunks from outweighing a
    file where several different sections match; a file that answers a question usually has more
    than one section among the candidates (83 of the 100 anthropic-docs questions have two or more
    gold sections, nearly always of one file).
    """
    best: dict[tuple[str, str, object], float] = {}
    for h, r in zip(hits, relevance(hits), strict=True):
        key = _section(h)
        best[key] = max(best.get(key, 0.0), r)
    totals: dict[str, float] = {}
    for (source, _, _), r in best.items():
        totals[source] = totals.get(source, 0.0) + r
    strongest = max(totals.values(), default=0.0)
    return {source: (total / strongest if strongest else 0.0) for source, total in totals.items()}


def file_evidence(hits: Sequence[Hit], weight: float) -> list[Hit]:
    """Document-level evidence: ``score = relevance + weight·file strength``, re-ranked.

    ``relevance`` is the hit's fused score scaled 0..1 over the candidates, ``file strength`` its
    source's share of the strongest file's evidence (``file_strength``). So among passages about as
    relevant, those of the file most of the candidates point at come first; weight 0 keeps the order.
    """
    if weight <= 0 or not hits:
        return list(hits)
    strength = file_strength(hits)
    scored = [
        replace(h, score=r + weight * strength[_section(h)[0]]) for h, r in zip(hits, relevance(hits), strict=True)
    ]
    return sorted(scored, key=lambda h: h.score, reverse=True)


def second_section_of_top_file(top: Sequence[Hit], candidates: Sequence[Hit], at: int = 2) -> list[Hit]:
    """The top passages, with the first passage's file given a second section among the first
    ``at + 1`` when it has none there: its best other section among ``candidates`` goes in at
    rank ``at + 1`` and the rest move down (the last one drops out).

    A question is mostly answered by two or more sections of one file; when the first three
    passages hold one section of it and two of other files, its next section is the likelier gold.
    """
    if not top:
        return []
    source = _section(top[0])[0]
    head = top[: at + 1]
    if any(_section(h)[0] == source and _section(h) != _section(top[0]) for h in head[1:]):
        return list(top)
    shown = {_section(h) for h in head}
    extra = next((h for h in candidates if _section(h)[0] == source and _section(h) not in shown), None)
    if extra is None:
        return list(top)
    rest = [h for h in top[at:] if hit_key(h) != hit_key(extra)]
    return [*top[:at], extra, *rest][: len(top)]
