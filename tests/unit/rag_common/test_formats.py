"""One list of formats: the page, the upload route, the CLI and ranking name exactly what ingest accepts."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import rag_gateway.openapi_file as openapi_file
from rag_client.cli import build_parser
from rag_common.wire.formats import FORMAT_NAMES, SUPPORTED_EXTENSIONS
from rag_gateway.api.web import install_web
from rag_retriever.ranking import named_source

pytestmark = pytest.mark.unit

EXTENSIONS = list(SUPPORTED_EXTENSIONS)


class _Upload(HTMLParser):
    """The page's file picker's ``accept=`` and the text of its label."""

    def __init__(self) -> None:
        super().__init__()
        self.accept: str | None = None
        self.label = ""
        self._in_label = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "input" and found.get("id") == "files":
            self.accept = found.get("accept")
        self._in_label = tag == "label" and found.get("for") == "files"

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self._in_label = False

    def handle_data(self, data: str) -> None:
        if self._in_label:
            self.label += data


def served_upload_form() -> _Upload:
    app = FastAPI()
    install_web(app)
    response = TestClient(app).get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    form = _Upload()
    form.feed(response.text)
    return form


def test_the_pages_file_picker_accepts_exactly_the_supported_extensions() -> None:
    form = served_upload_form()
    assert form.accept is not None
    assert sorted(form.accept.split(",")) == sorted(EXTENSIONS)  # no ".text", which the gateway refuses


def test_the_pages_upload_label_names_every_format_and_extension() -> None:
    label = served_upload_form().label
    for name in FORMAT_NAMES.values():
        assert name in label
    for extension in EXTENSIONS:
        assert re.search(rf"{re.escape(extension)}\b", label), (extension, label)


def test_the_upload_routes_description_names_every_extension() -> None:
    document = json.loads(openapi_file.document())
    form = document["components"]["schemas"]["Body_upload_document_v1_documents_post"]
    description = form["properties"]["file"]["description"]
    for extension in EXTENSIONS:
        assert re.search(rf"{re.escape(extension)}\b", description), (extension, description)


def test_rag_ingest_help_names_every_extension(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ingest", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for extension in EXTENSIONS:
        assert re.search(rf"{re.escape(extension)}\b", help_text), (extension, help_text)


@pytest.mark.parametrize("extension", EXTENSIONS)
def test_a_question_may_name_a_file_by_any_supported_type(extension: str) -> None:
    """ "according to the onboarding pptx guide": the type between title words does not end the name."""
    source = f"onboarding-guide{extension}"
    question = f"How do I invite a member according to the onboarding {extension.lstrip('.')} guide?"
    assert named_source(question, [source, "pricing.md"]) == source
