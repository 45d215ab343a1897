"""``rag docs`` lists every page by default, or one page with ``--limit``/``--after`` and says how to get the next."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from rich.console import Console

from rag_client.cli import build_parser, cmd_docs
from rag_client.client import RagClient

pytestmark = pytest.mark.unit

CURSOR = "docs:" + "b" * 32


def record(source: str, document_id: str) -> dict[str, Any]:
    return {"document_id": document_id, "collection": "docs", "source": source, "status": "indexed", "chunks": 1}


def gateway(seen: list[httpx.URL]) -> httpx.MockTransport:
    """Two pages: ``zeta.md`` first (ids order them), then ``alpha.md``."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        if request.url.params.get("after") == CURSOR:
            return httpx.Response(200, json={"documents": [record("alpha.md", "c" * 32)], "next": None})
        return httpx.Response(200, json={"documents": [record("zeta.md", "b" * 32)], "next": CURSOR})

    return httpx.MockTransport(handler)


def run_docs(argv: list[str], seen: list[httpx.URL]) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    with RagClient("http://gw", transport=gateway(seen)) as client:
        assert cmd_docs(console, client, build_parser().parse_args(["docs", *argv])) == 0
    return out.getvalue()


def test_by_default_every_page_is_listed_by_source() -> None:
    seen: list[httpx.URL] = []
    text = run_docs([], seen)
    assert len(seen) == 2
    assert text.index("alpha.md") < text.index("zeta.md")
    assert "2 documents" in text
    assert "--after" not in text


def test_one_page_says_how_to_ask_for_the_next() -> None:
    seen: list[httpx.URL] = []
    text = run_docs(["--limit", "1"], seen)
    assert [url.params.get("limit") for url in seen] == ["1"]
    assert "zeta.md" in text
    assert "alpha.md" not in text
    assert f"more: rag docs --after {CURSOR}" in text
    last: list[httpx.URL] = []
    assert "alpha.md" in run_docs(["--after", CURSOR], last)
    assert last[0].params.get("after") == CURSOR
