"""Word (.docx) and PowerPoint (.pptx) files into blocks, after the archive is checked.

Both formats are ZIP archives of XML parts. Before python-docx or python-pptx sees one, the
archive is read member by member in bounded steps: a corrupt archive, one that would unpack past
``ArchiveLimits`` (a zip bomb, or media too large to hold), one with too many members, encrypted
members or a VBA project (macros) is refused with a reason. Nothing in a file is run or fetched:
macros are refused, external links (linked images, templates, hyperlinks) are relationships that
are never followed, images are never decoded, and the XML parsers of both libraries leave entities
unexpanded.

Structure kept: Word headings make the heading path, lists stay "- item" / "1. item" lines, table
rows become "Header: value; Header: value" blocks. A slide is one section titled by the slide's
title with the slide number as its page; its speaker notes follow as a block marked
"Speaker notes:". Text a reader does not see (a hidden run, white or tiny text, a box off the
slide) is left out and counted by reason (``rag_ingest.office_hidden``); speaker notes are content.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import docx
from docx.document import Document as WordDocument
from docx.table import Table as WordTable
from docx.text.paragraph import Paragraph as WordParagraph
from pptx import Presentation
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide

from rag_common.text.lines import table_row
from rag_ingest.blocks import Block, ParseError
from rag_ingest.hidden import RGB, HiddenText
from rag_ingest.office_hidden import (
    hide_shape,
    off_slide,
    page_background,
    solid_fill,
    visible_frame_paragraphs,
    visible_paragraph_text,
)

# An OLE compound file: a password-protected Office file, or a legacy binary .doc/.ppt.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_MACRO_PARTS = frozenset({"vbaproject.bin", "vbadata.xml"})
_READ_STEP = 1 << 20
_HEADING_STYLE = re.compile(r"^heading\s+([1-9])$", re.IGNORECASE)
_MAX_STYLE_DEPTH = 8
_WRONG_KIND = re.compile(
    r"content type is '([^']+)'"
)  # how far up "based on" style chains a heading style is looked for
NOTES_LABEL = "Speaker notes:"


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """Bounds checked before an archive is parsed (``RAG_INGEST_ARCHIVE_MAX_*``)."""

    max_unpacked_bytes: int = 100 * 2**20
    max_members: int = 5000


def check_archive(data: bytes, what: str, limits: ArchiveLimits) -> None:
    """Refuse an Office archive that is corrupt, a bomb, encrypted or carries macros.

    Every member is decompressed in bounded steps and its real size counted (a member's declared
    size can lie), so the parser that reads the same bytes afterwards never unpacks more than
    ``limits.max_unpacked_bytes``; a member whose bytes do not match its CRC is corrupt.
    """
    if data.startswith(_OLE_MAGIC):
        raise ParseError(
            f"not a {what} file in the Office Open XML format: a password-protected or legacy binary "
            "Office file; save it unprotected in the current format"
        )
    if not data.startswith(b"PK"):
        raise ParseError(f"not a {what} file: it is not a ZIP archive")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if len(members) > limits.max_members:
                raise ParseError(
                    f"{what} archive has {len(members)} members, more than the limit of {limits.max_members} "
                    "(RAG_INGEST_ARCHIVE_MAX_MEMBERS)"
                )
            macros = [m.filename for m in members if PurePosixPath(m.filename).name.lower() in _MACRO_PARTS]
            if macros:
                raise ParseError(
                    f"{what} file contains macros ({macros[0]}); macros are never run: save it without macros"
                )
            if any(m.flag_bits & 0x1 for m in members):
                raise ParseError(f"{what} archive has encrypted members")
            _count_unpacked(archive, members, what, limits.max_unpacked_bytes)
    except ParseError:
        raise
    # zipfile raises NotImplementedError for a compression method it cannot read (Deflate64, PPMd):
    # such a file is unreadable here, so it fails like a corrupt one.
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise ParseError(f"corrupt {what} archive: {type(exc).__name__}: {exc}") from exc


def _count_unpacked(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], what: str, limit: int) -> None:
    declared = sum(m.file_size for m in members)
    if declared > limit:
        raise ParseError(_too_big(what, f"would unpack to {declared} bytes", limit))
    total = 0
    for member in members:
        with archive.open(member) as stream:
            while chunk := stream.read(_READ_STEP):
                total += len(chunk)
                if total > limit:
                    raise ParseError(_too_big(what, f"unpacks to more than {limit} bytes", limit))


def _too_big(what: str, how: str, limit: int) -> str:
    return (
        f"{what} archive {how}, more than the {limit} byte limit (RAG_INGEST_ARCHIVE_MAX_BYTES): "
        "a zip bomb or very large embedded media"
    )


def parse_docx(data: bytes, limits: ArchiveLimits, hidden: HiddenText | None = None) -> list[Block]:
    """A Word document's body in order: headings, paragraphs, lists and table rows; the text a
    reader does not see is left out and counted in ``hidden``."""
    check_archive(data, "Word", limits)
    try:
        document = docx.Document(io.BytesIO(data))
        return list(_docx_blocks(document, hidden if hidden is not None else HiddenText()))
    except ParseError:
        raise
    except Exception as exc:  # a malformed part makes python-docx raise many unrelated exception types
        raise _read_error("Word", "cannot read Word document", exc) from exc


def _docx_blocks(document: WordDocument, hidden: HiddenText) -> Iterator[Block]:
    page = page_background(document.element)
    stack: list[tuple[int, str]] = []
    items: list[str] = []  # the list being read, as "- item" lines
    numbers: dict[int, int] = {}  # the next number of each numbered list level

    def path() -> tuple[str, ...]:
        return tuple(title for _, title in stack)

    def flush() -> Iterator[Block]:
        if items:
            yield Block("\n".join(items), path(), None, "text")
            items.clear()
            numbers.clear()

    for item in document.iter_inner_content():
        if isinstance(item, WordTable):
            yield from flush()
            yield from _table_blocks(_word_rows(item, page, hidden), path(), None)
            continue
        text = _clean(visible_paragraph_text(item, page, hidden))
        if not text:
            continue
        level = _heading_level(item)
        if level is not None:
            yield from flush()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            continue
        marker = _list_marker(item, numbers)
        if marker is not None:
            items.append(f"{marker} {text}")
            continue
        yield from flush()
        yield Block(text, path(), None, "text")
    yield from flush()


def _read_error(what: str, reading: str, exc: Exception) -> ParseError:
    wrong = _WRONG_KIND.search(str(exc)) if isinstance(exc, ValueError) else None
    if wrong:  # e.g. a presentation renamed .docx; the library's message names a BytesIO object
        return ParseError(f"not a {what} file: its main part is {wrong.group(1)}")
    return ParseError(f"{reading}: {type(exc).__name__}: {exc}")


def _heading_level(paragraph: WordParagraph) -> int | None:
    """1-9 for "Heading N" (or a style based on one), 0 for "Title" (above Heading 1), None for body text."""
    style = paragraph.style
    for _ in range(_MAX_STYLE_DEPTH):
        if style is None:
            return None
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
        style = style.base_style
    return None


def _list_marker(paragraph: WordParagraph, numbers: dict[int, int]) -> str | None:
    """ "- " (indented per level) for a list paragraph, "N." for a numbered one, None otherwise."""
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if "list" not in name.lower():
        return None
    level = int(name[-1]) - 1 if name[-1].isdigit() else 0
    indent = "  " * level
    if "number" in name.lower():
        for deeper in [k for k in numbers if k > level]:
            del numbers[deeper]
        numbers[level] = numbers.get(level, 0) + 1
        return f"{indent}{numbers[level]}."
    return f"{indent}-"


def _word_rows(table: WordTable, page: RGB | None, hidden: HiddenText) -> list[list[str]]:
    return [
        [_clean("\n".join(visible_paragraph_text(p, page, hidden) for p in cell.paragraphs)) for cell in row.cells]
        for row in table.rows
    ]


def _table_blocks(rows: list[list[str]], path: tuple[str, ...], page: int | None) -> Iterator[Block]:
    """The first row is the header row; every other row is a "Header: value; ..." block."""
    rows = [row for row in rows if any(row)]
    if not rows:
        return
    if len(rows) == 1:
        yield Block("; ".join(cell for cell in rows[0] if cell), path, page, "table")
        return
    headers = rows[0]
    for row in rows[1:]:
        text = table_row(headers, row)
        if text:
            yield Block(text, path, page, "table")


def _clean(text: str) -> str:
    """One line: Word's line breaks and tabs, PowerPoint's vertical tabs, runs of spaces."""
    return re.sub(r"\s+", " ", text.replace("\v", " ")).strip()


def parse_pptx(data: bytes, limits: ArchiveLimits, hidden: HiddenText | None = None) -> list[Block]:
    """One section per slide, titled by the slide's title, its number as the page; notes marked;
    the text a reader does not see is left out and counted in ``hidden``."""
    check_archive(data, "PowerPoint", limits)
    try:
        presentation = Presentation(io.BytesIO(data))
        seen = _Slides(
            presentation.slide_width, presentation.slide_height, hidden if hidden is not None else HiddenText()
        )
        return [
            block for number, slide in enumerate(presentation.slides, start=1) for block in _slide(slide, number, seen)
        ]
    except ParseError:
        raise
    except Exception as exc:  # a malformed part makes python-pptx raise many unrelated exception types
        raise _read_error("PowerPoint", "cannot read PowerPoint presentation", exc) from exc


@dataclass(frozen=True, slots=True)
class _Slides:
    """What deciding a slide's hidden text needs: the slide's size, and where to count what is left out."""

    width: int | None
    height: int | None
    hidden: HiddenText


def _slide(slide: Slide, number: int, seen: _Slides) -> list[Block]:
    title_shape = slide.shapes.title
    title = _clean(title_shape.text_frame.text) if title_shape is not None else ""
    path = (title or f"Slide {number}",)
    skip = title_shape.shape_id if title_shape is not None else None
    ground = None if slide.follow_master_background else solid_fill(slide.background.fill)
    blocks = list(_shape_blocks(slide.shapes, path, number, skip, seen, ground))
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = "\n".join(text for text in (_clean(p.text) for p in frame.paragraphs) if text) if frame else ""
        if notes:
            blocks.append(Block(f"{NOTES_LABEL} {notes}", path, number, "text"))
    if not blocks and title:  # a title-only slide (a section divider) is still findable
        blocks.append(Block(title, path, number, "text"))
    return blocks


def _shape_blocks(
    shapes: Iterable[BaseShape],
    path: tuple[str, ...],
    page: int,
    skip: int | None,
    seen: _Slides,
    ground: RGB | None,
    nested: bool = False,
) -> Iterator[Block]:
    """Text boxes, placeholders, tables and groups in the slide's order; pictures and charts skipped.

    A shape wholly off the slide is left out (a group's members are placed in the group's own
    coordinates, so only the group itself is checked)."""
    for shape in shapes:
        if shape.shape_id == skip:  # the title, already the section's name
            continue
        if not nested and off_slide(shape, seen.width, seen.height):
            hide_shape(seen.hidden, _shape_text(shape))
            continue
        if isinstance(shape, GroupShape):
            yield from _shape_blocks(shape.shapes, path, page, skip, seen, ground, nested=True)
        elif isinstance(shape, GraphicFrame) and shape.has_table:
            rows = [
                [
                    _clean(
                        " ".join(
                            t for _, t in visible_frame_paragraphs(cell.text_frame, _ground(cell, ground), seen.hidden)
                        )
                    )
                    for cell in row.cells
                ]
                for row in shape.table.rows
            ]
            yield from _table_blocks(rows, path, page)
        elif isinstance(shape, Shape) and shape.has_text_frame:
            paragraphs = visible_frame_paragraphs(shape.text_frame, _ground(shape, ground), seen.hidden)
            lines = [(level, _clean(text)) for level, text in paragraphs if _clean(text)]
            if len(lines) == 1:
                yield Block(lines[0][1], path, page, "text")
            elif lines:  # several paragraphs in one box are a slide's bullet list
                yield Block("\n".join(f"{'  ' * level}- {text}" for level, text in lines), path, page, "text")


def _ground(filled: Any, slide_ground: RGB | None) -> RGB | None:
    """A shape's or a cell's own solid fill, else the slide's background."""
    return solid_fill(filled.fill) or slide_ground


def _shape_text(shape: BaseShape) -> str:
    if isinstance(shape, GroupShape):
        return " ".join(_shape_text(member) for member in shape.shapes)
    if isinstance(shape, GraphicFrame) and shape.has_table:
        return " ".join(cell.text for row in shape.table.rows for cell in row.cells)
    return shape.text_frame.text if isinstance(shape, Shape) and shape.has_text_frame else ""
