"""How much material each unit of a paper holds (pure): the sentences a question may be drawn from,
counted from the collection's chunks as the generator reads a passage (quotable units of content
sections, planted text left out, cleaned and askable by their words), each distinct sentence once.

The generator's parse sets aside a few more (no finite verb with its subject), so the count is what
the unit holds at most; with ``used`` (filled in by the evaluator) it tells a teacher whether a paper
of another seed can rest on other sentences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_common.text.askable import askable_text, clean_sentence
from rag_common.text.course_parts import content_section
from rag_common.text.quotable import KIND_ITEM, KIND_SENTENCE, candidate_sentences
from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import UnitMaterial
from rag_retriever.selection import marked_spans
from rag_retriever.units import document_titles, in_unit


def chunk_sentences(chunk: Mapping[str, Any]) -> set[str]:
    """The askable sentences of one chunk (normalised), none touching planted text."""
    path = [str(p) for p in chunk.get("section_path") or [chunk.get("section", "")]]
    if chunk.get("boilerplate") or not content_section(" > ".join(path)):
        return set()
    passage = Passage(
        n=0,
        source=str(chunk.get("source", "")),
        section=str(chunk.get("section", "")),
        text=str(chunk.get("text", "")),
        kind=chunk.get("kind", "text"),
    )
    spans = marked_spans(chunk)
    units = candidate_sentences([passage], excluded={0: spans} if spans else None)
    return {
        normal_words(u.text)
        for u in units
        if u.kind in {KIND_SENTENCE, KIND_ITEM} and askable_text(clean_sentence(u.text))
    }


def unit_material(chunks: Sequence[Mapping[str, Any]], units: Sequence[str]) -> list[UnitMaterial]:
    """Per unit asked (the whole collection when none), the distinct sentences to draw from."""
    titles = document_titles(chunks)
    found: dict[str, set[str]] = {unit: set() for unit in units or [""]}
    for chunk in chunks:
        source = str(chunk.get("source", ""))
        path = [str(p) for p in chunk.get("section_path") or [chunk.get("section", "")]]
        within = [unit for unit in found if in_unit(source, path, unit, titles.get(source, ""))]
        if within:
            sentences = chunk_sentences(chunk)
            for unit in within:
                found[unit] |= sentences
    return [UnitMaterial(unit=unit, sentences=len(sentences)) for unit, sentences in found.items()]
