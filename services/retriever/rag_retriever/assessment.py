"""Passages for an assessment's questions: the blueprint planned into specs, and the published
retrieval recipe for generation, each step a named pure function (pure).

The recipe (one call per question spec, in this order):

1. ``reciprocal_rank_fusion`` of the dense and BM25 rankings (k = ``assessment_rrf_k``, 60);
2. ``expand_neighbours``: each candidate joined with its chunk index ± 1 of the same section;
3. ``fit_word_budget``: candidates in rank order while their words × 1.3 fit the token budget, the
   last one truncated to what is left;
4. ``penalise_usage``: each candidate's score × 0.85 ^ (times its chunk was already used by an
   earlier question of this assessment), so the paper does not keep drawing on one passage;
5. ``mmr_select``: maximal marginal relevance with λ = 0.7 picks the passages.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rag_common.store.contract import Hit
from rag_common.text.course_parts import content_section
from rag_common.text.seeding import seed_ranks
from rag_common.wire.messages.assessment import (
    BLOOM_LEVELS,
    QUESTION_KINDS,
    BloomLevel,
    Blueprint,
    QuestionKind,
    QuestionSpec,
)
from rag_retriever.context import expand
from rag_retriever.units import UNIT_SEPARATOR, Section, unit_sections
from rag_retriever.units import in_unit as in_unit  # units are named in rag_retriever.units; kept importable here
from rag_retriever.units import sections_of as sections_of

# Marks per question type when the blueprint gives no total.
DEFAULT_MARKS: dict[QuestionKind, int] = {"mcq": 1, "short": 3, "long": 6}
# The Bloom levels each type of question can honestly test: an MCQ recognises, a long answer builds.
KIND_LEVELS: dict[QuestionKind, tuple[BloomLevel, ...]] = {
    "mcq": ("remember", "understand", "apply"),
    "short": ("remember", "understand", "apply", "analyze", "evaluate"),
    "long": ("understand", "analyze", "evaluate", "create"),
}
Key = tuple[str, int]  # (document_id, chunk_index)


# --- the blueprint as question specs ---------------------------------------------------------


def distribute_marks(kinds: Sequence[QuestionKind], total: int | None) -> list[float]:
    """Marks per question: the default weights (1/3/6), scaled to ``total`` when given, as whole
    marks by largest remainder (every question at least 1 when the total allows)."""
    weights = [DEFAULT_MARKS[k] for k in kinds]
    if total is None or not kinds:
        return [float(w) for w in weights]
    raw = [total * w / sum(weights) for w in weights]
    marks = [max(1, math.floor(r)) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - math.floor(raw[i]), reverse=True)
    i = 0
    while sum(marks) < total:
        marks[order[i % len(order)]] += 1
        i += 1
    return [float(m) for m in marks]


def level_for(kind: QuestionKind, wanted: Sequence[BloomLevel], position: int) -> BloomLevel:
    """The ``position``-th question of a type cycles over the wanted levels that type can test; a
    type that can test none of them takes its level nearest to the first wanted one."""
    usable = [level for level in wanted if level in KIND_LEVELS[kind]]
    if kind == "long":  # the few long questions go to the highest levels asked
        usable.sort(key=BLOOM_LEVELS.index, reverse=True)
    if usable:
        return usable[position % len(usable)]
    target = BLOOM_LEVELS.index(wanted[0]) if wanted else 0
    return min(KIND_LEVELS[kind], key=lambda level: abs(BLOOM_LEVELS.index(level) - target))


def plan_specs(blueprint: Blueprint) -> list[QuestionSpec]:
    """One spec per wanted question, MCQs first, units taken in turn."""
    kinds = [kind for kind in QUESTION_KINDS for _ in range(blueprint.counts.get(kind, 0))]
    marks = distribute_marks(kinds, blueprint.total_marks)
    units = blueprint.units or [""]
    specs: list[QuestionSpec] = []
    seen: dict[QuestionKind, int] = {}
    for index, kind in enumerate(kinds):
        position = seen.get(kind, 0)
        seen[kind] = position + 1
        specs.append(
            QuestionSpec(
                index=index,
                kind=kind,
                unit=units[index % len(units)],
                bloom=level_for(kind, blueprint.bloom_levels, position),
                difficulty=blueprint.difficulty,
                marks=marks[index],
            )
        )
    return specs


# --- units and topics ------------------------------------------------------------------------


def assign_topics(
    specs: Sequence[QuestionSpec], sections: Sequence[Section], seed: int, min_words: int = 25
) -> list[QuestionSpec]:
    """Give each spec a section of its unit to draw from: sections in a seeded order, the seed's own
    part first (``rag_common.text.seeding``), each used once before any is used again; long
    questions take the longest sections of that part first."""
    rng = random.Random(seed)
    queues: dict[tuple[str, str], list[Section]] = {}
    out: list[QuestionSpec] = []
    for spec in specs:
        key = (spec.unit, "long" if spec.kind == "long" else "other")
        if not queues.get(key):
            content = [s for s in unit_sections(sections, spec.unit) if content_section(s.heading)]
            content = content or unit_sections(sections, spec.unit)
            pool = [s for s in content if s.words >= min_words] or content
            queues[key] = _seed_order(pool, rng, seed, spec.kind == "long")
        queue = queues[key]
        if not queue:
            out.append(spec)
            continue
        section = queue.pop(0)
        queue.append(section)
        out.append(spec.model_copy(update={"topic": _topic_of(section)}))
    return out


def reassign_topics(
    specs: Sequence[QuestionSpec], sections: Sequence[Section], taken: set[str], seed: int, min_words: int = 25
) -> list[QuestionSpec]:
    """Give each spec to write again a section of its unit that no question of the paper drew on
    (``taken``: the topics already assigned), so its question comes from other passages: sections in
    a seeded order (the seed's own part first), each given once, long questions served first and the
    longest first. A spec whose
    unit has no such section keeps its own (the recipe then ranks the chunks it used last)."""
    rng = random.Random(f"{seed}:regenerate")
    taken = set(taken)
    out = list(specs)
    for i in sorted(range(len(out)), key=lambda i: out[i].kind != "long"):
        spec = out[i]
        unit = [s for s in unit_sections(sections, spec.unit) if _topic_of(s) not in taken]
        unit = [s for s in unit if content_section(s.heading)] or unit
        pool = [s for s in unit if s.words >= min_words] or unit
        if not pool:
            continue
        topic = _topic_of(_seed_order(pool, rng, seed, spec.kind == "long")[0])
        taken.add(topic)
        out[i] = spec.model_copy(update={"topic": topic})
    return out


def _seed_order(pool: Sequence[Section], rng: random.Random, seed: int, longest: bool) -> list[Section]:
    """The sections in a seeded order, the seed's own part first (``rag_common.text.seeding``, the
    parts even in size); ``longest``: by length in each part (a long answer needs the most material)."""
    out = list(pool)
    rng.shuffle(out)
    ranks = seed_ranks((_topic_of(s) for s in out), seed)
    out.sort(key=lambda s: (ranks[_topic_of(s)], -s.words if longest else 0))
    return out


def _topic_of(section: Section) -> str:
    return f"{section.source}{UNIT_SEPARATOR}{section.heading}"


def topic_query(topic: str) -> str:
    """What to search for a topic 'docs/billing.md > Billing > Refunds': its headings and the
    document's name in words."""
    source, _, heading = topic.partition(UNIT_SEPARATOR)
    name = re.sub(r"[_\-/.]+", " ", source.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    return f"{heading.replace(UNIT_SEPARATOR, ' ')} {name}".strip()


# --- the recipe --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate chunk: its key, score, payload (text, source, section...) and dense vector."""

    key: Key
    score: float
    payload: dict[str, Any]
    dense: list[float] | None = None


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int) -> list[tuple[str, float]]:
    """Step 1: ids by Σ 1 / (k + rank) over the rankings (rank from 1), best first; ties keep the
    order of first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, point in enumerate(ranking, start=1):
            scores[point] = scores.get(point, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


def expand_neighbours(
    candidates: Sequence[Scored], chunks: Mapping[Key, Mapping[str, Any]], radius: int
) -> list[Scored]:
    """Step 2: each candidate's text joined with its neighbouring chunks (index ± ``radius``) of the
    same section; a chunk that is a better candidate's own or neighbour is not repeated."""
    out: list[Scored] = []
    shown: dict[str, set[int]] = {}
    for c in candidates:
        doc, own = c.key
        taken = shown.setdefault(doc, set())
        if own in taken:
            continue
        hit = expand(Hit(c.score, 0.0, c.payload, c.dense), chunks, radius, frozenset(taken))
        first, last = hit.payload.get("chunk_span") or (own, own)
        taken.update(range(int(first), int(last) + 1))
        out.append(replace(c, payload=hit.payload))
    return out


