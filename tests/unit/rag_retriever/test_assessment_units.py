"""Units as a teacher names them: a chapter by its topic, a deck by its title, a file without its
extension; a name that fits several parts is answered with the candidates."""

from __future__ import annotations

import pytest

from rag_common.transport.consuming import PermanentError
from rag_retriever.assessing import check_units
from rag_retriever.units import sections_of, unit_candidates, unit_sections

pytestmark = pytest.mark.unit

WORDS = " ".join(["word"] * 30)


def chunk(source: str, index: int, *path: str) -> dict[str, object]:
    return {"source": source, "document_id": source, "chunk_index": index, "text": WORDS, "section_path": list(path)}


COURSE = sections_of(
    [
        chunk("chapter2.docx", 0, "Chapter 2: Computer Networks"),
        chunk("chapter2.docx", 1, "Chapter 2: Computer Networks", "2.1 Cables and connectors"),
        chunk("chapter2.docx", 2, "Chapter 2: Computer Networks", "2.2 Introduction"),
        chunk("chapter3.docx", 0, "Module 3 - Routing", "Introduction"),
        chunk("routing-basics.pptx", 0, "Routing basics"),
        chunk("routing-basics.pptx", 1, "Static routes"),
        chunk("routing-basics.pptx", 2, "Dynamic routes"),
    ]
)


def headings(unit: str) -> list[str]:
    return [f"{s.source} > {s.heading}" for s in unit_sections(COURSE, unit)]


def test_a_chapter_is_found_by_its_topic_with_or_without_its_number() -> None:
    whole = [
        "chapter2.docx > Chapter 2: Computer Networks",
        "chapter2.docx > Chapter 2: Computer Networks > 2.1 Cables and connectors",
        "chapter2.docx > Chapter 2: Computer Networks > 2.2 Introduction",
    ]
    assert headings("Computer Networks") == whole
    assert headings("Chapter 2: Computer Networks") == whole
    assert headings("chapter 2") == whole
    assert headings("Cables and connectors") == [
        "chapter2.docx > Chapter 2: Computer Networks > 2.1 Cables and connectors"
    ]
    assert headings("Computer networks > 2.1 Cables and connectors") == headings("Cables and connectors")
    assert headings("Routing") == ["chapter3.docx > Module 3 - Routing > Introduction"]
    assert headings("Chapter 3: Computer Networks") == []


def test_a_deck_title_covers_every_slide_and_a_file_is_named_with_or_without_its_extension() -> None:
    slides = [
        "routing-basics.pptx > Dynamic routes",
        "routing-basics.pptx > Routing basics",
        "routing-basics.pptx > Static routes",
    ]
    assert headings("Routing basics") == slides
    assert headings("routing-basics") == slides
    assert headings("routing-basics.pptx") == slides
    assert len(headings("chapter2")) == 3
    assert unit_candidates(COURSE, "Routing basics") == ["routing-basics.pptx"]


def test_an_ambiguous_name_is_answered_with_the_candidates() -> None:
    assert unit_candidates(COURSE, "Introduction") == [
        "chapter2.docx > Chapter 2: Computer Networks > 2.2 Introduction",
        "chapter3.docx > Module 3 - Routing > Introduction",
    ]
    with pytest.raises(PermanentError) as refused:
        check_units(COURSE, ["Computer Networks", "Introduction"], "course")
    assert refused.value.code == "unit_ambiguous"
    assert refused.value.message == (
        "unit 'Introduction' names 2 parts of collection 'course': "
        "'chapter2.docx > Chapter 2: Computer Networks > 2.2 Introduction'; "
        "'chapter3.docx > Module 3 - Routing > Introduction'. "
        "Ask for one of them as written here (or several, as several units)"
    )
    for candidate in unit_candidates(COURSE, "Introduction"):  # each candidate names one part
        assert unit_candidates(COURSE, candidate) == [candidate]
    with pytest.raises(PermanentError) as missing:
        check_units(COURSE, ["Chapter 9: Wireless"], "course")
    assert missing.value.code == "unit_not_found"
    assert "Chapter 9: Wireless" in missing.value.message
