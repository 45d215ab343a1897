"""Unit tests for what ingest embeds and stores beside a chunk's text: context header, boilerplate flag,
and the index version that makes a changed chunking setting re-index."""

from __future__ import annotations

import pytest

from rag_common.wire.messages import IngestRequested
from rag_ingest.chunking import Chunk
from rag_ingest.pipeline import (
    chunk_payload,
    context_header,
    document_title,
    embedding_texts,
    index_version,
    is_boilerplate,
)
from rag_ingest.settings import IngestSettings

pytestmark = pytest.mark.unit


def chunk(text: str, path: tuple[str, ...] = (), page: int | None = None) -> Chunk:
    return Chunk(text, path[-1] if path else "", path, page, 0, "text", "h")


def request(source: str) -> IngestRequested:
    return IngestRequested(request_id="r", document_id="d", source=source, object_name="o", content_hash="c", size=1)


@pytest.mark.parametrize(
    ("source", "title"),
    [
        ("docs/build-with-claude/embeddings.md", "embeddings"),
        ("Northwind_Standard_Benefits_Details.pdf", "Northwind Standard Benefits Details"),
        ("pricing.md", "pricing"),
    ],
)
def test_document_title_comes_from_folder_and_file_name(source: str, title: str) -> None:
    assert document_title(source) == title


def test_context_header_modes() -> None:
    c = chunk("Voyage offers models.", ("Embeddings", "How to get embeddings"))
    assert context_header("docs/embeddings.md", c, "off") == ""
    assert context_header("docs/embeddings.md", c, "path") == "Embeddings > How to get embeddings"
    # the first heading already is the title; another file name is put before the path
    assert context_header("docs/embeddings.md", c, "title") == "Embeddings > How to get embeddings"
    assert context_header("docs/voyage.md", c, "title") == "voyage > Embeddings > How to get embeddings"
    assert context_header("plan.pdf", chunk("Co-pay is $20.", page=3), "title") == "plan"
    # fallback: the heading path where there is one, the title only for a chunk under no heading
    assert context_header("docs/voyage.md", c, "fallback") == "Embeddings > How to get embeddings"
    assert context_header("Health_Plus.pdf", chunk("Co-pay is $20.", page=3), "fallback") == "Health Plus"


def test_header_is_embedded_but_never_stored_as_text() -> None:
    settings = IngestSettings(context_headers="title")
    c = chunk("Co-pay is $20.", ("Costs",), page=3)
    req = request("Health_Plus.pdf")
    assert embedding_texts(req, [c], settings) == ["Health Plus > Costs\nCo-pay is $20."]
    assert chunk_payload(req, c, settings).text == "Co-pay is $20."


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ("Follow the Quickstart.\nCheck out the API Reference.", ("Guide", "Next steps"), True),
        ("Explore the cookbook.", ("Models", "Get started with Claude"), True),
        ("[Quickstart](https://x.io/q) · [API](https://x.io/api) · [Cookbook](https://x.io/c)", ("Intro",), True),
        ("Install the package with pip, then set VOYAGE_API_KEY. See https://x.io for more.", ("Setup",), False),
        ("Getting started costs nothing: the free tier has 3 projects.", ("Getting started with Voyage AI",), False),
    ],
)
def test_boilerplate_is_navigation_not_content(text: str, path: tuple[str, ...], expected: bool) -> None:
    assert is_boilerplate(chunk(text, path)) is expected


def test_boilerplate_flag_can_be_switched_off() -> None:
    c = chunk("Read on.", ("Next steps",))
    assert chunk_payload(request("a.md"), c, IngestSettings(flag_boilerplate=True)).boilerplate is True
    assert chunk_payload(request("a.md"), c, IngestSettings(flag_boilerplate=False)).boilerplate is False


def test_index_version_changes_with_chunking_settings_only() -> None:
    base = IngestSettings()
    assert index_version("abc", base) == index_version("abc", IngestSettings())
    assert index_version("abc", base).startswith("abc:")
    assert index_version("abd", base) != index_version("abc", base)
    for changed in (
        IngestSettings(chunk_max_tokens=240),
        IngestSettings(context_headers="off" if base.context_headers != "off" else "path"),
        IngestSettings(flag_boilerplate=not base.flag_boilerplate),
        IngestSettings(pdf_headings=not base.pdf_headings),
        IngestSettings(code_comment_headings=not base.code_comment_headings),
        IngestSettings(bm25_avg_len=256.0),  # BM25 vectors change: the chunks are written again
    ):
        assert index_version("abc", changed) != index_version("abc", base)
    assert index_version("abc", IngestSettings(concurrency=7)) == index_version("abc", base)
