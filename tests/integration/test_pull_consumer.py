"""The lean query path on a real nats-server: ``PullConsumer`` (nats-py's pull protocol, no
FastStream) and a query stage registered on it (its span per hop and its metrics).

The in-memory broker of the component tests cannot carry this path (it delivers only to FastStream
subscribers), so it is tested here; the fault tests (worker crash, redelivery, NATS restart, drain
on SIGTERM) run on it too, since every service uses it by default.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, RetentionPolicy, StorageType, StreamConfig
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_common import subjects
from rag_common.messages import Query, QueryRequested, QueryRouted
from rag_common.telemetry import setup_telemetry
from rag_common.transport.pulling import PullConsumer
from rag_devrun.natsserver import LocalNatsServer
from rag_router.app import create_app as create_router
from rag_router.settings import RouterSettings
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

STREAM, SUBJECT, DURABLE = "PULLTEST", "pulltest.work", "worker"


@pytest.fixture
async def nc(nats_server: LocalNatsServer) -> AsyncIterator[Client]:
    connection = await nats.connect(nats_server.url)
    await connection.jetstream().add_stream(
        StreamConfig(name=STREAM, subjects=[SUBJECT], retention=RetentionPolicy.WORK_QUEUE, storage=StorageType.MEMORY)
    )
    yield connection
    await connection.close()


def consumer_config() -> ConsumerConfig:
    return ConsumerConfig(
        name=DURABLE, durable_name=DURABLE, filter_subject=SUBJECT, ack_wait=30, max_deliver=3, max_ack_pending=100
    )


async def publish(nc: Client, count: int) -> None:
    js = nc.jetstream()
    for i in range(count):
        await js.publish(SUBJECT, str(i).encode())


async def test_a_replica_holds_at_most_its_concurrency_and_takes_the_rest_as_slots_free(nc: Client) -> None:
    held: list[Msg] = []
    release = asyncio.Event()
    most = 0

    async def handle(msg: Msg) -> None:
        nonlocal most
        held.append(msg)
        most = max(most, pull.in_hand)
        await release.wait()
        await msg.ack()

    pull = PullConsumer(stream=STREAM, durable=DURABLE, config=consumer_config(), handle=handle, concurrency=2)
    await pull.start(nc)
    try:
        await publish(nc, 6)
        await eventually(lambda: _value(len(held)), lambda n: n == 2, timeout_s=10, what="two messages in hand")
        info = await nc.jetstream().consumer_info(STREAM, DURABLE)
        assert info.num_pending == 4 and info.num_ack_pending == 2, "the other four wait in the stream"
        release.set()
        await eventually(lambda: _value(len(held)), lambda n: n == 6, timeout_s=10, what="all six handled")
    finally:
        await pull.stop(timeout_s=5)
    assert sorted(m.data for m in held) == [str(i).encode() for i in range(6)], "each message once"
    assert most == 2


async def test_pulls_resume_by_themselves_after_the_consumer_is_deleted_and_declared_again(nc: Client) -> None:
    handled: list[bytes] = []

    async def handle(msg: Msg) -> None:
        handled.append(msg.data)
        await msg.ack()

    pull = PullConsumer(
        stream=STREAM,
        durable=DURABLE,
        config=consumer_config(),
        handle=handle,
        concurrency=4,
        heartbeat_s=0.2,
        retry_s=0.05,
    )
    await pull.start(nc)
    try:
        js = nc.jetstream()
        await js.delete_consumer(STREAM, DURABLE)  # its pull requests die with it (NATS restart, by hand)
        await js.add_consumer(STREAM, config=consumer_config())  # what JetStreamLayout does
        await publish(nc, 3)
        await eventually(lambda: _value(len(handled)), lambda n: n == 3, timeout_s=10, what="handled after re-creation")
    finally:
        await pull.stop(timeout_s=5)


async def test_stop_lets_a_running_message_finish_and_cancels_one_past_the_drain_timeout(nc: Client) -> None:
    started, finish = asyncio.Event(), asyncio.Event()
    outcomes: list[str] = []

    async def handle(msg: Msg) -> None:
        started.set()
        try:
            await finish.wait()
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            await msg.nak()
            raise
        outcomes.append("finished")
        await msg.ack()

    pull = PullConsumer(stream=STREAM, durable=DURABLE, config=consumer_config(), handle=handle, concurrency=1)
    await pull.start(nc)
    await publish(nc, 1)
    await asyncio.wait_for(started.wait(), 10)
    stopping = asyncio.create_task(pull.stop(timeout_s=10))
    await asyncio.sleep(0)  # stop has begun: the running message may still finish
    finish.set()
    await stopping
    assert outcomes == ["finished"]

    started.clear()
    finish.clear()
    await pull.start(nc)
    await publish(nc, 1)
    await asyncio.wait_for(started.wait(), 10)
    await pull.stop(timeout_s=0.2)
    assert outcomes == ["finished", "cancelled"]
    # Handed back at once (ack_wait is 30 s): another worker has it now, delivered a second time.
    other = await nc.jetstream().pull_subscribe_bind(durable=DURABLE, stream=STREAM)
    [again] = await other.fetch(1, timeout=5)
    assert again.data == b"0" and again.metadata.num_delivered == 2
    await again.ack()


async def test_a_consumer_started_again_asks_for_work_again(nc: Client) -> None:
    handled: list[bytes] = []

    async def handle(msg: Msg) -> None:
        handled.append(msg.data)
        await msg.ack()

    pull = PullConsumer(stream=STREAM, durable=DURABLE, config=consumer_config(), handle=handle, concurrency=2)
    await pull.start(nc)  # asks for two messages ...
    await pull.stop(timeout_s=1)  # ... and leaves with that request open
    await pull.start(nc)
    try:
        await publish(nc, 1)
        # well within the two silent heartbeats (10 s) after which the watchdog would ask anyway
        await eventually(lambda: _value(len(handled)), lambda n: n == 1, timeout_s=3, what="handled after a restart")
    finally:
        await pull.stop(timeout_s=5)


async def test_a_lean_stage_writes_one_child_span_per_hop_and_faststreams_message_series(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    spans = InMemorySpanExporter()
    telemetry = setup_telemetry("router", [SimpleSpanProcessor(spans)])
    app = create_router(RouterSettings(nats_url=nats_server.url, data_dir=tmp_path, metrics_port=0), telemetry)
    await app.start()
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        routed = await js.pull_subscribe(subjects.QUERY_ROUTED, durable="probe", stream=subjects.QUERY_STREAM)
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        question = QueryRequested(query=Query(request_id="r1", gateway_id="gw", question="How do I export a board?"))
        await js.publish(subjects.QUERY_REQUESTED, question.model_dump_json().encode(), headers={"traceparent": parent})
        [msg] = await routed.fetch(1, timeout=10)
        assert QueryRouted.model_validate_json(msg.data).query.request_id == "r1"
        await msg.ack()

        async def hop_spans() -> list[str]:
            return [s.name for s in spans.get_finished_spans()]

        await eventually(hop_spans, lambda names: "rag.query.requested process" in names, timeout_s=10, what="span")
        [span] = [s for s in spans.get_finished_spans() if s.name == "rag.query.requested process"]
        assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
        assert span.parent is not None and format(span.parent.span_id, "016x") == "b7ad6b7169203331"
        assert [s.name for s in spans.get_finished_spans()] == ["rag.query.requested process"], "no publish spans"
        sent = (msg.headers or {}).get("traceparent", "")
        assert sent.split("-")[1:3] == ["0af7651916cd43dd8448eb211c80319c", format(span.context.span_id, "016x")]

        labels = {"app_name": "rag-router", "broker": "nats", "handler": subjects.QUERY_REQUESTED}
        registry = telemetry.registry

        def sample(name: str, **extra: str) -> float | None:
            return registry.get_sample_value(name, {**labels, **extra})

        assert sample("faststream_received_messages_total") == 1
        assert sample("faststream_received_processed_messages_total", status="acked") == 1
        assert sample("faststream_received_processed_messages_duration_seconds_count") == 1
        assert sample("faststream_received_messages_in_process") == 0
        handled = {"service": "router", "stage": subjects.ROUTER_CONSUMER, "outcome": "ok"}
        assert registry.get_sample_value("rag_messages_handled_total", handled) == 1
        published = {"app_name": "rag-router", "broker": "nats", "destination": subjects.QUERY_ROUTED}
        assert registry.get_sample_value("faststream_published_messages_total", {**published, "status": "success"}) == 1
    finally:
        await nc.close()
        await app.stop()


async def _value(value: int) -> int:
    return value
