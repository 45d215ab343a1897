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
from pathlib import PurePosixPath

import charset_normalizer
from pypdf import PdfReader

from rag_common.text.lines import (
    ANSWER_LINE,
    FENCE,
    QUESTION_LINE,
    TABLE_SEPARATOR,
    THEMATIC_BREAK,
    closes_fence,
    table_row,
)
from rag_common.text.markdown import Section, strip_front_matter
from rag_common.text.markdown import sections as markdown_sections
from rag_common.wire.formats import SUPPORTED_EXTENSIONS
from rag_ingest.blocks import Block as Block
from rag_ingest.blocks import BlockKind as BlockKind
from rag_ingest.blocks import ParseError as ParseError
from rag_ingest.hidden import FRONT_MATTER, HiddenText
from rag_ingest.office import ArchiveLimits, parse_docx, parse_pptx
from rag_ingest.pdf_hidden import visible_page_text
from rag_ingest.web import html_to_markdown


class UnsupportedFileType(ValueError):
    """The file extension is not one the ingest service can parse."""


# Share of control characters above which decoded bytes are treated as binary, not text.
_MAX_CONTROL_SHARE = 0.1
_MAX_HEADING_CHARS = 80
# Unicode category Cc less the whitespace controls (tab, newline, vertical tab, form feed, return).
_CONTROL_CHARS = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")

_UNDERLINE = re.compile(r"^\s*(={3,}|-{3,})\s*$")


def document_format(filename: str) -> str:
    """Name the parser for a file ("markdown", "text", "pdf", "docx", "pptx" or "html") from its extension.

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


def parse_document(
    filename: str,
    data: bytes,
    *,
    pdf_headings: bool = False,
    code_comment_headings: bool = True,
    archive_limits: ArchiveLimits | None = None,
    hidden: HiddenText | None = None,
    keep_collapsed: bool = False,
) -> list[Block]:
    """Parse a file into blocks in document order.

    ``pdf_headings``: find headings inside PDF pages (short title-like lines after a sentence end)
    and carry the current heading over to the next page, instead of only a page's first line.
    ``code_comment_headings=False``: in Markdown, a level-1 heading that comes after a deeper heading
    is read as text. Documents whose code lost its fences have Python comments (``# Embed the
    documents``) that would otherwise relabel the rest of a section; a document's title is its first
    level-1 heading.
    ``archive_limits``: what a Word or PowerPoint archive may unpack to (see ``rag_ingest.office``).
    ``hidden``: counts, by reason, the text left out because a reader of the file does not see it
    (``rag_ingest.hidden``): the document's status shows them. ``keep_collapsed``: read the body of
    a closed HTML ``<details>`` instead of leaving it out.

    Raises UnsupportedFileType for an unknown extension and ParseError when the bytes cannot
    be read as that format or hold no text, so the caller can report the reason to the user.
    """
    fmt = document_format(filename)
    limits = archive_limits or ArchiveLimits()
    hidden = hidden if hidden is not None else HiddenText()
    if fmt == "pdf":
        blocks = _parse_pdf(data, headings=pdf_headings, hidden=hidden)
    elif fmt == "docx":
        blocks = parse_docx(data, limits, hidden)
    elif fmt == "pptx":
        blocks = parse_pptx(data, limits, hidden)
    elif fmt == "html":
        markdown = html_to_markdown(data, hidden, keep_collapsed=keep_collapsed)
        blocks = [b for section in markdown_sections(markdown) for b in _section_blocks(section)]
    else:
        text = _decode_text(data)
        if fmt == "markdown" and strip_front_matter(text) != text:
            hidden[FRONT_MATTER] += 1
        sections = (
            markdown_sections(text, late_titles=code_comment_headings) if fmt == "markdown" else _text_sections(text)
        )
        blocks = [block for section in sections for block in _section_blocks(section)]
    if not blocks:
        raise ParseError("document has no text")
    return blocks


def _decode_text(data: bytes) -> str:
    """Decode text bytes in whatever encoding they came in, but refuse binary files."""
    text = _decode(data)
    controls = len(_CONTROL_CHARS.findall(text))
    if controls > _MAX_CONTROL_SHARE * len(text):
        raise ParseError("file is mostly control characters: it looks like binary data, not text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# UTF-32's little-endian BOM starts with UTF-16's: the longer marks are tried first.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SAMPLE_BYTES = 64 * 1024
_MIN_NON_ASCII_BYTES = 8


def _decode(data: bytes) -> str:
    """BOM, then UTF-16/32 without a BOM, then UTF-8, then a detected legacy encoding."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ParseError(f"invalid {encoding.upper()} text after its byte-order mark: {exc}") from exc
    # Before UTF-8: UTF-32 and UTF-16 of Cyrillic or Greek can be all bytes under 0x80.
    wide = _decode_wide_without_bom(data) if b"\x00" in data else None
    if wide is not None:
        return wide
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if b"\x00" in data:
        raise ParseError("file contains NUL bytes: it looks like binary data, not text")
    return _decode_legacy(data)


