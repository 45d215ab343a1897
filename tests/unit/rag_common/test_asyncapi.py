"""The checked-in AsyncAPI document is current and names every subject with its message."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import rag_common.wire.asyncapi as asyncapi
import rag_common.wire.subjects as subjects

pytestmark = pytest.mark.unit

CHECKED_IN = Path(__file__).resolve().parents[3] / "docs" / "asyncapi.json"


def test_regenerating_equals_the_checked_in_document() -> None:
    assert CHECKED_IN.read_text() == asyncapi.render(), (
        "run: python -m rag_common.wire.asyncapi --out docs/asyncapi.json"
    )
    assert asyncapi.main(["--check", str(CHECKED_IN)]) == 0


def test_check_fails_on_a_stale_document(tmp_path: Path) -> None:
    stale = tmp_path / "asyncapi.json"
    stale.write_text(CHECKED_IN.read_text().replace("rag.query.routed", "rag.query.renamed"))
    assert asyncapi.main(["--check", str(stale)]) == 1


def test_every_subject_is_there_with_its_typed_message() -> None:
    document = json.loads(CHECKED_IN.read_text())
    assert document["asyncapi"].startswith("3.")
    addresses = {channel["address"] for channel in document["channels"].values()}
    expected = {
        subjects.INGEST_REQUESTED,
        subjects.INGEST_DELETE,
        subjects.QUERY_REQUESTED,
        subjects.QUERY_ROUTED,
        subjects.QUERY_RETRIEVED,
        subjects.QUERY_DRAFTED,
        subjects.ASSESSMENT_REQUESTED,
        subjects.ASSESSMENT_RETRIEVED,
        subjects.ASSESSMENT_DRAFTED,
        subjects.ASSESSMENT_REJECTED,
        subjects.answer_subject("{gateway_id}", "{request_id}", "delta"),
        subjects.answer_subject("{gateway_id}", "{request_id}", "final"),
        subjects.answer_subject("{gateway_id}", "{request_id}", "error"),
        subjects.dlq_subject("{area}", "{stage}"),
        subjects.audit_subject("{action}", "{actor}"),
        subjects.ping_subject("{service}"),
    }
    assert expected == addresses
    schemas = document["components"]["schemas"]
    for channel in asyncapi.CHANNELS:
        model = schemas[channel.model.__name__]
        if channel.model is not asyncapi.PingRequest:  # a ping has no payload
            assert model["properties"], channel.model.__name__
        if "type" in model["properties"]:  # wire messages carry their versioned type, one value only
            type_ = model["properties"]["type"]
            assert type_["const"] == type_["default"]
            assert re.fullmatch(r"rag\.[a-z.]+\.v\d+", type_["default"])
    actions = {(op["channel"]["$ref"].rsplit("/", 1)[1], op["action"]) for op in document["operations"].values()}
    for subject in (subjects.QUERY_ROUTED, subjects.INGEST_REQUESTED):  # each has a sender and a receiver
        assert {a for c, a in actions if c.startswith(subject + ":")} == {"send", "receive"}


def test_faststream_can_generate_it_from_the_factory() -> None:
    app = asyncapi.create_app()
    assert app.schema is not None
    generated = app.schema.to_specification().to_jsonable()
    assert generated["channels"].keys() == json.loads(CHECKED_IN.read_text())["channels"].keys()
