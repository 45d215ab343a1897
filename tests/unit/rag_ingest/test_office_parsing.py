"""Word, PowerPoint and HTML parsing: structure kept, hostile archives refused, nothing fetched."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_client.folders import local_files
from rag_common.text.quotable import candidate_sentences
from rag_common.wire.messages import Passage
from rag_ingest.chunking import chunk_blocks
from rag_ingest.office import NOTES_LABEL, ArchiveLimits
from rag_ingest.parsing import Block, ParseError, UnsupportedFileType, document_format, parse_document
from tests.support.office_files import (
    EXTERNAL_NOTE,
    course_docx,
    course_html,
    course_pptx,
    docx_with_external_links,
    docx_with_picture,
    entity_docx,
    html_with_external_resources,
    lying_bomb,
    many_members,
    png_header,
    pptx_with_external_link,
    with_macros,
    with_member,
)

pytestmark = pytest.mark.unit

OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2000)


def by_path(blocks: list[Block]) -> dict[tuple[str, ...], list[Block]]:
    grouped: dict[tuple[str, ...], list[Block]] = {}
    for block in blocks:
        grouped.setdefault(block.heading_path, []).append(block)
    return grouped


@pytest.mark.parametrize(
    ("filename", "expected"),
    [("a.docx", "docx"), ("B.DOCX", "docx"), ("c.pptx", "pptx"), ("d.html", "html"), ("e/f.HTM", "html")],
)
def test_office_and_web_extensions_name_their_parser(filename: str, expected: str) -> None:
    assert document_format(filename) == expected


@pytest.mark.parametrize("filename", ["macros.docm", "macros.pptm", "old.doc", "old.ppt", "template.dotx"])
def test_macro_enabled_and_legacy_office_files_are_not_accepted(filename: str) -> None:
    with pytest.raises(UnsupportedFileType, match=r"\.docx"):
        document_format(filename)


def test_rag_ingest_picks_up_word_powerpoint_and_html_files(tmp_path: Path) -> None:
    for name in ("a.docx", "b.pptx", "c.html", "d.htm", "e.docm", "f.pptm", "g.doc"):
        (tmp_path / name).write_bytes(b"x")
    assert list(local_files(tmp_path)) == ["a.docx", "b.pptx", "c.html", "d.htm"]


def test_word_headings_make_sections_lists_stay_lists_and_tables_become_rows() -> None:
    blocks = parse_document("handbook.docx", course_docx())
    sections = by_path(blocks)
    title = "Glacier Field Handbook"
    assert [b.text for b in sections[(title,)]] == [
        "This handbook prepares students for the glacier field week in Svalbard."
    ]
    safety = sections[(title, "Safety equipment")]
    assert safety[1].text == (
        "- an ice axe with a wrist loop\n- crampons fitted the evening before\n- a whistle tied to the jacket"
    )
    rescue = sections[(title, "Safety equipment", "Crevasse rescue")]
    assert (
        rescue[1].text
        == "1. arrest the fall with the ice axe\n2. build a snow anchor\n3. set up a pulley with a prusik"
    )
    rows = sections[(title, "Field station timetable")]
    assert [(b.kind, b.text) for b in rows] == [
        ("table", "Day: Monday; Activity: Moraine mapping; Instructor: Ingrid Halvorsen"),
        ("table", "Day: Tuesday; Activity: Ice core drilling; Instructor: Tomasz Wielgosz"),
        ("table", "Day: Wednesday; Activity: Meltwater sampling; Instructor: Aino Lappalainen"),
    ]
    assert sections[(title, "Grading")][0].text.startswith("The field report counts for forty percent")
    assert all(b.page is None for b in blocks)


def test_word_table_rows_and_list_items_are_quoted_whole() -> None:
    """The rows and items reach the answer's quotable units as the chunker packs them."""
    chunks = chunk_blocks(parse_document("handbook.docx", course_docx()), lambda text: len(text.split()))
    table = next(c for c in chunks if c.section == "Field station timetable")
    passage = Passage(n=1, source="handbook.docx", section=table.section, text=table.text, kind=table.kind)
    rows = [u.text for u in candidate_sentences([passage]) if u.kind == "row"]
    assert "Day: Tuesday; Activity: Ice core drilling; Instructor: Tomasz Wielgosz" in rows
    listed = next(c for c in chunks if "wrist loop" in c.text)
    passage = Passage(n=2, source="handbook.docx", section=listed.section, text=listed.text, kind=listed.kind)
    assert "an ice axe with a wrist loop" in [u.text for u in candidate_sentences([passage]) if u.kind == "item"]