def _decode_wide_without_bom(data: bytes) -> str | None:
    """UTF-32 or UTF-16 recognised by where the zero bytes of mostly Latin text fall."""
    sample = data[: _SAMPLE_BYTES - _SAMPLE_BYTES % 4]
    if len(sample) < 4:
        return None

    def zeros(offset: int, step: int) -> float:
        column = sample[offset::step]
        return column.count(0) / len(column)

    candidates = []
    if len(data) % 4 == 0:
        if zeros(2, 4) > 0.95 and zeros(3, 4) > 0.95:
            candidates.append("utf-32-le")
        if zeros(0, 4) > 0.95 and zeros(1, 4) > 0.95:
            candidates.append("utf-32-be")
    if len(data) % 2 == 0:
        if zeros(1, 2) > 0.3 and zeros(0, 2) < 0.05:
            candidates.append("utf-16-le")
        if zeros(0, 2) > 0.3 and zeros(1, 2) < 0.05:
            candidates.append("utf-16-be")
    for encoding in candidates:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return None


def _decode_legacy(data: bytes) -> str:
    """A legacy 8-bit or multibyte encoding (Shift-JIS, GB18030, cp1251...), detected.

    charset-normalizer names non-Latin encodings well but cannot tell Western code pages apart
    (it reads latin-1 "naïve" as cp1250 "naďve", or on six bytes even as Arabic). Its guess is
    taken when cp1252 cannot decode the bytes, or when the guess reads at least a few non-ASCII
    bytes as mostly non-Latin letters; otherwise cp1252 (the common Windows code page) decides,
    and latin-1 (which never fails) is the last resort.
    """
    try:
        western: str | None = data.decode("cp1252")
    except UnicodeDecodeError:
        western = None
    sample = data[:_SAMPLE_BYTES] if len(data) > 4 * _SAMPLE_BYTES else data
    best = charset_normalizer.from_bytes(sample).best()
    if best is not None and best.encoding:
        enough = sum(1 for byte in sample if byte >= 0x80) >= _MIN_NON_ASCII_BYTES
        if western is None or (enough and _mostly_non_latin(str(best))):
            try:
                return data.decode(best.encoding)
            except (UnicodeDecodeError, LookupError):
                pass
    # cp1252 before latin-1: Windows text uses 0x80-0x9f for quotes and dashes, which latin-1
    # would turn into invisible control characters.
    return western if western is not None else data.decode("latin-1")


def _mostly_non_latin(text: str) -> bool:
    """Whether the letters outside ASCII are mostly of other scripts (kana, Cyrillic, Han...)."""
    letters = [ch for ch in text[:20000] if ch.isalpha() and not ch.isascii()]
    if not letters:
        return False
    latin = sum(1 for ch in letters if unicodedata.name(ch, "").startswith("LATIN"))
    return latin < 0.5 * len(letters)


def _text_sections(text: str) -> list[Section]:
    """Split plain text into sections, guessing headings from their shape.

    A heading is a line underlined with === or ---, an ALL-CAPS short line, or a short
    standalone line without closing punctuation (e.g. "Version 4.2 (2025-03-01)"). Levels are
    1 for === and ALL CAPS, 2 for ---, 3 otherwise, so version lines nest under a title.
    """
    paragraphs = [p.split("\n") for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    stack: list[tuple[int, str]] = []
    sections = [Section(())]
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
            sections.append(Section(tuple(name for _, name in stack)))
        else:
            body = lines
        sections[-1].lines.extend([*body, ""])
    return sections


def _is_short(line: str) -> bool:
    return 0 < len(line) <= _MAX_HEADING_CHARS and line[-1] not in ".!?,;:"


def _is_title(line: str) -> bool:
    """Few words: tells a caps heading over its text from the first line of shouted prose."""
    return len(line.split()) <= 6


def _section_blocks(section: Section) -> list[Block]:
    """Blocks of one section; a question heading makes the whole section one FAQ block."""
    path, lines = section.path, section.lines
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
        if not line.strip() or THEMATIC_BREAK.match(line):
            index += 1
        elif fence := FENCE.match(line):
            end = next(
                (j for j in range(index + 1, count) if closes_fence(lines[j], fence.group(1))),
                count,
            )
            code = "\n".join(lines[index + 1 : end]).strip("\n")
            if code.strip():
                # Fenced as written: an answer quotes a command as a code block, never as prose.
                yield Block(f"```\n{code}\n```", path, page, "text")
            index = end + 1
        elif _starts_table(lines, index):
            headers = _table_cells(line)
            index += 2
            while index < count and "|" in lines[index]:
                row = table_row(headers, _table_cells(lines[index]))
                if row:
                    yield Block(row, path, page, "table")
                index += 1
        elif QUESTION_LINE.match(line):
            # The pair ends at the first blank line after "A:", so later prose is not swallowed
            # into a chunk that the chunker never splits.
            end, answered = index + 1, False
            while end < count and not QUESTION_LINE.match(lines[end]):
                if answered and not lines[end].strip():
                    break
                answered = answered or bool(ANSWER_LINE.match(lines[end]))
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
        FENCE.match(line) or THEMATIC_BREAK.match(line) or QUESTION_LINE.match(line) or _starts_table(lines, index)
    )


