"""Ranking ideas measured worse than the retriever's default and taken out of the service.

Each was a ``RAG_RETRIEVER_*`` setting, off by default; the figures that turned it down are in
docs/EVALUATION.md and docs/decisions/0200-retriever-steps.md. They stay here, pure functions over
the fused hits, so the retrieval benchmarks can still measure them against the product's steps:
``benchmarks.retrieval_sweep --variant label:lab=<name>`` inserts one (``LAB_STEPS``) into a
``Retriever``'s step list; ``benchmarks.ltr_fit`` fits the learned reranker's weights.

- boilerplate down-weighting, maximal marginal relevance (MMR), splitting two-part questions
  (fusing their rankings, or covering each part's best section), sections as retrieval units,
  the usage penalty, document-level evidence and the second section of the top file;
- the pure rerankers: ``lexical`` (heading and text overlap), ``heading`` (how much of the
  chunk's own heading the question covers) and ``learned`` (a linear model over ``FEATURES``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from rag_common.store.vectors import Hit
from rag_common.text.words import INDEX_STOP_WORDS, stem, tokens
from rag_retriever.assessment import cosine, mmr, section_of
from rag_retriever.ranking import keyword_query, title_words
from rag_retriever.search import Pass, Retriever, Step
from rag_retriever.selection import diversify


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
        if not part or any(section_of(h) == section_of(part[0]) for h in top):
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


def section_units(hits: Sequence[Hit], child_weight: float) -> list[Hit]:
    """Sections as the retrieval unit, chunks as the evidence (parent/child).

    Each (source, section, page) is scored by its best chunk plus ``child_weight`` times the fused
    scores of its other candidate chunks, so a section that several chunks match outranks one
    that a single chunk only brushes; its best chunk stands for it. The other chunks follow, in
    their order, for steps that fill slots from them (section diversity's second pass).
    """
    groups: dict[tuple[str, str, object], list[Hit]] = {}
    for h in hits:
        groups.setdefault(section_of(h), []).append(h)
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
        key = section_of(h)
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
        replace(h, score=r + weight * strength[section_of(h)[0]]) for h, r in zip(hits, relevance(hits), strict=True)
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
    source = section_of(top[0])[0]
    head = top[: at + 1]
    if any(section_of(h)[0] == source and section_of(h) != section_of(top[0]) for h in head[1:]):
        return list(top)
    shown = {section_of(h) for h in head}
    extra = next((h for h in candidates if section_of(h)[0] == source and section_of(h) not in shown), None)
    if extra is None:
        return list(top)
    rest = [h for h in top[at:] if hit_key(h) != hit_key(extra)]
    return [*top[:at], extra, *rest][: len(top)]


def terms(text: str) -> set[str]:
    """The Snowball stems of a text's tokens, the sparse index's stop words left out."""
    return {stem(t) for t in tokens(text) if t not in INDEX_STOP_WORDS}


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


# What the learned reranker reads of each candidate, in this order (``candidate_features``).
FEATURES = (
    "relevance",  # fused score scaled 0..1 over the candidates
    "similarity",  # dense cosine to the question
    "similarity_gap",  # cosine minus the best candidate's
    "fused_rank",  # 1 / rank in the fused order
    "dense_rank",  # 1 / rank by cosine among the candidates
    "heading_coverage",  # the heading reranker's: share of the chunk's own heading the question covers
    "path_share",  # share of the question's words in the file name and heading path
    "text_share",  # share of the question's content words in the text
    "title_share",  # share of the file's title words the question holds
    "boilerplate",  # 1 for "Next steps"/link-only chunks
    "file_strength",  # the file's evidence among the candidates, as a share of the strongest file's
    "top_file",  # 1 for the strongest file's chunks
    "section_chunks",  # chunks of the same section among the candidates, over 3 (at most 1)
    "heading_share",  # share of the question's words in the chunk's own heading
    "rank_in_file",  # 1 / the section's rank among its file's sections in the fused order
)


def candidate_features(question: str, hits: Sequence[Hit], needed: Collection[str] = FEATURES) -> list[list[float]]:
    """Per candidate, the ``FEATURES`` values: only what the fused hits and the question hold
    (BM25's own score is not among them: the store returns the fused score only). A feature not
    in ``needed`` is 0 and costs nothing (the learned reranker asks only for those it weighs)."""
    if not hits:
        return []
    asked = terms(question)
    source = [str(h.payload.get("source", "")) for h in hits]
    section = [str(h.payload.get("section") or "") for h in hits]
    columns: dict[str, list[float]] = {}
    if "relevance" in needed:
        columns["relevance"] = relevance(hits)
    best = max(h.similarity for h in hits)
    columns["similarity"] = [h.similarity for h in hits]
    columns["similarity_gap"] = [h.similarity - best for h in hits]
    columns["fused_rank"] = [1.0 / rank for rank in range(1, len(hits) + 1)]
    if "dense_rank" in needed:
        by_cosine = sorted(range(len(hits)), key=lambda i: hits[i].similarity, reverse=True)
        ranks = {i: rank for rank, i in enumerate(by_cosine, start=1)}
        columns["dense_rank"] = [1.0 / ranks[i] for i in range(len(hits))]
    if {"heading_coverage", "heading_share"} & set(needed):
        headings = [terms(text) for text in section]
        columns["heading_coverage"] = [len(asked & h) / len(h) if h and len(asked & h) >= 2 else 0.0 for h in headings]
        columns["heading_share"] = [len(asked & h) / len(asked) if asked else 0.0 for h in headings]
    if "path_share" in needed and asked:
        paths = [h.payload.get("section_path") or [text] for h, text in zip(hits, section, strict=True)]
        columns["path_share"] = [
            len(asked & terms(" ".join([name, *map(str, path)]))) / len(asked)
            for name, path in zip(source, paths, strict=True)
        ]
    if "text_share" in needed:
        wanted = terms(keyword_query(question))
        columns["text_share"] = [
            len(wanted & terms(str(h.payload.get("text", "")))) / len(wanted) if wanted else 0.0 for h in hits
        ]
    if "title_share" in needed:
        titles = {name: {stem(w) for w in title_words(name)} for name in set(source)}
        columns["title_share"] = [len(titles[n] & asked) / len(titles[n]) if titles[n] else 0.0 for n in source]
    columns["boilerplate"] = [1.0 if h.payload.get("boilerplate") else 0.0 for h in hits]
    if {"file_strength", "top_file"} & set(needed):
        strength = file_strength(hits)
        top = max(strength, key=lambda name: strength[name])
        columns["file_strength"] = [strength[n] for n in source]
        columns["top_file"] = [1.0 if n == top else 0.0 for n in source]
    if {"section_chunks", "rank_in_file"} & set(needed):
        keys = list(zip(source, section, strict=True))
        counts = {key: keys.count(key) for key in set(keys)}
        in_file: dict[str, list[tuple[str, str]]] = {}
        for key in keys:
            if key not in in_file.setdefault(key[0], []):
                in_file[key[0]].append(key)
        columns["section_chunks"] = [min(1.0, counts[key] / 3) for key in keys]
        columns["rank_in_file"] = [1.0 / (in_file[key[0]].index(key) + 1) for key in keys]
    kept = [columns.get(name) if name in needed else None for name in FEATURES]
    return [[column[i] if column is not None else 0.0 for column in kept] for i in range(len(hits))]


# One per name of ``FEATURES``: `benchmarks.ltr_fit --objective guarded` fitted on the candidates of all
# four evaluation sets (coordinate ascent on recall@3, MRR@3 and hit@5 from the fused order, a loss on
# any set counting five times). Of the fifteen features it kept two besides the fused relevance.
# docs/decisions/0008-document-evidence-and-learned-fusion-opt-in.md gives the cross-validated figures:
# not a default.
LEARNED_WEIGHTS = (
    1.0,  # relevance
    0.0,  # similarity
    0.0,  # similarity_gap
    0.0,  # fused_rank
    0.0,  # dense_rank
    0.0,  # heading_coverage
    0.0,  # path_share
    0.0,  # text_share
    0.0,  # title_share
    -0.35,  # boilerplate
    0.0,  # file_strength
    0.0,  # top_file
    0.0,  # section_chunks
    0.1,  # heading_share
    0.0,  # rank_in_file
)


class LearnedReranker:
    """``score = Σ weight·feature`` over ``FEATURES``: a linear model of what the fused candidates
    already tell (scores, ranks, heading and title overlap with the question, the boilerplate flag,
    file-level evidence). The shipped ``LEARNED_WEIGHTS`` come from ``benchmarks.ltr_fit``, which
    also gives their cross-validated figures (docs/decisions/0008-document-evidence-and-learned-fusion-opt-in.md)."""

    name = "learned"

    def __init__(self, weights: Sequence[float]) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(f"{len(weights)} weights for {len(FEATURES)} features")
        self.weights = list(weights)
        self.needed = frozenset(name for name, weight in zip(FEATURES, weights, strict=True) if weight)

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        rows = candidate_features(question, hits, self.needed)
        scored = [
            replace(h, score=sum(w * x for w, x in zip(self.weights, row, strict=True)))
            for h, row in zip(hits, rows, strict=True)
        ]
        return sorted(scored, key=lambda h: h.score, reverse=True)


# --- as steps of a Retriever, for the sweeps -----------------------------------------------------------


def _at(steps: Sequence[Step], prefix: str) -> int:
    return next(i for i, step in enumerate(steps) if step.name.startswith(prefix))


def _insert_before(retriever: Retriever, prefix: str, step: Step) -> None:
    retriever.steps.insert(_at(retriever.steps, prefix), step)


def _replace(retriever: Retriever, prefix: str, step: Step) -> None:
    retriever.steps[_at(retriever.steps, prefix)] = step


def _hits_step(name: str, change: Callable[[Pass], list[Hit]]) -> Step:
    def run(p: Pass) -> None:
        p.hits = change(p)

    return Step(name, run)


def _with_question_similarity(p: Pass, hits: Sequence[Hit]) -> list[Hit]:
    """``similarity`` stays the cosine to the whole question: the relevance threshold is about it."""
    dense = p.vectors[0]
    return [replace(h, similarity=cosine(dense, h.dense)) if h.dense else h for h in hits]


def _split(retriever: Retriever, params: dict[str, str]) -> None:
    s = retriever.settings
    limit = max(s.top_k, s.candidates)
    cover = params.get("split_mode", "fuse") == "cover"

    def parts(p: Pass) -> list[list[Hit]]:
        return [retriever.search(p.collection, part, p.filters, limit)[1] for part in split_question(p.question)]

    if not cover:

        def fused(p: Pass) -> list[Hit]:
            rankings = parts(p)
            if not rankings:
                return p.hits
            return _with_question_similarity(p, fuse([p.hits, *rankings], 60))[:limit]

        _insert_before(retriever, "named source first", _hits_step("split questions (fuse)", fused))
        return

    def covered(p: Pass) -> list[Hit]:
        top = diversify(p.hits, s.top_k)
        rankings = [_with_question_similarity(p, r[:1]) for r in parts(p)]
        return cover_parts(top, rankings, s.top_k) if rankings else top

    _replace(retriever, "one per section", _hits_step("one per section, split questions (cover)", covered))


def _rerank_with(name: str) -> Callable[[Retriever, dict[str, str]], None]:
    def add(retriever: Retriever, params: dict[str, str]) -> None:
        heading = float(params.get("rerank_heading_weight", 0.5))
        reranker: LexicalReranker | HeadingReranker | LearnedReranker = (
            LexicalReranker(heading, float(params.get("rerank_text_weight", 0.3)))
            if name == "lexical"
            else HeadingReranker(heading)
            if name == "heading"
            else LearnedReranker(LEARNED_WEIGHTS)
        )
        step = _hits_step(f"rerank ({name})", lambda p: reranker.rerank(p.question, p.hits))
        _insert_before(retriever, "named source first", step)

    return add


def _mmr(retriever: Retriever, params: dict[str, str]) -> None:
    lambda_ = float(params.get("mmr_lambda", 0.7))
    top_k = retriever.settings.top_k
    _replace(retriever, "one per section", _hits_step(f"mmr (λ {lambda_})", lambda p: mmr(p.hits, top_k, lambda_)))


def _boilerplate(retriever: Retriever, params: dict[str, str]) -> None:
    weight = float(params.get("boilerplate_weight", 0.5))
    step = _hits_step(f"boilerplate ×{weight}", lambda p: downweight_boilerplate(p.hits, weight))
    _insert_before(retriever, "named source first", step)


def _section_units(retriever: Retriever, params: dict[str, str]) -> None:
    weight = float(params.get("section_child_weight", 0.5))
    step = _hits_step(f"section units ({weight})", lambda p: section_units(p.hits, weight))
    _insert_before(retriever, "named source first", step)


def _file_evidence(retriever: Retriever, params: dict[str, str]) -> None:
    weight = float(params.get("file_evidence_weight", 0.1))
    step = _hits_step(f"file evidence ({weight})", lambda p: file_evidence(p.hits, weight))
    _insert_before(retriever, "named source first", step)


def _second_section(retriever: Retriever, params: dict[str, str]) -> None:
    top_k = retriever.settings.top_k
    step = _hits_step(
        "one per section, second section of the top file",
        lambda p: second_section_of_top_file(diversify(p.hits, top_k), p.hits),
    )
    _replace(retriever, "one per section", step)


# name → how it changes a Retriever's steps (its parameters, as strings, from the sweep's variant)
LAB_STEPS: dict[str, Callable[[Retriever, dict[str, str]], None]] = {
    "boilerplate": _boilerplate,
    "mmr": _mmr,
    "split": _split,
    "section_units": _section_units,
    "file_evidence": _file_evidence,
    "second_section": _second_section,
    "lexical": _rerank_with("lexical"),
    "heading": _rerank_with("heading"),
    "learned": _rerank_with("learned"),
}


def add_lab_steps(retriever: Retriever, names: str, params: dict[str, str]) -> None:
    """Change ``retriever``'s steps by each of ``names`` (``+``-separated ``LAB_STEPS`` keys)."""
    for name in filter(None, names.split("+")):
        if name not in LAB_STEPS:
            raise ValueError(f"unknown lab step {name!r}: one of {', '.join(LAB_STEPS)}")
        LAB_STEPS[name](retriever, params)