def word_tokens(text: str, tokens_per_word: float) -> int:
    """The recipe's token estimate: words × ``tokens_per_word`` (1.3), rounded up."""
    return math.ceil(len(text.split()) * tokens_per_word)


def fit_word_budget(candidates: Sequence[Scored], budget: int, tokens_per_word: float) -> list[Scored]:
    """Step 3: candidates in rank order while their tokens (words × 1.3) fit ``budget``; the one that
    would overflow is cut to the words left (whole words), and nothing after it is kept."""
    out: list[Scored] = []
    used = 0
    for c in candidates:
        text = str(c.payload.get("text", ""))
        cost = word_tokens(text, tokens_per_word)
        if used + cost <= budget:
            out.append(c)
            used += cost
            continue
        words_left = int((budget - used) / tokens_per_word)
        if words_left > 0:
            cut = " ".join(text.split()[:words_left])
            out.append(replace(c, payload={**c.payload, "text": cut, "truncated": True}))
        break
    return out


def penalise_usage(candidates: Sequence[Scored], used: Mapping[Key, int], factor: float) -> list[Scored]:
    """Step 4: score × ``factor`` ^ (times the chunk was used by earlier questions), re-ranked."""
    scored = [replace(c, score=c.score * factor ** used.get(c.key, 0)) for c in candidates]
    return sorted(scored, key=lambda c: c.score, reverse=True)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two unit vectors."""
    return sum(x * y for x, y in zip(a, b, strict=False))  # unit vectors


def section_of(hit: Hit) -> tuple[str, str, object]:
    """The (source, section, page) a chunk belongs to."""
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
                if section_of(p) == section_of(h):
                    redundancy = 1.0
                    break
                if h.dense and p.dense:
                    redundancy = max(redundancy, cosine(h.dense, p.dense))
            value = lambda_ * relevance[id(h)] - (1 - lambda_) * redundancy
            if value > best_value:
                best, best_value = h, value
        picked.append(best)
        pool.remove(best)
    return picked


def mmr_select(candidates: Sequence[Scored], limit: int, lambda_: float) -> list[Scored]:
    """Step 5: maximal marginal relevance (``mmr``) with λ = ``lambda_``."""
    hits = [Hit(c.score, 0.0, c.payload, c.dense) for c in candidates]
    lookup = {id(h): c for h, c in zip(hits, candidates, strict=True)}
    return [lookup[id(h)] for h in mmr(hits, limit, lambda_)]


def record_usage(used: dict[Key, int], picked: Sequence[Scored]) -> None:
    """Count each picked chunk, and the neighbours joined to it, as used once more."""
    for c in picked:
        doc, own = c.key
        first, last = c.payload.get("chunk_span") or (own, own)
        for index in range(int(first), int(last) + 1):
            used[(doc, index)] = used.get((doc, index), 0) + 1


def sample_foils(chunks: Sequence[Mapping[str, Any]], limit: int, seed: int, max_chars: int) -> list[dict[str, Any]]:
    """A seeded sample of the collection's chunks (text cut to whole sentences within ``max_chars``):
    where the generator finds same-type terms and descriptions for distractors."""
    pool = [c for c in chunks if not c.get("boilerplate") and str(c.get("text", "")).strip()]
    rng = random.Random(seed)
    picked = rng.sample(pool, min(limit, len(pool)))
    return [{**c, "text": whole_sentences(str(c.get("text", "")), max_chars)} for c in picked]


_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s)|\n")


def whole_sentences(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` at the end of its last whole sentence or line: a sentence cut
    mid-word ("... verifies the need f") would be offered as a distractor as it stands."""
    if len(text) <= max_chars:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text[: max_chars + 1])]
    return text[: ends[-1]].rstrip() if ends else ""