def _starts_table(lines: list[str], index: int) -> bool:
    return (
        "|" in lines[index]
        and index + 1 < len(lines)
        and "|" in lines[index + 1]
        and bool(TABLE_SEPARATOR.match(lines[index + 1]))
    )


def _table_cells(line: str) -> list[str]:
    row = line.strip().removeprefix("|")
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row)]


def _parse_pdf(data: bytes, *, headings: bool = False, hidden: HiddenText | None = None) -> list[Block]:
    """Blocks per page (a chunk never spans two pages), running headers and footers removed.

    Without ``headings`` a short first line without a final period heads its page; with it, every
    title-like line heads what follows it, and a page that continues a section keeps its heading.
    """
    if b"%PDF-" not in data[:1024]:
        raise ParseError("not a PDF file: the %PDF- header is missing")
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not reader.decrypt("")
        seen = hidden if hidden is not None else HiddenText()
        pages = [] if locked else [visible_page_text(page, seen) for page in reader.pages]
    except Exception as exc:  # corrupt input makes pypdf raise many unrelated exception types
        raise ParseError(f"cannot read PDF: {type(exc).__name__}: {exc}") from exc
    if locked:
        raise ParseError("PDF is password-protected; upload an unencrypted copy")
    if not any(text.strip() for text in pages):
        raise ParseError("PDF has no extractable text (scanned pages need OCR, not supported)")
    page_lines = strip_running_lines(
        [[line.strip() for line in text.replace("\r", "\n").split("\n")] for text in pages]
    )
    blocks: list[Block] = []
    carried: tuple[str, ...] = ()
    for number, lines in enumerate(page_lines, start=1):
        first = next((i for i, line in enumerate(lines) if line), None)
        if first is None:
            continue
        if headings:
            for section_path, body in _pdf_sections(lines, carried):
                blocks.extend(_body_blocks(body, section_path, number))
                carried = section_path
            continue
        heading = lines[first]
        path: tuple[str, ...] = ()
        rest = lines[first + 1 :]
        if len(heading) < _MAX_HEADING_CHARS and not heading.endswith(".") and any(rest):
            path, lines = (heading,), rest
        blocks.extend(_body_blocks(lines, path, number))
    return blocks


_RUNNING_EDGE = 3  # lines at the top and bottom of a page that may be a running header or footer
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?\d+(?:\s*(?:of|/)\s*\d+)?$", re.IGNORECASE)


def strip_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Drop running headers and footers: a line near the top or bottom of a page that recurs (digits
    ignored, so "Page 3 of 9" matches "Page 4 of 9") on at least half the pages (three or more), and
    bare page numbers. They would otherwise be part of every chunk and every page's heading."""

    def key(line: str) -> str:
        return re.sub(r"\d+", "#", line.lower())

    def edges(lines: list[str]) -> list[int]:
        filled = [i for i, line in enumerate(lines) if line]
        return filled[:_RUNNING_EDGE] + filled[-_RUNNING_EDGE:]

    counts: dict[str, int] = {}
    for lines in pages:
        for k in {key(lines[i]) for i in edges(lines)}:
            counts[k] = counts.get(k, 0) + 1
    limit = max(3, (len(pages) + 1) // 2)
    running = {k for k, n in counts.items() if n >= limit}
    cleaned = []
    for lines in pages:
        drop = {i for i in edges(lines) if key(lines[i]) in running or _PAGE_NUMBER.match(lines[i])}
        cleaned.append([line for i, line in enumerate(lines) if i not in drop])
    return cleaned


def _pdf_title_line(line: str, previous: str) -> bool:
    """A heading inside a PDF page: short, no sentence punctuation at its end, starts with a capital or
    a digit, few words, and the line before it ended a sentence (or there is none): a wrapped
    sentence's last words follow a line without a period."""
    return (
        0 < len(line) <= 60
        and line[-1] not in ".,;:!?-"
        and (line[0].isupper() or line[0].isdigit())
        and len(line.split()) <= 8
        and (not previous or previous[-1] in ".:!?")
    )


def _pdf_sections(lines: list[str], carried: tuple[str, ...]) -> list[tuple[tuple[str, ...], list[str]]]:
    """Split one page's lines at heading lines; text before the first heading keeps ``carried``."""
    sections: list[tuple[tuple[str, ...], list[str]]] = [(carried, [])]
    previous = ""
    for index, line in enumerate(lines):
        following = next((n for n in lines[index + 1 :] if n), "")
        if line and following and _pdf_title_line(line, previous) and not _PAGE_NUMBER.match(line):
            sections.append(((line,), []))
        else:
            sections[-1][1].append(line)
        if line:
            previous = line
    return [(path, body) for path, body in sections if any(body)] or [(carried, [])]
