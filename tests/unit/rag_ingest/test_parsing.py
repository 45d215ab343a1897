"""Parsing rules: headings become paths, tables and FAQs keep meaning, bad files fail clearly."""

import pytest
from fpdf import FPDF

from rag_ingest.parsing import (
    Block,
    ParseError,
    UnsupportedFileType,
    document_format,
    parse_document,
    strip_running_lines,
)

pytestmark = pytest.mark.unit


def _markdown(text: str) -> list[Block]:
    return parse_document("doc.md", text.encode())


def _pdf(*pages: str) -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


@pytest.mark.parametrize(
    ("filename", "expected"),
    [("a.md", "markdown"), ("b.MARKDOWN", "markdown"), ("dir/c.txt", "text"), ("D.PDF", "pdf"), ("e.docx", "docx")],
)
def test_document_format_follows_the_extension(filename: str, expected: str) -> None:
    assert document_format(filename) == expected


@pytest.mark.parametrize("filename", ["report.doc", "README", "archive.pdf.zip"])
def test_unsupported_extension_is_rejected(filename: str) -> None:
    with pytest.raises(UnsupportedFileType, match=r"supported: \.md"):
        parse_document(filename, b"hello")


def test_markdown_headings_become_heading_paths() -> None:
    blocks = _markdown(
        "Preamble.\n\n# Pricing\nIntro.\n## Plans\nPlan text.\n### Basic\nBasic text.\n"
        "## Billing ##\nBilling text.\n# C# Guide\nCode text.\n"
    )
    assert [(b.heading_path, b.text) for b in blocks] == [
        ((), "Preamble."),
        (("Pricing",), "Intro."),
        (("Pricing", "Plans"), "Plan text."),
        (("Pricing", "Plans", "Basic"), "Basic text."),
        (("Pricing", "Billing"), "Billing text."),
        (("C# Guide",), "Code text."),
    ]
    assert {b.kind for b in blocks} == {"text"}
    assert {b.page for b in blocks} == {None}


def test_markdown_paragraphs_split_on_blank_lines() -> None:
    blocks = _markdown("# A\nFirst line\nsame paragraph.\n\nSecond paragraph.\n\n---\n\nThird.")
    assert [b.text for b in blocks] == [
        "First line\nsame paragraph.",
        "Second paragraph.",
        "Third.",
    ]


def test_hash_lines_inside_code_fences_are_code_not_headings() -> None:
    blocks = _markdown("# Setup\n```bash\n# install it\npip install x\n```\n~~~\n## still code\n~~~\n")
    assert [(b.heading_path, b.text, b.kind) for b in blocks] == [
        # Fenced as written, so the answer quotes a command as code.
        (("Setup",), "```\n# install it\npip install x\n```", "text"),
        (("Setup",), "```\n## still code\n```", "text"),
    ]


def test_front_matter_is_stripped() -> None:
    blocks = _markdown("---\ntitle: Secret\ntags: [a, b]\n---\n# Doc\nBody.\n")
    assert [(b.heading_path, b.text) for b in blocks] == [(("Doc",), "Body.")]


def test_pipe_table_rows_become_header_value_blocks() -> None:
    blocks = _markdown(
        "# Pricing\nPlans below.\n\n| Plan | Price | Seats |\n|:-----|------:|---|\n"
        "| Basic | $10 | 1 |\n| Pro \\| Team | $30 | |\n\nAfter the table.\n"
    )
    assert [(b.kind, b.text) for b in blocks] == [
        ("text", "Plans below."),
        ("table", "Plan: Basic; Price: $10; Seats: 1"),
        ("table", "Plan: Pro | Team; Price: $30"),
        ("text", "After the table."),
    ]
    assert all(b.heading_path == ("Pricing",) for b in blocks)


def test_question_heading_and_its_answer_paragraphs_are_one_faq_block() -> None:
    blocks = _markdown("# FAQ\n## How do I cancel?\nOpen settings.\n\nThen click Cancel.\n## Next topic\nOther.")
    assert blocks[0] == Block(
        "Q: How do I cancel?\nA: Open settings.\n\nThen click Cancel.",
        ("FAQ", "How do I cancel?"),
        None,
        "faq",
    )
    assert blocks[1].kind == "text"
    assert blocks[1].heading_path == ("FAQ", "Next topic")


def test_q_and_a_lines_become_one_faq_block_per_pair() -> None:
    blocks = _markdown(
        "# Help\nQ: Is there a trial?\nA: Yes, 14 days.\n\nQ: Can I get a refund?\n"
        "A: Within 30 days.\nContact support first.\n\nUnrelated closing paragraph.\n"
    )
    assert [(b.kind, b.text) for b in blocks] == [
        ("faq", "Q: Is there a trial?\nA: Yes, 14 days."),
        ("faq", "Q: Can I get a refund?\nA: Within 30 days.\nContact support first."),
        ("text", "Unrelated closing paragraph."),
    ]


def test_text_paragraphs_and_guessed_headings() -> None:
    text = (
        "ACME ROUTER RELEASE NOTES\n\nVersion 4.2 (2025-03-01)\n\nFixed WiFi drops.\n"
        "Faster boot.\n\nVersion 4.1 (2025-01-10)\n\nMesh support.\n\nSetup\n=====\nPlug it in.\n\n"
        "A short closing line"
    )
    blocks = parse_document("notes.txt", text.encode())
    assert [(b.heading_path, b.text) for b in blocks] == [
        (
            ("ACME ROUTER RELEASE NOTES", "Version 4.2 (2025-03-01)"),
            "Fixed WiFi drops.\nFaster boot.",
        ),
        (("ACME ROUTER RELEASE NOTES", "Version 4.1 (2025-01-10)"), "Mesh support."),
        (("Setup",), "Plug it in."),
        (("Setup",), "A short closing line"),
    ]


