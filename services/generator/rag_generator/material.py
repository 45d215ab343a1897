"""The material a question may be drawn from: the content sentences of the passages, parsed once,
in a seeded order, and the terms of the collection that distractors are drawn from.

Content only: no sentence of a section of learning objectives, exercises, front matter or
navigation, no heading, no footnote, no instruction (``linguistics.content_sentence``); and never
text that ingest marked as planted instructions (``unmarked_candidates``).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_common.text.askable import MAX_WORDS, MIN_WORDS, clean_sentence
from rag_common.text.quotable import Candidate, candidate_sentences
from rag_common.text.seeding import SEEDS_APART, seed_rank
from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage
from rag_generator.linguistics import (
    Term,
    content_section,
    content_sentence,
    parse,
    parse_many,
    terms,
)

if TYPE_CHECKING:
    from spacy.tokens import Doc

_CACHE: OrderedDict[str, Doc] = OrderedDict()
_CACHE_SIZE = 20_000


def parsed(text: str) -> Doc:
    """The sentence's parse, kept for the next question that reads the same passage."""
    doc = _CACHE.get(text)
    if doc is None:
        doc = parse(text)
        _CACHE[text] = doc
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(text)
    return doc


def unmarked_candidates(passages: Sequence[Passage]) -> list[Candidate]:
    """The passages' quotable units, less any touching text that ingest marked as planted
    instructions: no stem, key, distractor or model answer is built from such text.

    Each passage is read alone, so foils numbered like an item's passages never lend it their marks.
    """
    return [
        candidate
        for passage in passages
        for candidate in candidate_sentences(
            [passage], excluded={passage.n: passage.injection_spans} if passage.injection_spans else None
        )
    ]


@dataclass(frozen=True, slots=True)
class Sentence:
    """A content sentence as quoted (``text``), as asked (``asked``: no "Note that"), parsed."""

    text: str
    asked: str
    doc: Doc
    passage: Passage
    terms: list[Term] = field(default_factory=list)


def content_sentences(passages: Sequence[Passage], avoid: set[str] = frozenset()) -> list[Sentence]:  # type: ignore[assignment]
    """The passages' content sentences in passage order, each once, none in ``avoid`` (normalised)."""
    by_n = {p.n: p for p in passages}
    out: list[Sentence] = []
    seen: set[str] = set()
    candidates = unmarked_candidates(passages)
    fresh = list(dict.fromkeys(clean_sentence(c.text) for c in candidates if c.kind in {"sentence", "item"}))
    fresh = [t for t in fresh if t not in _CACHE and len(t.split()) >= MIN_WORDS]
    for text, doc in zip(fresh, parse_many(fresh), strict=True):
        _CACHE[text] = doc
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    for c in candidates:
        passage = by_n.get(c.n)
        if passage is None or c.kind not in {"sentence", "item"} or not content_section(passage.section):
            continue
        key = normal_words(c.text)
        if key in seen or key in avoid:
            continue
        seen.add(key)
        asked = clean_sentence(c.text)
        if not MIN_WORDS <= len(asked.split()) <= MAX_WORDS:
            continue
        doc = parsed(asked)
        if content_sentence(doc):
            out.append(Sentence(c.text, asked, doc, passage, terms(doc)))
    return out


def seeded(sentences: Sequence[Sentence], seed: int, index: int) -> list[Sentence]:
    """The sentences in the seed's order of parts (``rag_common.text.seeding``: its own part of the
    material, then the next seed's, ...), and in each part passage by passage (the retriever's first
    is the question's seeded topic, the others in a seeded order), each passage's in the paper's own
    order (one shuffle per seed) starting at the ``index``-th question's own place. Questions on the
    same passages start from different sentences; seeds of a four from different parts, even where a
    form finds what it needs in few sentences (a definition to compare) and the topic's passage has
    none of its own part."""
    numbers = list(dict.fromkeys(s.passage.n for s in sentences))
    rest = numbers[1:]
    random.Random(f"{seed}:{index}").shuffle(rest)  # after the topic's passage, the others in a seeded order
    parts: list[list[list[Sentence]]] = [[] for _ in range(SEEDS_APART)]
    for n in numbers[:1] + rest:
        order = sorted((s for s in sentences if s.passage.n == n), key=lambda s: normal_words(s.text))
        random.Random(f"{seed}:{n}:{len(order)}").shuffle(order)
        for rank in range(SEEDS_APART):
            part = [s for s in order if seed_rank(normal_words(s.text), seed) == rank]
            start = index % len(part) if part else 0
            parts[rank].append(part[start:] + part[:start])
    return [s for part in parts for passage in part for s in passage]
