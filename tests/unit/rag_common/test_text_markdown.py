"""Markdown sections (rag_common.text.markdown): headings as CommonMark reads them."""

from __future__ import annotations

import pytest

from rag_common.text.markdown import MAX_HEADING_CHARS, Section, sections, strip_front_matter

pytestmark = pytest.mark.unit


def paths(text: str, *, late_titles: bool = True) -> list[tuple[str, ...]]:
    return [s.path for s in sections(text, late_titles=late_titles)]


def test_headings_nest_into_paths_and_keep_their_lines() -> None:
    found = sections("Intro.\n# Pricing\nPlans.\n## Basic ##\nBasic text.\n# C# Guide\nCode.")
    assert found == [
        Section((), ["Intro."]),
        Section(("Pricing",), ["Plans."]),
        Section(("Pricing", "Basic"), ["Basic text."]),
        Section(("C# Guide",), ["Code."]),
    ]


def test_a_hash_line_inside_code_is_no_heading() -> None:
    text = "# Setup\n```bash\n# install it\n```\n~~~\n## still code\n~~~\n\n    # indented code\n"
    assert paths(text) == [(), ("Setup",)]
    assert sections(text)[1].lines[:3] == ["```bash", "# install it", "```"]


def test_a_hash_line_in_a_quote_a_list_item_or_an_html_block_is_no_heading() -> None:
    text = "# Doc\n> # quoted\n\n- item\n\n  # in the item\n\n<Note>\n# inside\n</Note>\n"
    assert paths(text) == [(), ("Doc",)]


def test_an_underlined_title_stays_text() -> None:
    found = sections("# Doc\nHere are more examples:\n---\nExample 2\n")
    assert [s.path for s in found] == [(), ("Doc",)]
    assert found[1].lines == ["Here are more examples:", "---", "Example 2", ""]


def test_empty_and_overlong_headings_cut_nothing() -> None:
    long_title = "word " * (MAX_HEADING_CHARS // 5 + 1)
    found = sections(f"# Doc\n#\nText.\n# {long_title}\nMore.")
    assert [s.path for s in found] == [(), ("Doc",)]
    assert found[1].lines == ["Text.", long_title.strip(), "More."]


def test_a_late_level_one_heading_is_text_when_titles_come_first() -> None:
    text = "# Embeddings\n## Voyage\nInstall it.\n# Embed the documents\nvo.embed(texts)"
    assert paths(text)[-1] == ("Embed the documents",)
    lenient = sections(text, late_titles=False)
    assert [s.path for s in lenient] == [(), ("Embeddings",), ("Embeddings", "Voyage")]
    assert lenient[-1].lines == ["Install it.", "# Embed the documents", "vo.embed(texts)"]


def test_front_matter_is_dropped_before_reading() -> None:
    text = "---\ntitle: Secret\n---\n# Doc\nBody."
    assert strip_front_matter(text) == "# Doc\nBody."
    assert sections(text) == [Section(()), Section(("Doc",), ["Body."])]
    assert strip_front_matter("---\nno end") == "---\nno end"
