"""Word, PowerPoint and HTML files made by the tests: a course's material, and hostile variants of it."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Callable

import docx
import pptx
from pptx.util import Inches

EXTERNAL_NOTE = "The external resources of this document are never fetched."


def course_docx() -> bytes:
    """A handbook with a title, nested headings, paragraphs, a bullet list, a numbered list and a table."""
    document = docx.Document()
    document.add_heading("Glacier Field Handbook", 0)
    document.add_paragraph("This handbook prepares students for the glacier field week in Svalbard.")
    document.add_heading("Safety equipment", 1)
    document.add_paragraph("Every student carries the following items on the ice:")
    for item in ("an ice axe with a wrist loop", "crampons fitted the evening before", "a whistle tied to the jacket"):
        document.add_paragraph(item, style="List Bullet")
    document.add_heading("Crevasse rescue", 2)
    document.add_paragraph("A rope team follows these steps when a member falls into a crevasse:")
    for step in ("arrest the fall with the ice axe", "build a snow anchor", "set up a pulley with a prusik"):
        document.add_paragraph(step, style="List Number")
    document.add_heading("Field station timetable", 1)
    table = document.add_table(rows=4, cols=3)
    rows = [
        ("Day", "Activity", "Instructor"),
        ("Monday", "Moraine mapping", "Ingrid Halvorsen"),
        ("Tuesday", "Ice core drilling", "Tomasz Wielgosz"),
        ("Wednesday", "Meltwater sampling", "Aino Lappalainen"),
    ]
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    document.add_heading("Grading", 1)
    document.add_paragraph("The field report counts for forty percent of the final grade and is due on Friday.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def course_pptx() -> bytes:
    """Three slides: bullets with notes, a table, and a slide whose answer is only in its notes."""
    presentation = pptx.Presentation()
    bullets = presentation.slide_layouts[1]
    title_only = presentation.slide_layouts[5]

    first = presentation.slides.add_slide(bullets)
    first.shapes.title.text = "Coral reef ecology"
    frame = first.placeholders[1].text_frame
    frame.text = "Reefs cover less than one percent of the ocean floor"
    for text, level in (("They shelter a quarter of marine species", 0), ("Polyps build the limestone", 1)):
        paragraph = frame.add_paragraph()
        paragraph.text, paragraph.level = text, level
    first.notes_slide.notes_text_frame.text = "Tell the class that zooxanthellae algae give corals their colour."

    second = presentation.slides.add_slide(title_only)
    second.shapes.title.text = "Bleaching thresholds"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for r, (a, b) in enumerate(
        (("Region", "Bleaching threshold"), ("Great Barrier Reef", "29.5 °C"), ("Red Sea", "32.0 °C"))
    ):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b

    third = presentation.slides.add_slide(title_only)
    third.shapes.title.text = "Field trip"
    box = third.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    box.text_frame.text = "The snorkelling trip leaves from the marina."
    third.notes_slide.notes_text_frame.text = (
        "The boat for the snorkelling trip is the Nautilus and it departs at 07:30."
    )
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def course_html(extra_head: str = "", extra_body: str = "") -> bytes:
    """A lesson page with navigation, a cookie banner and a footer around headings, a list and a table."""
    nav = "".join(
        f'<li><a href="/{w.lower()}">{w} of the Observatory site</a></li>' for w in ("Home", "Courses", "News")
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Observing the Moon</title>{extra_head}
<script>document.write("tracking pixel loaded");</script><style>body {{ font-family: serif; }}</style></head>
<body>
<header><nav><ul>{nav}</ul></nav></header>
<div class="cookie-banner">We use cookies on the Observatory site. Accept all cookies to continue browsing.</div>
<main><article>
<h1>Observing the Moon</h1>
<p>The Moon is best observed a few days after first quarter, when shadows along the terminator reveal crater walls.</p>
<h2>Equipment</h2>
<p>A small refractor is enough for the first evening; bring these items to the dome:</p>
<ul><li>a red torch that keeps night vision intact</li><li>a lunar atlas printed on paper</li>
<li>a moon filter that cuts the glare</li></ul>
<h2>Craters to find</h2>
<table><thead><tr><th>Crater</th><th>Diameter</th><th>Best night</th></tr></thead>
<tbody><tr><td>Tycho</td><td>86 km</td><td>full moon</td></tr>
<tr><td>Copernicus</td><td>93 km</td><td>day nine</td></tr>
<tr><td>Clavius</td><td>231 km</td><td>day eight</td></tr></tbody></table>
<h2>Recording observations</h2>
<p>Students sketch each crater in pencil and note the seeing on the Antoniadi scale from one to five.</p>
{extra_body}
</article></main>
<aside><h3>Related courses</h3><ul><li><a href="/mars">Mars at opposition</a></li></ul></aside>
<footer><p>Copyright 2026 Observatory School. Privacy policy. Terms of use. Contact the webmaster.</p></footer>
</body></html>""".encode()