def test_each_slide_is_a_section_titled_by_its_title_with_its_number_as_page_and_notes_marked() -> None:
    blocks = parse_document("reefs.pptx", course_pptx())
    assert [(b.heading_path, b.page) for b in blocks] == [
        (("Coral reef ecology",), 1),
        (("Coral reef ecology",), 1),
        (("Bleaching thresholds",), 2),
        (("Bleaching thresholds",), 2),
        (("Field trip",), 3),
        (("Field trip",), 3),
    ]
    assert blocks[0].text == (
        "- Reefs cover less than one percent of the ocean floor\n"
        "- They shelter a quarter of marine species\n"
        "  - Polyps build the limestone"
    )
    assert blocks[1].text == f"{NOTES_LABEL} Tell the class that zooxanthellae algae give corals their colour."
    assert [(b.kind, b.text) for b in blocks[2:4]] == [
        ("table", "Region: Great Barrier Reef; Bleaching threshold: 29.5 °C"),
        ("table", "Region: Red Sea; Bleaching threshold: 32.0 °C"),
    ]
    assert blocks[5].text == f"{NOTES_LABEL} The boat for the snorkelling trip is the Nautilus and it departs at 07:30."
    assert not any("Coral reef ecology" in b.text for b in blocks)  # the title names the section, once


def test_html_drops_navigation_banner_and_footer_and_keeps_headings_lists_and_tables() -> None:
    blocks = parse_document("moon.html", course_html())
    text = "\n".join(b.text for b in blocks)
    for boilerplate in ("Observatory site", "cookies", "Copyright", "tracking pixel", "font-family", "Mars"):
        assert boilerplate not in text, boilerplate
    sections = by_path(blocks)
    assert sections[("Observing the Moon",)][0].text.startswith("The Moon is best observed")
    assert sections[("Observing the Moon", "Equipment")][1].text == (
        "- a red torch that keeps night vision intact\n"
        "- a lunar atlas printed on paper\n"
        "- a moon filter that cuts the glare"
    )
    assert [(b.kind, b.text) for b in sections[("Observing the Moon", "Craters to find")]] == [
        ("table", "Crater: Tycho; Diameter: 86 km; Best night: full moon"),
        ("table", "Crater: Copernicus; Diameter: 93 km; Best night: day nine"),
        ("table", "Crater: Clavius; Diameter: 231 km; Best night: day eight"),
    ]


