"""Turn uploaded document bytes into structured blocks for the chunker.

Parsing is pure (bytes in, blocks out) so the ingest handler stays a thin wrapper and these
rules are tested without a broker. Each block keeps the heading path and page it came from:
the chunker uses them to keep a chunk inside one section, and answers cite them.
"""

import codecs
import io
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from pypdf import PdfReader

from rag_common.formats import SUPPORTED_EXTENSIONS

BlockKind = Literal["text", "table", "faq"]


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of document content plus the context needed to cite it."""

    text: str
    heading_path: tuple[str, ...]  # e.g. ("Pricing", "Plans"); () before any heading
    page: int | None  # 1-based for PDF, None otherwise
    kind: BlockKind


class ParseError(ValueError):
    """The file is malformed or unreadable; the message says what is wrong."""


class UnsupportedFileType(ValueError):
    """The file extension is not one the ingest service can parse."""


# Share of control characters above which decoded bytes are treated as binary, not text.
_MAX_CONTROL_SHARE = 0.1
_MAX_HEADING_CHARS = 80

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_UNDERLINE = re.compile(r"^\s*(={3,}|-{3,})\s*$")
_QUESTION_LINE = re.compile(r"^\s*Q:\s")
_ANSWER_LINE = re.compile(r"^\s*A:\s")

Section = tuple[tuple[str, ...], list[str]]


def document_format(filename: str) -> str:
    """Name the parser for a file ("markdown", "text" or "pdf") from its extension.

    Callers use this to reject an upload before reading it; it raises UnsupportedFileType.
    """
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    try:
        return SUPPORTED_EXTENSIONS[suffix]
    except KeyError:
        supported = ", ".join(SUPPORTED_EXTENSIONS)
        raise UnsupportedFileType(
            f"unsupported file type {suffix or '(no extension)'!r} for {filename!r}; supported: {supported}"
        ) from None


def parse_document(filename: str, data: bytes) -> list[Block]:
    """Parse a file into blocks in document order.

    Raises UnsupportedFileType for an unknown extension and ParseError when the bytes cannot
    be read as that format or hold no text, so the caller can report the reason to the user.
    """
    fmt = document_format(filename)
    if fmt == "pdf":
        blocks = _parse_pdf(data)
    else:
        text = _decode_text(data)
        sections = _markdown_sections(text) if fmt == "markdown" else _text_sections(text)
        blocks = [block for section in sections for block in _section_blocks(section)]
    if not blocks:
        raise ParseError("document has no text")
    return blocks


def _decode_text(data: bytes) -> str:
    """Decode text bytes, tolerating legacy encodings but refusing binary files."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ParseError(f"invalid UTF-16 text: {exc}") from exc
    elif b"\x00" in data:
        raise ParseError("file contains NUL bytes: it looks like binary data, not text")
    else:
        text = ""
        # cp1252 before latin-1: Windows text uses 0x80-0x9f for quotes and dashes, which
        # latin-1 would turn into invisible control characters. latin-1 never fails.
        for encoding in ("utf-8-sig", "cp1252", "latin-1"):
            try:
                text = data.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
    controls = sum(1 for ch in text if ch not in "\t\n\r\f\v" and unicodedata.category(ch) == "Cc")
    if controls > _MAX_CONTROL_SHARE * len(text):
        raise ParseError("file is mostly control characters: it looks like binary data, not text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _markdown_sections(text: str) -> list[Section]:
    """Split markdown into (heading path, body lines) on ATX headings outside code fences."""
    stack: list[tuple[int, str]] = []
    sections: list[Section] = [((), [])]
    fence: str | None = None
    for line in _strip_front_matter(text).split("\n"):
        heading = _ATX_HEADING.match(line) if fence is None else None
        if heading:
            title = re.sub(r"(?:^|[ \t]+)#+$", "", heading.group(2) or "").strip()
            if title:
                level = len(heading.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
                sections.append((tuple(name for _, name in stack), []))
            continue
        if fence is None:
            opener = _FENCE.match(line)
            fence = opener.group(1) if opener else None
        elif _closes_fence(line, fence):
            fence = None
        sections[-1][1].append(line)
    return sections


def _strip_front_matter(text: str) -> str:
    """Drop a leading `---` YAML block: metadata, not content to retrieve."""
    lines = text.split("\n")
    if lines[0].strip() == "---":
        for index, line in enumerate(lines[1:], start=1):
            if line.strip() in ("---", "..."):
                return "\n".join(lines[index + 1 :])
    return text


def _closes_fence(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def _text_sections(text: str) -> list[Section]:
    """Split plain text into sections, guessing headings from their shape.

    A heading is a line underlined with === or ---, an ALL-CAPS short line, or a short
    standalone line without closing punctuation (e.g. "Version 4.2 (2025-03-01)"). Levels are
    1 for === and ALL CAPS, 2 for ---, 3 otherwise, so version lines nest under a title.
    """
    paragraphs = [p.split("\n") for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    stack: list[tuple[int, str]] = []
    sections: list[Section] = [((), [])]
    for index, lines in enumerate(paragraphs):
        first = lines[0].strip()
        level, body = 0, lines
        if len(lines) > 1 and _UNDERLINE.match(lines[1]) and _is_short(first):
            level, body = (1 if "=" in lines[1] else 2), lines[2:]
        elif _is_short(first) and first.isupper() and (len(lines) == 1 or _is_title(first)):
            level, body = 1, lines[1:]
        elif len(lines) == 1 and _is_short(first) and (first[0].isupper() or first[0].isdigit()):
            level, body = 3, []
        # A lone last line is content, not a heading over nothing.
        if level and (body or index + 1 < len(paragraphs)):
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, first))
            sections.append((tuple(name for _, name in stack), []))
        else:
            body = lines
        sections[-1][1].extend([*body, ""])
    return sections


def _is_short(line: str) -> bool:
    return 0 < len(line) <= _MAX_HEADING_CHARS and line[-1] not in ".!?,;:"


def _is_title(line: str) -> bool:
    """Few words: tells a caps heading over its text from the first line of shouted prose."""
    return len(line.split()) <= 6


def _section_blocks(section: Section) -> list[Block]:
    """Blocks of one section; a question heading makes the whole section one FAQ block."""
    path, lines = section
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in lines)).strip()
    if not body:
        return []
    if path and path[-1].endswith("?"):
        return [Block(f"Q: {path[-1]}\nA: {body}", path, None, "faq")]
    return list(_body_blocks(lines, path, None))


