"""Unit tests for the learned reranker: its features and the order its weights give."""

from __future__ import annotations

import pytest

from benchmarks.retrieval_lab import FEATURES, LEARNED_WEIGHTS, LearnedReranker, candidate_features
from rag_common.store.vectors import Hit

pytestmark = pytest.mark.unit


def hit(source: str, score: float, section: str, similarity: float = 0.5, **extra: object) -> Hit:
    payload = {"source": source, "section": section, "chunk_index": 0, "document_id": source, **extra}
    return Hit(score=score, similarity=similarity, payload=payload)


def weights(**named: float) -> list[float]:
    return [named.get(name, 0.0) for name in FEATURES]


def test_every_candidate_gets_one_value_per_feature() -> None:
    hits = [hit("a.md", 1.0, "Streaming", 0.6, text="stream events"), hit("b.md", 0.5, "Batches", 0.4)]
    rows = candidate_features("How do I stream events?", hits)
    assert len(rows) == 2
    assert all(len(row) == len(FEATURES) for row in rows)
    first = dict(zip(FEATURES, rows[0], strict=True))
    assert first["relevance"] == 1.0
    assert first["fused_rank"] == 1.0
    assert first["top_file"] == 1.0
    assert first["similarity_gap"] == 0.0
    assert first["text_share"] == 1.0


def test_the_dense_rank_is_the_order_of_the_cosines() -> None:
    hits = [hit("a.md", 1.0, "A", similarity=0.3), hit("b.md", 0.5, "B", similarity=0.7)]
    rows = [dict(zip(FEATURES, row, strict=True)) for row in candidate_features("anything", hits)]
    assert [r["dense_rank"] for r in rows] == [0.5, 1.0]
    assert rows[0]["similarity_gap"] == pytest.approx(-0.4)


def test_a_weight_on_cosine_puts_the_most_similar_candidate_first() -> None:
    hits = [hit("a.md", 1.0, "A", similarity=0.3), hit("b.md", 0.5, "B", similarity=0.7)]
    ranked = LearnedReranker(weights(similarity=1.0)).rerank("anything", hits)
    assert [h.payload["source"] for h in ranked] == ["b.md", "a.md"]


def test_a_weight_on_heading_coverage_lifts_the_section_the_question_names() -> None:
    hits = [
        hit("a.md", 1.0, "Overview"),
        hit("b.md", 0.9, "Prompt caching pricing"),
        hit("c.md", 0.0, "Other"),
    ]
    ranked = LearnedReranker(weights(relevance=1.0, heading_coverage=1.0)).rerank(
        "What does prompt caching pricing look like?", hits
    )
    assert ranked[0].payload["section"] == "Prompt caching pricing"


def test_the_shipped_weights_name_every_feature() -> None:
    assert LearnedReranker(LEARNED_WEIGHTS).weights == list(LEARNED_WEIGHTS)
    assert len(LEARNED_WEIGHTS) == len(FEATURES)


def test_weights_of_the_wrong_length_are_refused() -> None:
    with pytest.raises(ValueError, match="weights"):
        LearnedReranker([1.0])
