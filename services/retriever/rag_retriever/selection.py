"""Turning fused search hits into the passages a generator sees, and deciding to refuse (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_common.store.contract import Hit
from rag_common.text.injection import find_instruction_spans
from rag_common.wire.messages import ChunkPayload, Passage, Route

REFUSAL_REASON = "no passage is similar enough to the question"


@dataclass(frozen=True, slots=True)
class Selection:
    passages: list[Passage]
    refused: bool
    reason: str | None


def diversify(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """Best hits with one chunk per (source, section, page) first, then the best of the rest.

    Long sections are split into several chunks whose near-identical text would otherwise fill
    the top ranks; giving each section one slot first lets other relevant sections in. Rank order
    is kept within each pass.
    """
    seen: set[tuple[str, str, object]] = set()
    first: list[Hit] = []
    rest: list[Hit] = []
    for h in hits:
        key = (str(h.payload.get("source", "")), str(h.payload.get("section", "")), h.payload.get("page"))
        (rest if key in seen else first).append(h)
        seen.add(key)
    return (first + rest)[:limit]


def marked_spans(payload: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The instruction-like spans of a stored chunk, as ingest marked them.

    Ingest runs the injection rules once per chunk and stores what they found (an empty list when
    nothing), so no stage runs them on a passage again. A chunk without the field was indexed
    before ingest marked chunks: the rules run on it here, once per question that retrieves it,
    until the document is indexed again.
    """
    if "injection_spans" in payload:
        return [(int(a), int(b)) for a, b in payload["injection_spans"] or []]
    return [(span.start, span.end) for span in find_instruction_spans(str(payload.get("text", "")))]


def to_passages(hits: Sequence[Hit]) -> list[Passage]:
    """Number hits 1..n in rank order, keeping where each came from and what ingest marked in it."""
    passages = []
    for i, h in enumerate(hits, start=1):
        chunk = ChunkPayload.model_validate(h.payload)
        if "injection_spans" not in h.payload:
            chunk.injection_spans = marked_spans(h.payload)
        passages.append(Passage.from_chunk(i, chunk, score=h.score, similarity=h.similarity))
    return passages


def select(hits: Sequence[Hit], min_similarity: float) -> Selection:
    """Refuse instead of guessing when even the best hit is not similar enough to the question."""
    passages = to_passages(hits)
    best = max((p.similarity for p in passages), default=0.0)
    if not passages or best < min_similarity:
        reason = f"{REFUSAL_REASON} (best {best:.2f} < {min_similarity:.2f})"
        return Selection(passages=passages, refused=True, reason=reason)
    return Selection(passages=passages, refused=False, reason=None)


def escalate(route: Route, selection: Selection, spread: int, margin: float = 0.05) -> Route:
    """A fast-tier question whose top ``spread`` passages come from as many different documents, all
    about as relevant as the best one (cosine within ``margin``), needs the strong tier: the answer
    has to be assembled across sources. A weak third passage from another file does not count, nor
    does a passage with planted instructions: it is no source to assemble an answer from."""
    top = [p for p in selection.passages if not p.injection_spans][:spread]
    best = max((p.similarity for p in top), default=0.0)
    sources = {p.source for p in top if p.similarity >= best - margin}
    if route.tier != "fast" or selection.refused or len(sources) < spread:
        return route
    return route.model_copy(
        update={"tier": "strong", "reason": f"{route.reason}; escalated: top passages span {len(sources)} documents"}
    )
