"""Unit tests for the wire messages: versioned types, tolerance of unknown fields, stages that share
the question instead of copying it."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from rag_common.wire.messages import (
    AnswerDelta,
    ChunkPayload,
    DocumentStatus,
    Draft,
    Evaluation,
    Flag,
    IngestRequested,
    Passage,
    Query,
    QueryAnswered,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
    Retrieval,
    Route,
    Turn,
    Usage,
)

pytestmark = pytest.mark.unit

QUERY = Query(
    request_id="r1",
    gateway_id="g1",
    question="What does Pro cost?",
    collection="docs",
    session_id="s1",
    filters={"source": "pricing.md"},
    selected_text="Pro",
    trace_id="t1",
)
ROUTE = Route(tier="fast", score=1, signals={"sensitive": 1}, reason="score 1 < 4 (sensitive +1)")
PASSAGE = Passage(n=1, source="pricing.md", text="Pro costs $12.", similarity=0.8)
OTHER = Passage(n=2, source="faq.md", text="Pro has SSO.", similarity=0.7)
RETRIEVAL = Retrieval(passages=[PASSAGE, OTHER], threshold=0.4)
DRAFTED = QueryDrafted(
    query=QUERY,
    route=ROUTE,
    retrieval=RETRIEVAL,
    draft=Draft(answer="$12 [2][1]", model="m", cited=[2, 1], usage=Usage(input_tokens=3)),
    suspicions=["question: override"],
    timings_ms={"router": 0.2, "generator": 4.0},
)
EVALUATION = Evaluation(
    flags={"refused": False, "citation_invalid": True}, details={"citation_invalid": {}}, flagged=True
)
EXAMPLES: dict[str, BaseModel] = {
    "rag.query.requested.v2": QueryRequested(query=QUERY),
    "rag.query.routed.v2": QueryRouted(query=QUERY, route=ROUTE, timings_ms={"router": 0.2}),
    "rag.query.retrieved.v2": QueryRetrieved(query=QUERY, route=ROUTE, retrieval=RETRIEVAL),
    "rag.query.drafted.v2": DRAFTED,
    "rag.answer.final.v2": QueryAnswered.of(DRAFTED, EVALUATION),
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


def test_a_message_of_another_type_does_not_validate() -> None:
    routed = EXAMPLES["rag.query.routed.v2"].model_dump_json()
    with pytest.raises(ValidationError, match="type"):
        QueryRetrieved.model_validate_json(routed.replace('"route"', '"retrieval": {}, "route"'))
    with pytest.raises(ValidationError, match="type"):
        QueryRequested.model_validate_json(json.dumps({"type": "rag.query.requested.v1", "query": QUERY.model_dump()}))


def test_a_bad_collection_name_is_refused_by_the_model_itself() -> None:
    with pytest.raises(ValidationError, match="collection 'Docs!'"):
        Query(request_id="r", gateway_id="g", question="q", collection="Docs!")
    with pytest.raises(ValidationError, match="collection"):
        IngestRequested.model_validate(EXAMPLES["rag.ingest.requested.v1"].model_dump() | {"collection": "../x"})


def test_the_question_travels_once_and_citations_follow_the_drafts_order() -> None:
    drafted = EXAMPLES["rag.query.drafted.v2"]
    assert isinstance(drafted, QueryDrafted)
    assert drafted.query is QUERY  # the next stage holds the question, no copy and no re-validation
    assert [p.n for p in drafted.citations] == [2, 1]
    assert json.loads(drafted.model_dump_json()).keys() == {
        "type",
        "query",
        "route",
        "suspicions",
        "timings_ms",
        "retrieval",
        "draft",
        "selection_spans",
        "profile",
        "kept",
    }


def test_the_final_message_is_the_drafted_parts_plus_the_evaluation() -> None:
    answered = QueryAnswered.of(DRAFTED, EVALUATION)
    # The parts themselves, not copies: nothing is copied field by field or re-validated.
    assert answered.query is QUERY
    assert answered.route is ROUTE
    assert answered.retrieval is RETRIEVAL
    assert answered.draft is DRAFTED.draft
    assert answered.evaluation is EVALUATION
    assert answered.suspicions == DRAFTED.suspicions
    assert answered.timings_ms == DRAFTED.timings_ms
    assert answered.citations == DRAFTED.citations == [OTHER, PASSAGE]
    # On the wire: the drafted message's keys and the evaluation; the cited passages travel once.
    wire = json.loads(answered.model_dump_json())
    assert wire.keys() == json.loads(DRAFTED.model_dump_json()).keys() - {"kept"} | {"evaluation", "cached"}
    assert wire["cached"] is False
    assert wire["type"] == "rag.answer.final.v2"
    assert wire["evaluation"] == {"flags": EVALUATION.flags, "details": {"citation_invalid": {}}, "flagged": True}


def test_the_conversation_does_not_travel_back_with_the_final_answer() -> None:
    history = [Turn(question="What does Pro cost?", answer="$12 [1]" * 200, sources=["pricing.md"])] * 10
    drafted = DRAFTED.model_copy(update={"query": QUERY.model_copy(update={"history": history})})
    answered = QueryAnswered.of(drafted, EVALUATION)
    assert answered.query.history == history  # in process, the part as it is
    wire = json.loads(answered.model_dump_json())
    assert "history" not in wire["query"]
    assert wire["query"] == json.loads(QUERY.model_dump_json(exclude={"history"}))
    assert len(answered.model_dump_json()) < len(drafted.model_dump_json()) / 2


def test_a_drafted_message_is_not_a_final_answer() -> None:
    with pytest.raises(ValidationError, match="type"):
        QueryAnswered.model_validate_json(
            DRAFTED.model_dump_json().replace('"draft"', f'"evaluation": {EVALUATION.model_dump_json()}, "draft"')
        )


def test_a_chunk_payload_round_trips_through_the_store_format_into_a_passage() -> None:
    chunk = ChunkPayload(
        text="Ignore this. Pro costs $12.",
        source="pricing.md",
        section="Plans",
        page=2,
        chunk_index=3,
        kind="table",
        injection_spans=[(0, 12)],
    )
    stored = chunk.stored() | {"document_id": "d1", "content_hash": "h1"}  # what the store adds
    assert json.loads(json.dumps(stored)) == stored  # plain JSON, as Qdrant keeps it
    passage = Passage.from_chunk(1, ChunkPayload.model_validate(stored), score=0.1234567, similarity=0.87654)
    assert passage == Passage(
        n=1,
        source="pricing.md",
        section="Plans",
        page=2,
        chunk_index=3,
        score=0.123457,
        similarity=0.8765,
        text="Ignore this. Pro costs $12.",
        document_id="d1",
        kind="table",
        injection_spans=[(0, 12)],
    )


def test_flags_travel_as_their_bare_names_in_the_order_answers_list_them() -> None:
    evaluation = Evaluation(flags={flag: flag is Flag.REFUSED for flag in Flag}, flagged=False)
    assert json.loads(evaluation.model_dump_json())["flags"] == {
        "refused": True,
        "citation_invalid": False,
        "conflicting_sources": False,
        "ungrounded": False,
        "low_confidence": False,
        "injection_suspected": False,
        "terminology": False,
        "model_answer_rejected": False,
    }
    assert list(json.loads(evaluation.model_dump_json())["flags"]) == [str(flag) for flag in Flag]


def test_a_flag_a_newer_evaluator_raises_reaches_an_older_reader() -> None:
    """Flags are keyed by name, not by this release's ``Flag``: a gateway that does not know a new
    flag still reads the answer and passes the flag on."""
    wire = {"flags": {"refused": False, "hallucinated_table": True}, "details": {}, "flagged": True}
    evaluation = Evaluation.model_validate_json(json.dumps(wire))
    assert evaluation.flags["hallucinated_table"] is True
    assert not evaluation.raised(Flag.REFUSED)
    assert not evaluation.raised(Flag.TERMINOLOGY)  # not reported: not raised
