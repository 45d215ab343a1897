"""A work queue's subscriber is its handler, typed with its message model: FastStream validates the
body against that type and documents it, and the error policy settles whatever fails."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.nats import JStream, NatsBroker, TestNatsBroker
from faststream.specification import AsyncAPI

from rag_common.config.settings import ServiceSettings
from rag_common.transport.consuming import PermanentError, register_work_queue
from rag_common.transport.streams import QUERY_JSTREAM
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import DeadLetter, Query, QueryRequested
from rag_router.app import build_broker
from rag_router.handlers import RouterHandlers
from rag_router.settings import RouterSettings

pytestmark = pytest.mark.component

JSON = {"content-type": "application/json"}
DLQ = JStream(subjects.DLQ_STREAM, declare=False)


def letters_of(broker: NatsBroker) -> list[DeadLetter]:
    letters: list[DeadLetter] = []

    @broker.subscriber(subjects.dlq_subject("*", "*"), stream=DLQ, durable="letters", pull_sub=True)
    async def keep(letter: DeadLetter) -> None:
        letters.append(letter)

    return letters


def count(telemetry: ServiceTelemetry, stage: str, outcome: str) -> float:
    value: float = telemetry.messages.labels(telemetry.service, stage, outcome)._value.get()
    return value


def test_a_stage_is_documented_with_its_handlers_message_type_and_docstring() -> None:
    broker, _ = build_broker(RouterSettings(metrics_port=0), setup_telemetry("router"))
    document = AsyncAPI(broker).to_specification().to_jsonable()
    (channel,) = [c for c in document["channels"].values() if c["address"] == subjects.QUERY_REQUESTED]
    assert channel["description"] == RouterHandlers.on_requested.__doc__
    (message,) = channel["messages"].values()
    payload = document["components"]["messages"][message["$ref"].rsplit("/", 1)[1]]["payload"]
    assert payload == {"$ref": "#/components/schemas/QueryRequested"}
    assert document["components"]["schemas"]["QueryRequested"]["required"] == ["query"]


async def test_a_body_that_does_not_validate_is_dead_lettered_and_its_client_told() -> None:
    telemetry = setup_telemetry("router")
    broker, _ = build_broker(RouterSettings(metrics_port=0), telemetry)
    letters = letters_of(broker)
    errors: list[dict[str, Any]] = []

    @broker.subscriber(subjects.answer_subject("gw", "*", "error"))
    async def told(error: dict[str, Any]) -> None:
        errors.append(error)

    async with TestNatsBroker(broker) as br:
        stream = subjects.QUERY_STREAM
        await br.publish(b'{"query": {"request_id": "r-cut"', subjects.QUERY_REQUESTED, stream=stream, headers=JSON)
        missing = b'{"query": {"request_id": "r-bad", "gateway_id": "gw"}}'
        await br.publish(missing, subjects.QUERY_REQUESTED, stream=stream, headers=JSON)
        wrong_kind = QueryRequested(query=Query(request_id="r-kind", gateway_id="gw", question="Hi?"))
        body = wrong_kind.model_dump_json().replace("rag.query.requested.v2", "rag.query.routed.v2")
        await br.publish(body.encode(), subjects.QUERY_REQUESTED, stream=stream, headers=JSON)

    assert [letter.subject for letter in letters] == [subjects.QUERY_REQUESTED] * 3
    assert all(letter.error.startswith("invalid QueryRequested message: ") for letter in letters)
    assert "JSONDecodeError" in letters[0].error
    assert "('query', 'question')" in letters[1].error
    assert letters[1].request_id == "r-bad"
    assert "'loc': ('type',)" in letters[2].error
    assert letters[1].payload == missing.decode()  # kept whole, to be replayed
    assert [(e["request_id"], e["code"], e["status"]) for e in errors] == [
        ("r-bad", "invalid_message", 400),
        ("r-kind", "invalid_message", 400),
    ]
    assert count(telemetry, "router", "rejected") == 3
    assert count(telemetry, "router", "ok") == 0


class Failing:
    """A stage whose handler fails in a given way, to see how the error policy settles it."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.seen: list[str] = []
        self.reported: list[tuple[dict[str, Any], str, int]] = []

    async def on_requested(self, requested: QueryRequested) -> None:
        """Fail with ``error``."""
        self.seen.append(requested.query.request_id)
        raise self.error

    async def report(self, fields: dict[str, Any], code: str, message: str, status: int) -> None:
        self.reported.append((fields, code, status))


async def run_failing(error: Exception) -> tuple[Failing, list[DeadLetter], ServiceTelemetry]:
    telemetry = setup_telemetry("probe")
    broker = NatsBroker()
    stage = Failing(error)
    register_work_queue(
        broker,
        ServiceSettings(max_deliver=3),
        telemetry,
        subject=subjects.QUERY_REQUESTED,
        consumer="probe",
        stream=QUERY_JSTREAM,
        area="query",
        work=stage.on_requested,
        ack_wait=30.0,
        on_failure=stage.report,
    )
    letters = letters_of(broker)
    question = QueryRequested(query=Query(request_id="r1", gateway_id="gw", question="How do I export?"))
    async with TestNatsBroker(broker) as br:
        await br.publish(question, subjects.QUERY_REQUESTED, stream=subjects.QUERY_STREAM)
    return stage, letters, telemetry


async def test_a_handlers_own_validation_error_is_retried_not_called_an_invalid_message() -> None:
    try:
        Query.model_validate({})
    except ValueError as exc:
        own = exc
    stage, letters, telemetry = await run_failing(own)
    assert stage.seen == ["r1"]
    assert letters == []
    assert stage.reported == []
    assert count(telemetry, "probe", "retry") == 1


async def test_a_permanent_failure_is_dead_lettered_once_and_reported_with_the_message() -> None:
    stage, letters, telemetry = await run_failing(PermanentError("unknown_collection", "no such collection", 404))
    expected = ("unknown_collection: no such collection", "r1")
    assert [(letter.error, letter.request_id) for letter in letters] == [expected]
    ((fields, code, status),) = stage.reported
    assert (fields["query"]["request_id"], code, status) == ("r1", "unknown_collection", 404)
    assert count(telemetry, "probe", "rejected") == 1
    assert count(telemetry, "probe", "retry") == 0


def test_a_handler_without_a_typed_message_is_refused_when_subscribed() -> None:
    async def untyped(message):  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(TypeError, match="one parameter typed with its message model"):
        register_work_queue(
            NatsBroker(),
            ServiceSettings(),
            setup_telemetry("probe"),
            subject=subjects.QUERY_REQUESTED,
            consumer="probe",
            stream=QUERY_JSTREAM,
            area="query",
            work=untyped,
            ack_wait=30.0,
            on_failure=Failing(ValueError()).report,
        )