def hostile() -> Iterator[tuple[str, bytes, str]]:
    word, slides = course_docx(), course_pptx()
    yield "truncated.docx", word[: len(word) // 2], "corrupt Word archive"
    yield "truncated.pptx", slides[:5000], "corrupt PowerPoint archive"
    yield "not-zip.docx", b"PK" + bytes(random.Random(1).randrange(256) for _ in range(3000)), "corrupt Word archive"
    yield "text.pptx", b"just text", "not a PowerPoint file: it is not a ZIP archive"
    yield "locked.docx", OLE, "password-protected or legacy binary"
    yield "bomb.docx", with_member(word, "word/media/image9.png", 110 << 20), "zip bomb or very large embedded media"
    yield "bomb.pptx", with_member(slides, "ppt/media/image9.png", 110 << 20), "zip bomb or very large embedded media"
    yield "members.pptx", many_members(slides, 6000), "more than the limit of 5000"
    yield "macros.docx", with_macros(word, "word"), "contains macros (word/vbaProject.bin)"
    yield "macros.pptx", with_macros(slides, "ppt"), "contains macros (ppt/vbaProject.bin)"
    yield "slides.docx", slides, "not a Word file: its main part is application/vnd.openxmlformats-officedocument"
    yield "entities.docx", entity_docx(bomb=True), "entity amplification"
    yield "menu.html", b"<html><body><nav><a href='/a'>Home</a> <a href='/b'>About</a></nav></body></html>", "no main"
    yield "junk.html", bytes(random.Random(2).randrange(256) for _ in range(5000)), "HTML page has no main text"


@pytest.mark.parametrize(("name", "data", "reason"), list(hostile()), ids=lambda v: v if isinstance(v, str) else "")
def test_hostile_files_fail_with_a_clear_reason(name: str, data: bytes, reason: str) -> None:
    started = time.monotonic()
    with pytest.raises(ParseError) as caught:
        parse_document(name, data)
    assert reason in str(caught.value)
    assert "BytesIO" not in str(caught.value)
    assert time.monotonic() - started < 10


def test_an_archive_that_lies_about_its_size_is_refused_without_unpacking_it() -> None:
    """The central directory says 1000 bytes; the data inflates to 150 MB: read in bounded steps, the
    member fails its CRC after 1000 bytes instead of being inflated whole by the parser."""
    bomb = lying_bomb(course_docx(), "word/media/image9.png", 110 << 20)
    started = time.monotonic()
    with pytest.raises(ParseError, match="corrupt Word archive: BadZipFile: Bad CRC-32"):
        parse_document("liar.docx", bomb)
    assert time.monotonic() - started < 2


def test_archive_limits_are_settings() -> None:
    word = course_docx()
    with pytest.raises(ParseError, match="more than the 1000 byte limit"):
        parse_document("a.docx", word, archive_limits=ArchiveLimits(max_unpacked_bytes=1000))
    with pytest.raises(ParseError, match="more than the limit of 10"):
        parse_document("a.docx", word, archive_limits=ArchiveLimits(max_members=10))


def test_a_picture_claiming_billions_of_pixels_is_never_decoded() -> None:
    started = time.monotonic()
    blocks = parse_document("calving.docx", docx_with_picture(png_header(60_000, 60_000)))
    assert [b.text for b in blocks] == ["The picture below shows the ice shelf calving front in March."]
    assert time.monotonic() - started < 2


def test_external_entities_are_not_resolved() -> None:
    blocks = parse_document("xxe.docx", entity_docx(bomb=False))
    text = " ".join(b.text for b in blocks)
    assert "Sea ice thickness" in text
    assert "root:" not in text


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A 127.0.0.1 port that every external link points at: any fetch would connect to it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


def test_external_links_images_and_templates_are_never_fetched(listener: socket.socket) -> None:
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name, data in (
        ("linked.docx", docx_with_external_links(url)),
        ("linked.pptx", pptx_with_external_link(url)),
        ("linked.html", html_with_external_resources(url)),
    ):
        text = " ".join(b.text for b in parse_document(name, data))
        assert EXTERNAL_NOTE in text, name
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected


def test_an_archive_in_a_compression_method_zipfile_cannot_read_fails_as_corrupt() -> None:
    """A member packed with Deflate64 (method 9): zipfile raises NotImplementedError on it."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
    data = bytearray(buffer.getvalue())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # local header, central directory
        at = data.find(signature)
        data[at + offset : at + offset + 2] = (9).to_bytes(2, "little")
    with pytest.raises(ParseError, match="corrupt Word archive: NotImplementedError"):
        parse_document("deflate64.docx", bytes(data))
