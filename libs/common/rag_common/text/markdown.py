"""Markdown sections (pure): a document cut at its headings, read by ``markdown-it-py`` (CommonMark).

Ingest keeps every chunk inside one section and cites the section's heading path, so what is a
heading follows CommonMark: a ``#`` line inside a fenced or indented code block, an HTML block, a
block quote or a list item is not one. Only ``#`` (ATX) headings at the top level of the document
cut it; the lines between them are handed back as written, for ingest to cut into paragraphs, code,
tables and Q:/A: pairs (``lines``).

An underlined ("setext") title is left as text: in the documents ingested, a ``---`` right under a
line is a separator written without a blank line, or part of code that lost its fences, far more
often than a title (one page of anthropic-docs alone would get fourteen false headings, such as
"Example 9 Output: <reasoning>...").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from markdown_it import MarkdownIt

# A "heading" longer than this is a paragraph someone marked up, not a title.
MAX_HEADING_CHARS = 300


@dataclass(frozen=True, slots=True)
class Section:
    """The lines under one heading, with the path of headings above them.

    Attributes:
        path: The titles from the top-level heading down to this one; ``()`` before the first.
        lines: The section's lines as the document has them, headings left out.
    """

    path: tuple[str, ...]
    lines: list[str] = field(default_factory=list)


@cache
def _parser() -> MarkdownIt:
    # Only the block structure is needed: inline markup (emphasis, links) stays as written.
    return MarkdownIt("commonmark").disable("inline")


def sections(text: str, *, late_titles: bool = True) -> list[Section]:
    r"""Cut a Markdown document into sections at its top-level headings.

    A leading YAML front-matter block is dropped first (metadata, not content). A heading's title
    is its text without the ``#`` marks; an empty heading cuts nothing, and one longer than
    ``MAX_HEADING_CHARS`` stays in the text as a line of its own.

    Args:
        text: The document, with ``\\n`` line ends.
        late_titles: When False, a level-1 heading after a deeper one is a line of text, not a
            heading: documents whose code lost its fences have Python comments (``# Embed the
            documents``) that would otherwise relabel the rest of a section.

    Returns:
        The sections in document order, the first one (path ``()``) holding what comes before
        the first heading, possibly nothing.
    """
    source = strip_front_matter(text)
    lines = source.split("\n")
    found = [Section(())]
    stack: list[tuple[int, str]] = []
    deeper, cursor = False, 0
    tokens = _parser().parse(source)
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None or token.markup[:1] != "#":
            continue
        start, end = token.map
        found[-1].lines.extend(lines[cursor:start])
        cursor = end
        level = int(token.tag[1:])
        title = " ".join(tokens[index + 1].content.split())
        if not late_titles and deeper and level == 1:
            found[-1].lines.extend(lines[start:end])
        elif len(title) > MAX_HEADING_CHARS:
            found[-1].lines.append(title)
        elif title:
            deeper = deeper or level > 1
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            found.append(Section(tuple(name for _, name in stack)))
    found[-1].lines.extend(lines[cursor:])
    return found


def strip_front_matter(text: str) -> str:
    """Drop a leading YAML block fenced by ``---`` lines (closed by ``---`` or ``...``).

    Args:
        text: The document.

    Returns:
        The document without the block, or unchanged when it does not open with one.
    """
    lines = text.split("\n")
    if lines[0].strip() == "---":
        for index, line in enumerate(lines[1:], start=1):
            if line.strip() in ("---", "..."):
                return "\n".join(lines[index + 1 :])
    return text
