"""Unit tests for the ranking rules between fused hits and passages: the keyword query, named source
first, MMR, and the reranker setting that refuses the rerankers measured worse."""

from __future__ import annotations

import pytest

from rag_common.store.contract import Hit
from rag_retriever.assessment import mmr
from rag_retriever.ranking import keyword_query, named_source, prefer_named_source, title_words
from rag_retriever.rerank import make_reranker

pytestmark = pytest.mark.unit


def hit(
    source: str, score: float, *, section: str = "", index: int = 0, dense: list[float] | None = None, **extra: object
) -> Hit:
    payload = {"source": source, "section": section, "chunk_index": index, "document_id": source, **extra}
    return Hit(score=score, similarity=0.5, payload=payload, dense=dense)


def test_mmr_skips_a_near_duplicate_for_a_different_passage() -> None:
    hits = [
        hit("a.md", 1.0, section="A", dense=[1.0, 0.0]),
        hit("b.md", 0.95, section="B", dense=[0.999, 0.045]),  # almost the same text as a.md
        hit("c.md", 0.90, section="C", dense=[0.0, 1.0]),
        hit("d.md", 0.0, section="D", dense=[-1.0, 0.0]),  # the weakest candidate sets relevance 0
    ]
    assert [h.payload["source"] for h in mmr(hits, 2, 0.7)] == ["a.md", "c.md"]
    # with lambda 1 only relevance counts
    assert [h.payload["source"] for h in mmr(hits, 2, 1.0)] == ["a.md", "b.md"]


def test_mmr_treats_a_second_chunk_of_a_picked_section_as_redundant() -> None:
    hits = [
        hit("a.md", 1.0, section="A", index=0, dense=[1.0, 0.0]),
        hit("a.md", 0.99, section="A", index=1, dense=[0.0, 1.0]),
        hit("b.md", 0.9, section="B", index=0, dense=[0.7, 0.7]),
        hit("d.md", 0.0, section="D", dense=[-1.0, 0.0]),
    ]
    picked = mmr(hits, 3, 0.7)
    assert [(h.payload["source"], h.payload["chunk_index"]) for h in picked] == [("a.md", 0), ("b.md", 0), ("a.md", 1)]


def test_keyword_query_keeps_the_subject_words() -> None:
    assert keyword_query("How can I use the Claude for Sheets extension?") == "Claude Sheets extension"
    assert keyword_query("What is it?") == "What is it?"


def test_no_reranker_when_off_and_the_measured_worse_ones_are_no_setting() -> None:
    assert make_reranker("off") is None
    for name in ("lexical", "heading", "learned"):
        with pytest.raises(ValueError, match="off or cross-encoder"):
            make_reranker(name)


def test_title_words_come_from_the_file_name_only() -> None:
    assert title_words("docs/x/Northwind_Health_Plus_Benefits_Details.pdf") == {
        "northwind",
        "health",
        "plus",
        "benefits",
        "details",
    }
    assert title_words("sales-brochure-2025.pdf") == {"sales", "brochure"}


PLUS = "Northwind_Health_Plus_Benefits_Details.pdf"


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("What does the Pro plan cost according to the community forum?", "community-forum.md"),
        ("Is acupuncture covered by Northwind Health Plus?", PLUS),
        ("Are eye exams covered in the Northwind Standard Benefits?", "Northwind_Standard_Benefits_Details.pdf"),
        ("Are eye exams covered by the Northwind Standard plan?", None),  # two words after "by": too few
        ("How are input deltas streamed with tool use?", None),  # a topic after "with", not a document
        ("Which Northwind plan covers hearing aids?", None),  # one title word names neither booklet
        ("How much does the Pro plan cost?", None),
        ("Why is the timeline view broken and not loading?", None),  # a topic, not a cited document
        (
            "How do I claim under the Northwind_Health_Plus_Benefits_Details.pdf?",
            "Northwind_Health_Plus_Benefits_Details.pdf",
        ),
    ],
)
def test_a_source_is_named_by_most_of_its_title(question: str, named: str | None) -> None:
    sources = [
        "community-forum.md",
        "pricing.md",
        "Northwind_Health_Plus_Benefits_Details.pdf",
        "Northwind_Standard_Benefits_Details.pdf",
        "timeline-view.md",
        "tool-use.md",
    ]
    assert named_source(question, sources) == named


def test_two_sources_named_equally_name_neither() -> None:
    assert (
        named_source(
            "Is it according to prompt caching or according to tool use?", ["prompt-caching.md", "tool-use.md"]
        )
        is None
    )


def test_the_named_sources_passages_come_first_in_their_order() -> None:
    hits = [
        hit("pricing.md", 0.9, section="Plans"),
        hit("community-forum.md", 0.8, section="Pricing thread"),
        hit("faq.md", 0.7),
        hit("community-forum.md", 0.3, section="Account help thread", index=1),
    ]
    ranked = prefer_named_source("What does the Pro plan cost according to the community forum?", hits)
    assert [(h.payload["source"], h.score) for h in ranked] == [
        ("community-forum.md", 0.8),
        ("community-forum.md", 0.3),
        ("pricing.md", 0.9),
        ("faq.md", 0.7),
    ]
    assert prefer_named_source("How much does the Pro plan cost?", hits) == hits
