"""Unit tests for the gateway's AnswerHub: what reaches a waiting client, and what never does."""

from __future__ import annotations

import pytest

from rag_common.wire.messages import AnswerDelta, AnswerError, Query, QueryAnswered, QueryRequested
from rag_common.wire.subjects import answer_subject
from rag_gateway.answers import AnswerHub, Event, Pending
from tests.support.messages import answered

pytestmark = pytest.mark.unit


def final(answer: str, request_id: str = "r1") -> bytes:
    return answered(answer, request_id).model_dump_json().encode()


def delta(text: str, attempt: str = "a1", seq: int = 0) -> bytes:
    return AnswerDelta(request_id="r1", attempt=attempt, seq=seq, text=text).model_dump_json().encode()


def error(message: str) -> bytes:
    return AnswerError(request_id="r1", code="boom", message=message, status=503).model_dump_json().encode()


def subject(kind: str, request_id: str = "r1") -> str:
    return answer_subject("g1", request_id, kind)


def drain(pending: Pending) -> list[Event]:
    events = []
    while not pending.queue.empty():
        events.append(pending.queue.get_nowait())
    return events


def test_events_reach_the_request_they_name_in_order() -> None:
    hub = AnswerHub()
    mine, other = hub.open("r1"), hub.open("r2")
    hub.deliver(subject("delta"), delta("Pro costs ", seq=0))
    hub.deliver(subject("delta"), delta("$12 [1]", seq=1))
    hub.deliver(subject("final"), final("Pro costs $12 [1]"))
    events = drain(mine)
    assert [type(e) for e in events] == [AnswerDelta, AnswerDelta, QueryAnswered]
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "Pro costs $12 [1]"
    assert drain(other) == []
    assert hub.in_flight == 2


def test_second_final_is_dropped() -> None:
    hub = AnswerHub()
    pending = hub.open("r1")
    hub.deliver(subject("final"), final("first"))
    hub.deliver(subject("final"), final("second"))
    hub.deliver(subject("error"), error("late"))
    hub.deliver(subject("delta"), delta("late"))
    assert [e.draft.answer for e in drain(pending) if isinstance(e, QueryAnswered)] == ["first"]
    assert pending.queue.empty()


def test_error_reaches_the_client_and_ends_the_request() -> None:
    hub = AnswerHub()
    pending = hub.open("r1")
    hub.deliver(subject("error"), error("no generator"))
    hub.deliver(subject("final"), final("too late"))
    events = drain(pending)
    assert len(events) == 1
    assert isinstance(events[0], AnswerError)
    assert (events[0].message, events[0].status) == ("no generator", 503)


def test_deltas_of_a_second_attempt_are_dropped() -> None:
    hub = AnswerHub()
    pending = hub.open("r1")
    hub.deliver(subject("delta"), delta("Pro ", attempt="a1"))
    hub.deliver(subject("delta"), delta("Pro ", attempt="a2"))
    hub.deliver(subject("delta"), delta("costs $12", attempt="a1", seq=1))
    texts = [e.text for e in drain(pending) if isinstance(e, AnswerDelta)]
    assert texts == ["Pro ", "costs $12"]


@pytest.mark.parametrize(
    ("subject_", "body"),
    [
        (subject("final"), b"{not json"),
        (subject("final"), b"\xff\xfe"),
        (subject("delta"), b'{"request_id": "r1"}'),
        (subject("verdict"), final("unknown kind")),
        (subject("final", request_id="nobody"), final("unknown request")),
        ("final", final("no request id")),
        ("", b""),
    ],
)
def test_malformed_or_unknown_messages_are_ignored(subject_: str, body: bytes) -> None:
    hub = AnswerHub()
    pending = hub.open("r1")
    hub.deliver(subject_, body)
    assert pending.queue.empty()
    hub.deliver(subject("final"), final("still answered"))  # the request is not spoiled
    assert [e.draft.answer for e in drain(pending) if isinstance(e, QueryAnswered)] == ["still answered"]


def test_nothing_is_delivered_after_close() -> None:
    hub = AnswerHub()
    pending = hub.open("r1")
    hub.close("r1")
    hub.close("r1")  # closing twice is harmless
    hub.deliver(subject("delta"), delta("late"))
    hub.deliver(subject("final"), final("late"))
    assert pending.queue.empty()
    assert hub.in_flight == 0


def test_unanswered_lists_queued_questions_until_their_final_answer() -> None:
    """What the gateway re-submits after a NATS restart: queued, not yet answered, still waited for."""
    hub = AnswerHub()
    questions = {
        rid: QueryRequested(query=Query(request_id=rid, gateway_id="gw", question=f"q {rid}")) for rid in ("r1", "r2")
    }
    for rid, question in questions.items():
        hub.open(rid).question = question
    hub.open("r3")  # its publish has not been acknowledged yet: nothing to re-submit
    assert [q.query.request_id for q in hub.unanswered()] == ["r1", "r2"]
    hub.deliver(subject("final", "r1"), final("done", "r1"))
    assert [q.query.request_id for q in hub.unanswered()] == ["r2"]
    hub.close("r2")  # the caller gave up (504) or disconnected
    assert hub.unanswered() == []