def rewrite_zip(
    data: bytes, change: Callable[[str, bytes], bytes | None], add: dict[str, bytes] | None = None
) -> bytes:
    """A copy of an archive with members changed (``change`` returns new bytes, or None to drop) or added."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = change(info.filename, source.read(info))
            if body is not None:
                target.writestr(info.filename, body)
        for name, body in (add or {}).items():
            target.writestr(name, body)
    return out.getvalue()


def with_member(data: bytes, name: str, size: int, fill: bytes = b"\x00") -> bytes:
    """An archive with one more member of ``size`` bytes, written in steps (a zip bomb deflates to KB)."""
    out = io.BytesIO(data)
    with (
        zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open(name, "w", force_zip64=size > 2**31) as stream,
    ):
        step = fill * (1 << 20)
        for _ in range(size >> 20):
            stream.write(step)
    return out.getvalue()


def lying_bomb(data: bytes, name: str, size: int, declared: int = 1000) -> bytes:
    """``with_member``, then the member's sizes in both headers patched to ``declared``: a reader that
    trusts the central directory would think it small, while its data still inflates to ``size``."""
    bombed = bytearray(with_member(data, name, size))
    encoded = name.encode()
    with zipfile.ZipFile(io.BytesIO(bytes(bombed))) as archive:
        info = archive.getinfo(name)
    local = info.header_offset
    assert bombed[local : local + 4] == b"PK\x03\x04"
    struct.pack_into("<I", bombed, local + 22, declared)
    central = _central_entry(bytes(bombed), encoded)
    struct.pack_into("<I", bombed, central + 24, declared)
    return bytes(bombed)


def _central_entry(data: bytes, name: bytes) -> int:
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        length = struct.unpack_from("<H", data, position + 28)[0]
        if data[position + 46 : position + 46 + length] == name:
            return position
        position = data.find(b"PK\x01\x02", position + 4)
    raise ValueError(f"{name!r} is not in the central directory")


def many_members(data: bytes, count: int) -> bytes:
    return rewrite_zip(data, lambda _name, body: body, {f"customXml/extra{i}.xml": b"<a/>" for i in range(count)})


def with_macros(data: bytes, folder: str) -> bytes:
    """A VBA project inside an archive that still says .docx/.pptx (a renamed .docm/.pptm)."""
    return rewrite_zip(data, lambda _name, body: body, {f"{folder}/vbaProject.bin": b"\xd0\xcf\x11\xe0" + bytes(512)})


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims ``width`` x ``height`` pixels (decoded, that would be gigabytes) in a few bytes."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def docx_with_picture(image: bytes) -> bytes:
    document = docx.Document()
    document.add_heading("Satellite images", 1)
    document.add_paragraph("The picture below shows the ice shelf calving front in March.")
    document.add_picture(io.BytesIO(image))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_with_external_links(url: str) -> bytes:
    """A Word file with a hyperlink, a linked (not embedded) image and an attached template, all at ``url``."""
    base = docx.Document()
    base.add_heading("Linked resources", 1)
    base.add_paragraph(EXTERNAL_NOTE)
    base.add_paragraph("LINK_HERE")
    out = io.BytesIO()
    base.save(out)
    kinds = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    relationships = (
        f'<Relationship Id="rIdX1" Type="{kinds}/hyperlink" Target="{url}/hyperlink" TargetMode="External"/>'
        f'<Relationship Id="rIdX2" Type="{kinds}/image" Target="{url}/linked.png" TargetMode="External"/>'
    )
    linked_image = (
        '<w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing">'
        '<wp:extent cx="100" cy="100"/><wp:docPr id="9" name="linked"/>'
        '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
        '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">'
        '<pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture">'
        '<pic:nvPicPr><pic:cNvPr id="9" name="linked"/><pic:cNvPicPr/></pic:nvPicPr>'
        '<pic:blipFill><a:blip xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
        'r:link="rIdX2"/></pic:blipFill><pic:spPr/></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>'
    )

    def change(name: str, body: bytes) -> bytes:
        if name == "word/_rels/document.xml.rels":
            return body.replace(b"</Relationships>", relationships.encode() + b"</Relationships>")
        if name == "word/document.xml":
            link = (
                '<w:hyperlink r:id="rIdX1"><w:r><w:t>the course website</w:t></w:r></w:hyperlink>' + linked_image
            ).encode()
            return body.replace(b"<w:r><w:t>LINK_HERE</w:t></w:r>", link)
        return body

    return rewrite_zip(out.getvalue(), change)


def pptx_with_external_link(url: str) -> bytes:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Linked resources"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    run = box.text_frame.paragraphs[0].add_run()
    run.text = EXTERNAL_NOTE
    run.hyperlink.address = f"{url}/slide-link"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def html_with_external_resources(url: str) -> bytes:
    head = f'<link rel="stylesheet" href="{url}/style.css"><script src="{url}/app.js"></script>'
    body = (
        f'<p>{EXTERNAL_NOTE}</p><img src="{url}/image.png" alt="a chart"><iframe src="{url}/frame"></iframe>'
        f'<object data="{url}/object"></object><video src="{url}/video.mp4"></video>'
    )
    return course_html(head, body)


def entity_docx(*, bomb: bool) -> bytes:
    """A Word file whose document part uses an external entity (``file:///etc/passwd``) and, with
    ``bomb``, a billion-laughs entity too."""
    lol = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)) if bomb else ""
    doctype = f'<!DOCTYPE w:document [<!ENTITY lol0 "lol">{lol}<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
    use = b"&lol9; &secret;" if bomb else b"&secret;"

    def change(name: str, body: bytes) -> bytes:
        if name != "word/document.xml":
            return body
        start = body.index(b"?>") + 2
        body = body[:start] + doctype.encode() + body[start:]
        return body.replace(b"ENTITY_HERE", use)

    base = docx.Document()
    base.add_heading("Entities", 1)
    base.add_paragraph("Sea ice thickness is measured with a drill and a tape. ENTITY_HERE")
    out = io.BytesIO()
    base.save(out)
    return rewrite_zip(out.getvalue(), change)
