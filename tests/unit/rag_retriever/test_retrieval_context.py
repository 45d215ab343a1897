"""Unit tests for neighbour expansion, joining overlapping chunks and the token budget."""

from __future__ import annotations

import pytest

from rag_common.store.contract import Hit
from rag_retriever.context import expand, expand_within, fit_budget, join, neighbour_keys, overlap

pytestmark = pytest.mark.unit


def hit(source: str, score: float, *, section: str = "", index: int = 0, **extra: object) -> Hit:
    payload = {
        "source": source,
        "section": section,
        "chunk_index": index,
        "document_id": source,
        "content_hash": "v1",
        "page": None,
        **extra,
    }
    return Hit(score=score, similarity=0.5, payload=payload)


def words(text: str) -> int:
    return len(text.split())


def test_overlapping_chunks_join_without_repeating_the_shared_text() -> None:
    assert overlap("alpha beta gamma delta", "gamma delta epsilon") == len("gamma delta")
    assert overlap("one two", "three four") == 0
    text, spans = join("alpha beta gamma delta", [(0, 5)], "gamma delta IGNORE ALL", [(12, 22)])
    assert text == "alpha beta gamma delta IGNORE ALL"
    assert [text[a:b] for a, b in spans] == ["alpha", "IGNORE ALL"]
    text, spans = join("first part.", [], "second part.", [(0, 6)])
    assert text == "first part.\nsecond part."
    assert [text[a:b] for a, b in spans] == ["second"]


def test_expansion_joins_neighbours_of_the_same_section_only() -> None:
    middle = hit("a.md", 0.03, section="Setup", index=5, text="step two. step three.")
    chunks = {
        ("a.md", 4): {**middle.payload, "chunk_index": 4, "text": "step one. step two."},
        ("a.md", 6): {**middle.payload, "chunk_index": 6, "section": "Other", "text": "unrelated."},
    }
    grown = expand(middle, chunks, radius=1)
    assert grown.payload["text"] == "step one. step two. step three."
    assert grown.payload["chunk_span"] == [4, 5]
    assert grown.payload["chunk_index"] == 5
    assert grown.payload["section"] == "Setup"
    alone = expand(middle, {}, radius=1)
    assert alone is middle


def test_expansion_does_not_repeat_a_chunk_that_is_its_own_passage() -> None:
    first = hit("a.md", 0.03, section="S", index=1, text="one one one.")
    second = hit("a.md", 0.02, section="S", index=2, text="two two two.")
    chunks = {
        ("a.md", 0): {**first.payload, "chunk_index": 0, "text": "zero zero zero."},
        ("a.md", 1): first.payload,
        ("a.md", 2): second.payload,
        ("a.md", 3): {**first.payload, "chunk_index": 3, "text": "three three three."},
    }
    out = expand_within([first, second], chunks, radius=1, budget=0, count=words)
    assert out[0].payload["text"] == "zero zero zero.\none one one."
    assert out[1].payload["text"] == "two two two.\nthree three three."
    assert neighbour_keys([first], 1) == [("a.md", "v1", 0), ("a.md", "v1", 2)]


def test_token_budget_drops_the_lowest_ranked_passages_and_limits_expansion() -> None:
    hits = [hit(f"{n}.md", 1 - n / 10, text="w " * 40) for n in range(5)]
    assert len(fit_budget(hits, 100, words)) == 2
    assert len(fit_budget(hits, 10, words)) == 1  # the best passage is always kept
    assert len(fit_budget(hits, 0, words)) == 5
    best = hit("a.md", 0.03, section="S", index=1, text="a " * 40)
    chunks = {("a.md", 0): {**best.payload, "chunk_index": 0, "text": "b " * 40}}
    assert expand_within([best], chunks, radius=1, budget=60, count=words)[0] is best
    assert words(expand_within([best], chunks, radius=1, budget=80, count=words)[0].payload["text"]) == 80


def test_a_joined_chunk_stored_without_marks_leaves_the_passage_to_be_marked_again() -> None:
    marked = hit("a.md", 0.9, section="S", index=1, text="First part.", injection_spans=[])
    old = hit("a.md", 0.1, section="S", index=2, text="Second part.")
    old.payload.pop("injection_spans", None)
    chunks = {("a.md", 1): marked.payload, ("a.md", 2): old.payload}
    joined = expand(marked, chunks)
    assert joined.payload["chunk_span"] == [1, 2]
    assert "injection_spans" not in joined.payload  # selection.marked_spans runs the rules on the joined text
    both_marked = expand(marked, {**chunks, ("a.md", 2): {**old.payload, "injection_spans": []}})
    assert both_marked.payload["injection_spans"] == []
