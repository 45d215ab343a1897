"""The retriever's stage of an assessment: passages for every question spec of a blueprint, by the
published recipe (``rag_retriever.assessment``: hybrid + RRF, neighbours, word budget, usage
penalty, MMR), and foils for distractors; in the regeneration pass, passages of another section for
each question the evaluator sent back. Blocking: the handler runs it in a thread."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rag_common.store.contract import DENSE, SPARSE, SideQuery
from rag_common.text.course_parts import content_section
from rag_common.transport.consuming import PermanentError
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import Assessment, AssessmentItem, QuestionSpec, UnitMaterial
from rag_retriever.assessment import (
    Key,
    Scored,
    assign_topics,
    expand_neighbours,
    fit_word_budget,
    mmr_select,
    penalise_usage,
    plan_specs,
    reassign_topics,
    reciprocal_rank_fusion,
    record_usage,
    sample_foils,
    topic_query,
)
from rag_retriever.material import unit_material
from rag_retriever.search import Retriever
from rag_retriever.selection import marked_spans
from rag_retriever.settings import AssessmentRecipeSettings
from rag_retriever.units import Section, document_titles, in_unit, sections_of, unit_candidates


def _collection_chunks(
    retriever: Retriever, s: AssessmentRecipeSettings, collection: str
) -> tuple[list[dict[str, Any]], dict[Key, dict[str, Any]]]:
    """The collection's chunks (for units, topics and foils) and the same by (document, chunk index).

    In document and chunk order, not the store's: the store lists points by id, and an id changes
    with the index version (a setting that shapes no chunk still changes it), so the seeded sample
    of foils, and with it the distractors and which sentences a form could ask, would change too.
    """
    store = retriever.store
    if not store.collection_exists(collection):
        raise PermanentError("collection_not_found", f"unknown collection {collection!r}", 404)
    chunks = sorted(
        store.scroll_chunks(collection, s.scan_limit),
        key=lambda c: (str(c.get("source", "")), str(c.get("document_id", "")), int(c.get("chunk_index", 0))),
    )
    by_key: dict[Key, dict[str, Any]] = {
        (str(c.get("document_id", "")), int(c.get("chunk_index", 0))): c for c in chunks
    }
    return chunks, by_key


def assessment_items(
    retriever: Retriever, recipe_settings: AssessmentRecipeSettings, job: Assessment
) -> tuple[list[AssessmentItem], list[Passage], list[UnitMaterial]]:
    """Each spec of the blueprint with its passages, foils for distractors, and the sentences each
    unit holds (``rag_retriever.material``)."""
    s, blueprint = recipe_settings, job.blueprint
    collection = blueprint.collection
    chunks, by_key = _collection_chunks(retriever, s, collection)
    sections = sections_of(chunks)
    check_units(sections, blueprint.units, collection)
    specs = assign_topics(plan_specs(blueprint), sections, blueprint.seed)
    used: dict[Key, int] = {}
    items = []
    for spec in specs:
        picked = recipe(retriever, s, collection, spec, used, by_key)
        record_usage(used, picked)
        passages = [_passage(n, c) for n, c in enumerate(picked, start=1)]
        items.append(AssessmentItem(spec=spec, passages=passages))
    foils = [
        _passage(n, Scored(key=("", 0), score=0.0, payload=c))
        for n, c in enumerate(sample_foils(chunks, s.foils, blueprint.seed, s.foil_chars), 1)
    ]
    return items, foils, unit_material(chunks, blueprint.units)


def check_units(sections: list[Section], units: list[str], collection: str) -> None:
    """Refuse a unit that names nothing (``unit_not_found``) or more than one part of the collection
    (``unit_ambiguous``, listing the candidates as units that each name one part)."""
    missing = [unit for unit in units if not unit_candidates(sections, unit)]
    if missing:
        raise PermanentError(
            "unit_not_found",
            f"no document or heading of collection {collection!r} matches unit(s) {missing}: "
            "name a document by its file name or title, or a heading such as 'Billing > Refunds'",
            422,
        )
    for unit in units:
        candidates = unit_candidates(sections, unit)
        if len(candidates) > 1:
            shown = "; ".join(f"'{c}'" for c in candidates)
            raise PermanentError(
                "unit_ambiguous",
                f"unit {unit!r} names {len(candidates)} parts of collection {collection!r}: {shown}. "
                "Ask for one of them as written here (or several, as several units)",
                422,
            )


def regeneration_items(
    retriever: Retriever, recipe_settings: AssessmentRecipeSettings, job: Assessment, items: list[AssessmentItem]
) -> tuple[list[AssessmentItem], list[UnitMaterial]]:
    """The regeneration pass: each item to write again (no question) gets the passages of a section of
    its unit that no question of the paper drew on (``reassign_topics``), found by the same recipe with
    every chunk the paper already used penalised; the accepted items stay as they are. A question
    whose passages offered nothing to ask, or only rejected questions, is so written from others.
    With them, the sentences each unit holds."""
    s, blueprint = recipe_settings, job.blueprint
    chunks, by_key = _collection_chunks(retriever, s, blueprint.collection)
    redo = [item.spec for item in items if item.question is None]
    specs = iter(reassign_topics(redo, sections_of(chunks), {item.spec.topic for item in items}, blueprint.seed))
    used: dict[Key, int] = {}
    for item in items:
        for p in item.passages:
            used[(p.document_id, p.chunk_index)] = used.get((p.document_id, p.chunk_index), 0) + 1
    out = []
    for item in items:
        if item.question is not None:
            out.append(item)
            continue
        spec = next(specs)
        picked = recipe(retriever, s, blueprint.collection, spec, used, by_key)
        record_usage(used, picked)
        passages = [_passage(n, c) for n, c in enumerate(picked, start=1)]
        out.append(item.model_copy(update={"spec": spec, "passages": passages}))
    return out, unit_material(chunks, blueprint.units)


def recipe(
    retriever: Retriever,
    s: AssessmentRecipeSettings,
    collection: str,
    spec: QuestionSpec,
    used: dict[Key, int],
    chunks: dict[Key, dict[str, Any]],
) -> list[Scored]:
    """Hybrid search fused by RRF, neighbours, word budget, usage penalty, MMR (in that order)."""
    source = spec.topic.partition(" > ")[0]
    dense, sparse = retriever.embed_text(topic_query(spec.topic) or spec.unit or "overview")
    dense = list(dense)
    sides = [SideQuery(DENSE, dense, s.candidates * 3), SideQuery(SPARSE, sparse, s.candidates * 3)]
    store = retriever.store
    rankings = store.search_sides(collection, sides, filters={"source": source} if source else {})
    fused = reciprocal_rank_fusion([[point for point, _ in r] for r in rankings], s.rrf_k)
    hits = store.fetch_hits(collection, [point for point, _ in fused], dense)
    titles = document_titles(chunks.values())
    candidates = []
    for point, score in fused:
        hit = hits.get(point)
        if hit is None or hit.payload.get("boilerplate"):
            continue
        path = hit.payload.get("section_path") or [hit.payload.get("section", "")]
        source_of = str(hit.payload.get("source", ""))
        if not in_unit(source_of, [str(p) for p in path], spec.unit, titles.get(source_of, "")):
            continue
        if not content_section(" > ".join(str(p) for p in path)):
            continue  # learning objectives, exercises, front matter: nothing a question is drawn from
        key = (str(hit.payload.get("document_id", "")), int(hit.payload.get("chunk_index", 0)))
        candidates.append(Scored(key=key, score=score, payload=hit.payload, dense=hit.dense))
        if len(candidates) >= s.candidates:
            break
    heading = spec.topic.partition(" > ")[2]
    own = [
        Scored(key=key, score=0.0, payload=payload)
        for key, payload in sorted(chunks.items())
        if payload.get("source") == source and _heading(payload) == heading and not payload.get("boilerplate")
    ]
    if not candidates:  # the search found nothing of the unit: the topic section's own chunks
        candidates = own[: s.candidates]
    elif own and not any(_heading(c.payload) == heading for c in candidates):
        # The seeded topic is always among the candidates, as good as the best: two seeds, two papers.
        candidates = [replace(own[0], score=max(c.score for c in candidates)), *candidates][: s.candidates]
    candidates = expand_neighbours(candidates, chunks, s.neighbours)
    candidates = fit_word_budget(candidates, s.budget_tokens, s.tokens_per_word)
    candidates = penalise_usage(candidates, used, s.usage_penalty)
    picked = mmr_select(candidates, s.passages, s.mmr_lambda)
    if own and picked and not any(_heading(c.payload) == heading for c in picked):
        picked = [*expand_neighbours(own[:1], chunks, s.neighbours), *picked[:-1]]
    # The topic's own section first: the generator draws on the first passage before the others.
    return sorted(picked, key=lambda c: _heading(c.payload) != heading)


def _heading(payload: dict[str, Any]) -> str:
    return " > ".join(str(p) for p in payload.get("section_path") or [payload.get("section", "")])


def _passage(n: int, c: Scored) -> Passage:
    p = c.payload
    return Passage(
        n=n,
        source=str(p.get("source", "")),
        section=str(p.get("section", "")),
        page=p.get("page"),
        chunk_index=int(p.get("chunk_index", 0)),
        score=round(c.score, 6),
        text=str(p.get("text", "")),
        document_id=str(p.get("document_id", "")),
        kind=p.get("kind", "text"),
        injection_spans=marked_spans(p),
    )


def assessment_foils(retriever: Retriever, recipe_settings: AssessmentRecipeSettings, job: Assessment) -> list[Passage]:
    """Foils for a pass that came without them (a question the teacher asked to write again)."""
    s, blueprint = recipe_settings, job.blueprint
    chunks, _ = _collection_chunks(retriever, s, blueprint.collection)
    return [
        _passage(n, Scored(key=("", 0), score=0.0, payload=c))
        for n, c in enumerate(sample_foils(chunks, s.foils, blueprint.seed, s.foil_chars), 1)
    ]