def test_text_sentences_are_not_mistaken_for_headings() -> None:
    blocks = parse_document("a.txt", b"This is a sentence.\n\nAnother one.\r\nSame paragraph.")
    assert [(b.heading_path, b.text) for b in blocks] == [
        ((), "This is a sentence."),
        ((), "Another one.\nSame paragraph."),
    ]


def test_text_falls_back_to_a_single_byte_encoding() -> None:
    blocks = parse_document("a.txt", "Caf\u00e9 \u201cquoted\u201d.".encode("cp1252"))
    assert blocks[0].text == "Caf\u00e9 \u201cquoted\u201d."
    assert parse_document("b.txt", "na\u00efve.".encode("latin-1"))[0].text == "na\u00efve."


@pytest.mark.parametrize(
    "data",
    [
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00binary zip header",
        bytes(range(1, 32)) * 10 + b"a few letters",
    ],
)
def test_binary_garbage_text_file_is_a_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError, match="binary"):
        parse_document("notes.txt", data)


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("a.txt", b""),
        ("b.txt", b" \n\n\t\n"),
        ("c.md", b"---\ntitle: x\n---\n"),
        ("d.md", b"# Title\n"),
    ],
)
def test_document_without_text_is_a_parse_error(filename: str, data: bytes) -> None:
    with pytest.raises(ParseError, match="document has no text"):
        parse_document(filename, data)


def test_pdf_blocks_carry_page_numbers_and_page_headings() -> None:
    data = _pdf(
        "Installation Guide\nThe installer copies the files.\nThen reboot the router.",
        "This page opens with a full sentence.\nAnd continues here.",
    )
    blocks = parse_document("manual.pdf", data)
    assert [(b.page, b.heading_path, b.kind) for b in blocks] == [
        (1, ("Installation Guide",), "text"),
        (2, (), "text"),
    ]
    assert "installer copies the files" in blocks[0].text
    assert "Installation Guide" not in blocks[0].text
    assert blocks[1].text.startswith("This page opens with a full sentence.")


def test_pdf_page_with_a_single_line_keeps_it_as_text() -> None:
    blocks = parse_document("title.pdf", _pdf("Annual Report 2025", "Revenue grew."))
    assert [(b.page, b.text) for b in blocks] == [(1, "Annual Report 2025"), (2, "Revenue grew.")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"hello, this is not a pdf", "not a PDF"),
        (_pdf("Some text on a page.")[:300], "cannot read PDF"),
        (b"%PDF-1.7\n" + bytes(range(256)) * 4, "cannot read PDF"),
    ],
)
def test_corrupt_pdf_is_a_parse_error(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_document("broken.pdf", data)


def test_pdf_without_extractable_text_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no extractable text"):
        parse_document("scan.pdf", _pdf("", ""))


def test_password_protected_pdf_is_a_parse_error() -> None:
    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.cell(0, 8, "Confidential")
    with pytest.raises(ParseError, match="password"):
        parse_document("locked.pdf", bytes(pdf.output()))


def test_running_headers_footers_and_page_numbers_are_stripped() -> None:
    bodies = ["Pumps move water.", "Valves stop it.", "Pipes carry it.", "Tanks hold it."]
    pages = [["ACME Manual", "", body, "Details follow.", "", f"Page {n} of 4"] for n, body in enumerate(bodies, 1)]
    cleaned = strip_running_lines(pages)
    assert [line for line in cleaned[0] if line] == ["Pumps move water."]
    assert [line for line in cleaned[3] if line] == ["Tanks hold it."]


def test_lines_on_few_pages_are_kept() -> None:
    pages = [["Exceptions", "Text one."], ["Exceptions", "Text two."], ["Other", "Text three."], ["X", "Four."]]
    assert strip_running_lines(pages) == pages


def test_pdf_headings_inside_pages_and_carried_to_the_next_page() -> None:
    data = _pdf(
        "Balance Billing\nProviders may bill you the difference.\nCoverage Limits\nThe yearly limit is $5,000.",
        "A continued sentence about limits.\nAppeals\nYou may appeal within 60 days.",
    )
    blocks = parse_document("plan.pdf", data, pdf_headings=True)
    assert [(b.page, b.heading_path) for b in blocks] == [
        (1, ("Balance Billing",)),
        (1, ("Coverage Limits",)),
        (2, ("Coverage Limits",)),
        (2, ("Appeals",)),
    ]
    assert blocks[2].text == "A continued sentence about limits."


def test_late_level_one_heading_is_read_as_a_code_comment_when_asked() -> None:
    text = "# Embeddings\n\n## Voyage package\n\nInstall it.\n\n# Embed the documents\nvo.embed(texts)\n"
    strict = parse_document("e.md", text.encode())
    lenient = parse_document("e.md", text.encode(), code_comment_headings=False)
    assert strict[-1].heading_path == ("Embed the documents",)
    assert {b.heading_path for b in lenient} == {("Embeddings", "Voyage package")}
    assert "# Embed the documents" in lenient[-1].text
