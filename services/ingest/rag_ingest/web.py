"""An HTML page's main content as Markdown, for the Markdown parser (headings, lists, tables kept).

trafilatura finds the main content and drops navigation, headers, footers, sidebars, comments,
scripts and forms; its Markdown output keeps headings as ``#`` lines, lists as ``-`` items and
tables as pipe tables, which the Markdown parser turns into heading paths, list text and
"Header: value" rows. Nothing is fetched: links, images, frames and stylesheets stay unread
(``extract`` parses the bytes it is given and never opens a URL), and no script runs.
"""

from __future__ import annotations

import logging

import trafilatura

from rag_ingest.blocks import ParseError
from rag_ingest.hidden import HiddenText
from rag_ingest.hidden_html import strip_hidden

# trafilatura logs every page it finds too short or empty at WARNING; the status says it once.
logging.getLogger("trafilatura").setLevel(logging.ERROR)


def html_to_markdown(data: bytes, hidden: HiddenText | None = None, *, keep_collapsed: bool = False) -> str:
    """The page's main text as Markdown; ParseError when the page has none.

    Text the page's styles hide from a reader is left out first and counted in ``hidden``
    (``rag_ingest.hidden_html``).
    """
    visible = strip_hidden(data, hidden if hidden is not None else HiddenText(), keep_collapsed=keep_collapsed)
    try:
        text = trafilatura.extract(
            visible,
            output_format="markdown",
            include_formatting=True,
            include_tables=True,
            include_comments=False,
            include_links=False,
            include_images=False,
            favor_recall=True,
            with_metadata=False,
            prune_xpath=["//nav"],  # never content; without it a page of links falls back to its menu
        )
    except Exception as exc:  # malformed markup makes the extractor raise many unrelated exception types
        raise ParseError(f"cannot read HTML page: {type(exc).__name__}: {exc}") from exc
    if not text or not text.strip():
        raise ParseError("HTML page has no main text (only navigation, scripts or markup)")
    return text