def _body_blocks(lines: list[str], path: tuple[str, ...], page: int | None) -> Iterator[Block]:
    """Paragraphs, fenced code, table rows and Q:/A: pairs from the lines under one heading."""
    index, count = 0, len(lines)
    while index < count:
        line = lines[index]
        if not line.strip() or _THEMATIC_BREAK.match(line):
            index += 1
        elif fence := _FENCE.match(line):
            end = next(
                (j for j in range(index + 1, count) if _closes_fence(lines[j], fence.group(1))),
                count,
            )
            code = "\n".join(lines[index + 1 : end]).strip("\n")
            if code.strip():
                yield Block(code, path, page, "text")
            index = end + 1
        elif _starts_table(lines, index):
            headers = _table_cells(line)
            index += 2
            while index < count and "|" in lines[index]:
                row = _serialise_row(headers, _table_cells(lines[index]))
                if row:
                    yield Block(row, path, page, "table")
                index += 1
        elif _QUESTION_LINE.match(line):
            # The pair ends at the first blank line after "A:", so later prose is not swallowed
            # into a chunk that the chunker never splits.
            end, answered = index + 1, False
            while end < count and not _QUESTION_LINE.match(lines[end]):
                if answered and not lines[end].strip():
                    break
                answered = answered or bool(_ANSWER_LINE.match(lines[end]))
                end += 1
            pair = "\n".join(text.strip() for text in lines[index:end] if text.strip())
            yield Block(pair, path, page, "faq")
            index = end
        else:
            end = index + 1
            while end < count and lines[end].strip() and not _starts_block(lines, end):
                end += 1
            yield Block("\n".join(lines[index:end]).strip(), path, page, "text")
            index = end


def _starts_block(lines: list[str], index: int) -> bool:
    line = lines[index]
    return bool(
        _FENCE.match(line) or _THEMATIC_BREAK.match(line) or _QUESTION_LINE.match(line) or _starts_table(lines, index)
    )


def _starts_table(lines: list[str], index: int) -> bool:
    return (
        "|" in lines[index]
        and index + 1 < len(lines)
        and "|" in lines[index + 1]
        and bool(_TABLE_SEPARATOR.match(lines[index + 1]))
    )


def _table_cells(line: str) -> list[str]:
    row = line.strip().removeprefix("|")
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row)]


def _serialise_row(headers: list[str], cells: list[str]) -> str:
    """`Header: value; ...` so a row read alone still says what each value means."""
    parts = []
    for position, value in enumerate(cells):
        header = headers[position] if position < len(headers) else ""
        if value:
            parts.append(f"{header}: {value}" if header else value)
    return "; ".join(parts)


def _parse_pdf(data: bytes) -> list[Block]:
    """Blocks per page; a short first line without a final period heads that page."""
    if b"%PDF-" not in data[:1024]:
        raise ParseError("not a PDF file: the %PDF- header is missing")
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not reader.decrypt("")
        pages = [] if locked else [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # corrupt input makes pypdf raise many unrelated exception types
        raise ParseError(f"cannot read PDF: {type(exc).__name__}: {exc}") from exc
    if locked:
        raise ParseError("PDF is password-protected; upload an unencrypted copy")
    if not any(text.strip() for text in pages):
        raise ParseError("PDF has no extractable text (scanned pages need OCR, not supported)")
    blocks: list[Block] = []
    for number, page_text in enumerate(pages, start=1):
        lines = [line.strip() for line in page_text.replace("\r", "\n").split("\n")]
        first = next((i for i, line in enumerate(lines) if line), None)
        if first is None:
            continue
        heading = lines[first]
        path: tuple[str, ...] = ()
        rest = lines[first + 1 :]
        if len(heading) < _MAX_HEADING_CHARS and not heading.endswith(".") and any(rest):
            path, lines = (heading,), rest
        blocks.extend(_body_blocks(lines, path, number))
    return blocks
