"""What the generator reads: neighbour expansion and a token budget over the picked hits (pure).

Ranking picks chunks; a chunk of 200 tokens often starts mid-explanation or stops before the
sentence that answers. Neighbour expansion joins the chunk before and after it when they belong to
the same section (and page), so the passage reads as a whole; a token budget caps what all the
passages together cost the generator, dropping the lowest-ranked passages first and expanding
only while the budget allows. Neither step changes which (source, section, page) is returned or
in which order, so the retrieval metrics do not move; what moves is what the answer can quote.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from rag_common.store.contract import Hit

Spans = list[tuple[int, int]]


def _spans(payload: Mapping[str, Any]) -> Spans:
    return [(int(a), int(b)) for a, b in payload.get("injection_spans") or []]


def overlap(left: str, right: str, min_chars: int = 8) -> int:
    """Length of the longest suffix of ``left`` that is a prefix of ``right`` (chunks overlap by
    some tokens at ingest); 0 when they share less than ``min_chars``."""
    if min(len(left), len(right)) < min_chars:
        return 0
    probe = right[:min_chars]
    position = left.find(probe, max(0, len(left) - len(right)))
    while position != -1:  # the earliest start that matches is the longest overlap
        if right.startswith(left[position:]):
            return len(left) - position
        position = left.find(probe, position + 1)
    return 0


def join(left: str, left_spans: Spans, right: str, right_spans: Spans) -> tuple[str, Spans]:
    """``left`` then ``right`` without the text they share; ``right``'s spans moved to match."""
    shared = overlap(left, right)
    if shared:
        text, shift = left + right[shared:], len(left) - shared
    else:
        text, shift = f"{left}\n{right}", len(left) + 1
    spans = left_spans + [(a + shift, b + shift) for a, b in right_spans]
    merged: Spans = []
    for a, b in sorted(set(spans)):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return text, merged


def same_unit(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two chunks of one section of one document (and one page: a PDF passage keeps its page)."""
    return (
        a.get("document_id") == b.get("document_id")
        and a.get("section", "") == b.get("section", "")
        and a.get("page") == b.get("page")
    )


def neighbour_keys(hits: Sequence[Hit], radius: int = 1) -> list[tuple[str, str, int]]:
    """(document_id, version, chunk_index) of the chunks around each hit, for the store to fetch."""
    keys: list[tuple[str, str, int]] = []
    for h in hits:
        doc, version = str(h.payload.get("document_id", "")), str(h.payload.get("content_hash", ""))
        index = int(h.payload.get("chunk_index", 0))
        if not doc or not version:
            continue
        for step in range(1, radius + 1):
            for i in (index - step, index + step):
                if i >= 0 and (doc, version, i) not in keys:
                    keys.append((doc, version, i))
    return keys


def expand(
    hit: Hit, chunks: Mapping[tuple[str, int], Mapping[str, Any]], radius: int = 1, skip: frozenset[int] = frozenset()
) -> Hit:
    """The hit with up to ``radius`` neighbouring chunks of the same section joined on each side.

    ``skip`` holds chunk indexes shown elsewhere already (another passage of the same document),
    which are not repeated. The payload gains ``chunk_span`` (first and last chunk index joined).
    When a joined chunk was stored without marks (indexed before ingest marked chunks), the joined
    payload has none either, so the retriever marks the joined text (``selection.marked_spans``).
    """
    p = hit.payload
    doc, index = str(p.get("document_id", "")), int(p.get("chunk_index", 0))
    text, spans = str(p.get("text", "")), _spans(p)
    marked = "injection_spans" in p
    first = last = index
    for step in range(1, radius + 1):
        before = chunks.get((doc, index - step))
        if before is None or index - step in skip or not same_unit(before, p) or first != index - step + 1:
            break
        text, spans = join(str(before.get("text", "")), _spans(before), text, spans)
        marked = marked and "injection_spans" in before
        first = index - step
    for step in range(1, radius + 1):
        after = chunks.get((doc, index + step))
        if after is None or index + step in skip or not same_unit(after, p) or last != index + step - 1:
            break
        text, spans = join(text, spans, str(after.get("text", "")), _spans(after))
        marked = marked and "injection_spans" in after
        last = index + step
    if first == last:
        return hit
    payload = {**p, "text": text, "injection_spans": [list(s) for s in spans], "chunk_span": [first, last]}
    if not marked:
        del payload["injection_spans"]
    return replace(hit, payload=payload)


def estimate_tokens(text: str) -> int:
    """About four characters a token: the usual rule for English under the generators' tokenizers,
    free to compute (running the embedding model's tokenizer on every passage cost tens of
    milliseconds per question on this machine), and the generator's own tokenizer is not ours."""
    return (len(text) + 3) // 4


def fit_budget(hits: Sequence[Hit], budget: int, count: Callable[[str], int]) -> list[Hit]:
    """The hits in rank order while their texts together stay within ``budget`` tokens; the first
    is always kept (a too-long best passage is still better than none). ``budget`` 0 = no limit."""
    if budget <= 0:
        return list(hits)
    kept: list[Hit] = []
    used = 0
    for h in hits:
        cost = count(str(h.payload.get("text", "")))
        if kept and used + cost > budget:
            break
        kept.append(h)
        used += cost
    return kept


def expand_within(
    hits: Sequence[Hit],
    chunks: Mapping[tuple[str, int], Mapping[str, Any]],
    *,
    radius: int,
    budget: int,
    count: Callable[[str], int],
) -> list[Hit]:
    """Expand the hits in rank order, each only if the total stays within ``budget`` (0 = no limit).

    A chunk already returned as its own passage, or joined to a better-ranked one, is not joined
    again, so the generator never reads the same text twice.
    """
    shown: dict[str, set[int]] = {}
    for h in hits:
        shown.setdefault(str(h.payload.get("document_id", "")), set()).add(int(h.payload.get("chunk_index", 0)))
    used = sum(count(str(h.payload.get("text", ""))) for h in hits)
    out: list[Hit] = []
    for h in hits:
        doc = str(h.payload.get("document_id", ""))
        own = int(h.payload.get("chunk_index", 0))
        bigger = expand(h, chunks, radius, frozenset(shown[doc] - {own}))
        if bigger is not h:
            first, last = bigger.payload["chunk_span"]
            # the joined chunks' own counts: a little over the joined text's (their overlap counts twice)
            extra = sum(count(str(chunks[(doc, i)].get("text", ""))) for i in range(first, last + 1) if i != own)
            if budget <= 0 or used + extra <= budget:
                used += extra
                shown[doc].update(range(first, last + 1))
                h = bigger
        out.append(h)
    return out
