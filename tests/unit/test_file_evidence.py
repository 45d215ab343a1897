"""Unit tests for document-level evidence: file strength, the boost by it, and a
second section of the first passage's file pulled into the first three."""

from __future__ import annotations

import pytest

from benchmarks.retrieval_lab import file_evidence, file_strength, second_section_of_top_file
from rag_common.store.vectors import Hit
from rag_retriever.selection import diversify

pytestmark = pytest.mark.unit


def hit(source: str, score: float, section: str, index: int = 0) -> Hit:
    payload = {"source": source, "section": section, "chunk_index": index, "document_id": source}
    return Hit(score=score, similarity=0.5, payload=payload)


def where(hits: list[Hit]) -> list[tuple[str, str]]:
    return [(h.payload["source"], h.payload["section"]) for h in hits]


def test_a_file_with_several_matching_sections_is_the_strongest() -> None:
    hits = [
        hit("pricing.md", 1.0, "Plans"),
        hit("tools.md", 0.9, "Overview"),
        hit("tools.md", 0.8, "Parameters"),
        hit("tools.md", 0.7, "Examples"),
        hit("faq.md", 0.0, "Misc"),
    ]
    strength = file_strength(hits)
    assert max(strength, key=lambda s: strength[s]) == "tools.md"
    assert strength["tools.md"] == 1.0
    assert strength["faq.md"] == 0.0


def test_a_long_section_counts_once_not_per_chunk() -> None:
    long_section = [hit("long.md", 1.0 - i / 100, "Reference", index=i) for i in range(5)]
    two_sections = [hit("two.md", 0.97, "Setup"), hit("two.md", 0.96, "Usage")]
    strength = file_strength([*long_section, *two_sections, hit("x.md", 0.0, "X")])
    assert strength["two.md"] > strength["long.md"]


def test_file_evidence_lifts_the_strong_files_sections_above_a_lone_match() -> None:
    hits = [
        hit("pricing.md", 1.0, "Plans"),
        hit("tools.md", 0.9, "Overview"),
        hit("changelog.md", 0.85, "March"),
        hit("tools.md", 0.8, "Parameters"),
        hit("faq.md", 0.0, "Misc"),
    ]
    ranked = file_evidence(hits, 0.5)
    assert where(ranked)[:3] == [("tools.md", "Overview"), ("tools.md", "Parameters"), ("pricing.md", "Plans")]


def test_file_evidence_weight_zero_keeps_the_order() -> None:
    hits = [hit("a.md", 1.0, "A"), hit("b.md", 0.9, "B"), hit("b.md", 0.8, "C")]
    assert file_evidence(hits, 0.0) == hits


def test_the_first_files_next_section_comes_in_at_rank_three() -> None:
    candidates = diversify(
        [
            hit("streaming.md", 1.0, "Overview"),
            hit("tools.md", 0.9, "Tool use"),
            hit("batch.md", 0.8, "Batches"),
            hit("errors.md", 0.7, "Errors"),
            hit("pricing.md", 0.65, "Plans"),
            hit("streaming.md", 0.6, "Event types"),
        ],
        10,
    )
    top = second_section_of_top_file(candidates[:5], candidates)
    assert where(top) == [
        ("streaming.md", "Overview"),
        ("tools.md", "Tool use"),
        ("streaming.md", "Event types"),
        ("batch.md", "Batches"),
        ("errors.md", "Errors"),
    ]


def test_nothing_moves_when_the_first_file_already_has_two_sections_in_the_first_three() -> None:
    candidates = [
        hit("streaming.md", 1.0, "Overview"),
        hit("streaming.md", 0.9, "Event types"),
        hit("batch.md", 0.8, "Batches"),
        hit("streaming.md", 0.7, "Errors"),
    ]
    assert second_section_of_top_file(candidates[:3], candidates) == candidates[:3]


def test_a_second_section_already_in_the_top_moves_up_without_a_duplicate() -> None:
    candidates = [
        hit("streaming.md", 1.0, "Overview"),
        hit("tools.md", 0.9, "Tool use"),
        hit("batch.md", 0.8, "Batches"),
        hit("streaming.md", 0.7, "Event types"),
        hit("pricing.md", 0.6, "Plans"),
    ]
    top = second_section_of_top_file(candidates, candidates)
    assert where(top) == [
        ("streaming.md", "Overview"),
        ("tools.md", "Tool use"),
        ("streaming.md", "Event types"),
        ("batch.md", "Batches"),
        ("pricing.md", "Plans"),
    ]


def test_a_file_with_one_section_gets_nothing_pulled_in() -> None:
    candidates = [hit("a.md", 1.0, "A"), hit("b.md", 0.9, "B"), hit("c.md", 0.8, "C"), hit("a.md", 0.7, "A", 1)]
    assert second_section_of_top_file(candidates[:3], candidates) == candidates[:3]
