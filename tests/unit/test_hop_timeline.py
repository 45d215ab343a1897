"""The questions profile's timeline: a question cut into hops and stages, and the speed targets in the report."""

from __future__ import annotations

import pytest

from benchmarks.report import beside
from benchmarks.timeline import FINAL, QuestionTimeline, Timelines, request_of, summary
from rag_common.wire import subjects

pytestmark = pytest.mark.unit


def msg_id(request_id: str, subject: str) -> dict[str, str]:
    return {"Nats-Msg-Id": f"{request_id}:{subject}"}


def test_messages_are_told_apart_by_request_and_subject() -> None:
    assert request_of(subjects.QUERY_REQUESTED, {"Nats-Msg-Id": "r1:requested"}) == ("r1", subjects.QUERY_REQUESTED)
    assert request_of(subjects.QUERY_ROUTED, msg_id("r1", subjects.QUERY_ROUTED)) == ("r1", subjects.QUERY_ROUTED)
    assert request_of(subjects.answer_subject("gw", "r1", "final"), None) == ("r1", FINAL)
    assert request_of(subjects.answer_subject("gw", "r1", "delta"), None) is None
    assert request_of("rag.control.ping.router", {"Nats-Msg-Id": "x"}) is None


def test_a_question_is_cut_into_consecutive_pieces_that_add_up_to_the_whole() -> None:
    timelines = Timelines()
    moments = [  # (publishing subject, published at, stored at, received at), seconds
        (subjects.QUERY_REQUESTED, 0.002, 0.0025, 0.0024),
        (subjects.QUERY_ROUTED, 0.003, 0.0035, 0.0034),
        (subjects.QUERY_RETRIEVED, 0.015, 0.0155, 0.0154),
        (subjects.QUERY_DRAFTED, 0.019, 0.0195, 0.0194),
    ]
    for subject, published, stored, received in moments:
        timelines.published(subject, msg_id("r1", subject), published, stored)
        timelines.received(subject, msg_id("r1", subject), received)
    final = subjects.answer_subject("gw", "r1", "final")
    timelines.published(final, {}, 0.021, 0.0211)
    timelines.received(final, None, 0.0213)
    timelines.asked("r1", 0.0, 0.025, {"router": 0.3, "retriever": 11.0})
    timelines.asked("r2", 0.0, 0.01, {})  # no hop seen: not complete, left out

    [question] = timelines.complete()
    pieces = question.segments()
    assert [name for name, _ in pieces] == [
        "gateway in",
        "hop requested",
        "router",
        "hop routed",
        "retriever",
        "hop retrieved",
        "generator",
        "hop drafted",
        "evaluator",
        "hop final",
        "gateway out",
    ]
    assert dict(pieces)["hop routed"] == pytest.approx(0.4)
    assert dict(pieces)["retriever"] == pytest.approx(11.6)
    assert sum(ms for _, ms in pieces) == pytest.approx(25.0)
    assert question.pubacks_ms()["requested"] == pytest.approx(0.5)
    figures = summary([question])
    assert figures["whole (client)"]["p50"] == pytest.approx(25.0)
    assert figures["retriever work (timings_ms)"]["p50"] == 11.0
    assert figures["whole less the stages' work"]["p50"] == pytest.approx(25.0 - 11.3)


def test_a_greeting_skips_the_stages_it_never_reached() -> None:
    question = QuestionTimeline(sent=0.0, done=0.006)
    question.published = {subjects.QUERY_REQUESTED: 0.001, subjects.QUERY_DRAFTED: 0.002, FINAL: 0.003}
    question.received = {subjects.QUERY_REQUESTED: 0.0015, subjects.QUERY_DRAFTED: 0.0025, FINAL: 0.0035}
    names = [name for name, _ in question.segments()]
    assert names == ["gateway in", "hop requested", "router", "hop drafted", "evaluator", "hop final", "gateway out"]


def test_the_report_prints_issue_9s_targets_beside_the_figures() -> None:
    assert beside("overhead.nats_minus_inprocess_p50_ms", 6.8) == "target <= 2: MISSED"
    assert beside("overhead.nats_minus_inprocess_p50_ms", 1.9) == "target <= 2: met"
    assert beside("throughput.retriever_x1.c8_qps", 36.5) == "target >= 36: met"
    assert beside("ingest.ratio", 0.89) == "target >= 0.9: MISSED"
    assert beside("query.c1.answer_over_retrieval", 1.5) == "target <= 1.5: met"
    assert beside("query.c8.e2e_p50_ms", 300.0) == ""
