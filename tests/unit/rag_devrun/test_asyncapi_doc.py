"""docs/asyncapi.json is FastStream's AsyncAPI document of the real subscribers, and it is current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from pydantic import BaseModel

import rag_devrun.asyncapi_doc as asyncapi_doc
from rag_common.wire import subjects
from rag_common.wire.messages import (
    DeleteRequested,
    IngestRequested,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
)
from rag_common.wire.messages.assessment import (
    AssessmentDrafted,
    AssessmentRejected,
    AssessmentRequested,
    AssessmentRetrieved,
)

pytestmark = pytest.mark.unit

CHECKED_IN = Path(__file__).resolve().parents[3] / "docs" / "asyncapi.json"

STAGES: dict[str, type[BaseModel]] = {
    subjects.INGEST_REQUESTED: IngestRequested,
    subjects.INGEST_DELETE: DeleteRequested,
    subjects.QUERY_REQUESTED: QueryRequested,
    subjects.QUERY_ROUTED: QueryRouted,
    subjects.QUERY_RETRIEVED: QueryRetrieved,
    subjects.QUERY_DRAFTED: QueryDrafted,
    subjects.ASSESSMENT_REQUESTED: AssessmentRequested,
    subjects.ASSESSMENT_RETRIEVED: AssessmentRetrieved,
    subjects.ASSESSMENT_DRAFTED: AssessmentDrafted,
    subjects.ASSESSMENT_REJECTED: AssessmentRejected,
}


@pytest.fixture(scope="module")
def generated() -> dict[str, Any]:
    """What ``faststream docs gen`` writes: the app's specification as JSON."""
    app = asyncapi_doc.create_app()
    assert app.schema is not None
    document: dict[str, Any] = app.schema.to_specification().to_jsonable()
    return document


def payloads(document: dict[str, Any]) -> dict[str, str]:
    """Each channel's address and the name of the schema its messages carry."""
    found = {}
    for channel in document["channels"].values():
        (message,) = channel["messages"].values()
        payload = document["components"]["messages"][unquote(message["$ref"].rsplit("/", 1)[1])]["payload"]
        found[channel["address"]] = payload.get("$ref", "").rsplit("/", 1)[-1]
    return found


def test_the_checked_in_document_is_what_faststream_generates(generated: dict[str, Any]) -> None:
    assert json.loads(CHECKED_IN.read_text()) == generated, f"run: {asyncapi_doc.COMMAND}"


def test_each_stage_is_documented_with_the_message_its_handler_takes(generated: dict[str, Any]) -> None:
    found, schemas = payloads(generated), generated["components"]["schemas"]
    for subject, model in STAGES.items():
        assert found[subject] == model.__name__, subject
        type_ = schemas[model.__name__]["properties"]["type"]  # the versioned type, one value only
        assert type_["const"] == type_["default"] == model.model_fields["type"].default
    for channel in generated["channels"].values():
        if channel["address"] in STAGES:
            assert channel["description"], f"{channel['address']}: its handler has no docstring"
    assert {subjects.ping_subject(service) for service in subjects.SERVICES} <= found.keys()
    assert subjects.answer_wildcard("{gateway_id}") in found
