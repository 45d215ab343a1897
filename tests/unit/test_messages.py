"""Unit tests for the wire messages: versioned types, tolerance of unknown fields, lossless stages."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from rag_common.messages import (
    AnswerDelta,
    DocumentStatus,
    IngestRequested,
    Passage,
    QueryAnswer,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
    Route,
    Usage,
    advance,
)

pytestmark = pytest.mark.unit

REQUESTED = QueryRequested(
    request_id="r1",
    gateway_id="g1",
    question="What does Pro cost?",
    collection="docs",
    session_id="s1",
    filters={"source": "pricing.md"},
    selected_text="Pro",
    trace_id="t1",
    timings_ms={"gateway": 1.5},
)
ROUTE = Route(tier="fast", score=1, signals={"sensitive": 1}, reason="score 1 < 4 (sensitive +1)")
PASSAGE = Passage(n=1, source="pricing.md", text="Pro costs $12.", similarity=0.8)
RETRIEVED = advance(QueryRetrieved, advance(QueryRouted, REQUESTED, route=ROUTE), passages=[PASSAGE])
EXAMPLES: dict[str, BaseModel] = {
    "rag.query.requested.v1": REQUESTED,
    "rag.query.routed.v1": advance(QueryRouted, REQUESTED, route=ROUTE),
    "rag.query.retrieved.v1": RETRIEVED,
    "rag.query.drafted.v1": advance(QueryDrafted, RETRIEVED, answer="$12 [1]", model="m", citations=[PASSAGE]),
    "rag.answer.final.v1": QueryAnswer(
        request_id="r1",
        answer="$12 [1]",
        model="m",
        citations=[PASSAGE],
        passages=[PASSAGE],
        route=ROUTE,
        flags={"uncited": False},
        flagged=False,
        usage=Usage(input_tokens=3),
    ),
    "rag.answer.delta.v1": AnswerDelta(request_id="r1", attempt="a1", seq=0, text="$12"),
    "rag.ingest.requested.v1": IngestRequested(
        request_id="r2", document_id="d1", source="pricing.md", object_name="o1", content_hash="h", size=10
    ),
}


@pytest.mark.parametrize(("type_", "message"), EXAMPLES.items())
def test_versioned_type_and_lossless_json_round_trip(type_: str, message: BaseModel) -> None:
    assert message.type == type_  # type: ignore[attr-defined]
    assert type(message).model_validate_json(message.model_dump_json()) == message


@pytest.mark.parametrize(
    "message", [*EXAMPLES.values(), DocumentStatus(document_id="d", collection="c", source="s", status="indexed")]
)
def test_unknown_fields_are_ignored(message: BaseModel) -> None:
    data = json.loads(message.model_dump_json()) | {"added_in_v2": {"x": 1}}
    parsed = type(message).model_validate_json(json.dumps(data))
    assert parsed == message
    assert not hasattr(parsed, "added_in_v2")


def test_advance_keeps_every_field_and_sets_the_new_type() -> None:
    drafted = EXAMPLES["rag.query.drafted.v1"]
    assert isinstance(drafted, QueryDrafted)
    assert drafted.type == "rag.query.drafted.v1"
    assert drafted.model_dump(include=set(QueryRequested.model_fields) - {"type"}) == REQUESTED.model_dump(
        exclude={"type"}
    )
    assert (drafted.route, drafted.passages, drafted.answer) == (ROUTE, [PASSAGE], "$12 [1]")


def test_advance_does_not_share_mutable_state_with_the_previous_stage() -> None:
    routed = advance(QueryRouted, REQUESTED, route=ROUTE)
    routed.timings_ms["router"] = 0.2
    assert REQUESTED.timings_ms == {"gateway": 1.5}
    assert routed.timings_ms == {"gateway": 1.5, "router": 0.2}
