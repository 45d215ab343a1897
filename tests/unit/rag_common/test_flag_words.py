"""One list of flags: the page's notices and docs/FLAGS.md come from ``Flag`` and its words, never a copy."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import rag_common.wire.flags_doc as flags_doc
from rag_common.wire.messages.flags import INFORMATIONAL_FLAGS, WORDS, Flag
from rag_gateway.api.web import install_web

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
CHECKED_IN = ROOT / "docs" / "FLAGS.md"
PAGE_SCRIPT = ROOT / "gateway" / "rag_gateway" / "static" / "app.js"


class _Notices(HTMLParser):
    """The text of the page's ``<script id="flag-notices">`` block."""

    def __init__(self) -> None:
        super().__init__()
        self.text = ""
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._inside = tag == "script" and dict(attrs).get("id") == "flag-notices"

    def handle_endtag(self, tag: str) -> None:
        self._inside = False

    def handle_data(self, data: str) -> None:
        if self._inside:
            self.text += data


def served_notices() -> dict[str, str]:
    app = FastAPI()
    install_web(app)
    response = TestClient(app).get("/")
    assert response.status_code == 200
    block = _Notices()
    block.feed(response.text)
    notices: dict[str, str] = json.loads(block.text)
    return notices


def test_the_served_page_carries_every_flags_notice() -> None:
    assert served_notices() == {str(flag): WORDS[flag].notice for flag in Flag}


def test_the_pages_script_keeps_no_copy_of_a_notice() -> None:
    script = PAGE_SCRIPT.read_text()
    copied = [words.notice for words in WORDS.values() if words.notice.rstrip(".") in script]
    assert not copied, f"app.js copies flag notices instead of reading them from the page: {copied}"


def test_regenerating_equals_the_checked_in_document() -> None:
    assert CHECKED_IN.read_text() == flags_doc.render(), f"run: {flags_doc.COMMAND}"
    assert flags_doc.main(["--check", str(CHECKED_IN)]) == 0


def test_check_fails_on_a_stale_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "FLAGS.md"
    stale.write_text(CHECKED_IN.read_text().replace(f"| `{Flag.TERMINOLOGY}` |", "| `glossary` |"))
    assert flags_doc.main(["--check", str(stale)]) == 1
    assert "is stale: run python -m rag_common.wire.flags_doc --out" in capsys.readouterr().err


def test_the_document_has_one_row_per_flag_with_its_kind() -> None:
    text = CHECKED_IN.read_text()
    for flag in Flag:
        kind = "informational" if flag in INFORMATIONAL_FLAGS else "failing"
        assert f"| `{flag}` | {kind} | {WORDS[flag].meaning} |" in text, flag


@pytest.mark.parametrize("page", ["USAGE.md", "EVALUATION.md"])
def test_the_guides_link_the_generated_table_instead_of_describing_each_flag(page: str) -> None:
    text = (ROOT / "docs" / page).read_text()
    assert "FLAGS.md" in text
    described = [flag for flag in Flag if f"`{flag}` (" in text]
    assert not described, f"docs/{page} describes flags by hand: {described}"
