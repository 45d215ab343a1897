"""Query stages on a real nats-server: broken messages, replicas sharing work, answers by request id."""

from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest

from rag_common.wire import subjects
from rag_common.wire.messages import Query, QueryRequested
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


async def test_broken_message_is_dead_lettered_and_the_client_told(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services, options.gateway = ("router",), False
    async with Stack(options):
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        errors = await nc.subscribe(subjects.answer_subject("gw1", "*", "error"))
        dead = await js.subscribe(f"{subjects.PREFIX}.dlq.query.>", ordered_consumer=True)

        await js.publish(subjects.QUERY_REQUESTED, b"\xff not json at all")
        letter = json.loads((await dead.next_msg(timeout=10)).data)
        assert letter["subject"] == subjects.QUERY_REQUESTED
        assert "invalid QueryRequested" in letter["error"]

        await js.publish(
            subjects.QUERY_REQUESTED, json.dumps({"query": {"request_id": "r-bad", "gateway_id": "gw1"}}).encode()
        )
        error = json.loads((await errors.next_msg(timeout=10)).data)
        assert error == error | {"request_id": "r-bad", "code": "invalid_message", "status": 400}
        assert "question" in error["message"]
        second = json.loads((await dead.next_msg(timeout=10)).data)
        assert second["request_id"] == "r-bad"
        await nc.close()


async def test_router_replicas_share_one_consumer_and_each_question_is_routed_once(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services, options.gateway, options.replicas = ("router",), False, {"router": 2}
    async with Stack(options) as stack:
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        routed = await js.pull_subscribe(subjects.QUERY_ROUTED, durable="probe", stream=subjects.QUERY_STREAM)
        for i in range(40):
            query = QueryRequested(query=Query(request_id=f"r{i}", gateway_id="gw", question=f"How do I export {i}?"))
            await js.publish(subjects.QUERY_REQUESTED, query.model_dump_json().encode())
        seen: list[str] = []
        while len(seen) < 40:
            for msg in await routed.fetch(40 - len(seen), timeout=10):
                seen.append(json.loads(msg.data)["query"]["request_id"])
                await msg.ack()
        assert sorted(seen) == sorted(f"r{i}" for i in range(40))
        handled = [t.messages.labels("router", "router", "ok")._value.get() for t in stack.telemetries]
        consumers = [c.name for c in await js.consumers_info(subjects.QUERY_STREAM)]
        await nc.close()
    # Both replicas pull from the one durable consumer of the stage, and between them each question
    # is handled once. How the 40 split between them depends on the machine's load, so it is not asserted.
    assert consumers.count(subjects.ROUTER_CONSUMER) == 1
    assert len(handled) == 2
    assert sum(handled) == 40


async def test_answer_subjects_do_not_multiply_metric_series(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ("router", "evaluator")
    async with Stack(options) as stack:
        import httpx

        async with httpx.AsyncClient(base_url=stack.base_url) as client:
            for word in ("hi", "hello", "thanks"):
                assert (await client.post("/v1/query", json={"question": word})).status_code == 200
        from prometheus_client import generate_latest

        exposed = b"".join(generate_latest(t.registry) for t in stack.telemetries).decode()
    assert "rag.answer.*.*.final" in exposed
    assert not [line for line in exposed.splitlines() if "rag.answer." in line and "rag.answer.*.*." not in line]


async def test_push_consumer_left_by_an_older_version_is_replaced(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    from nats.js.api import ConsumerConfig

    from rag_common.config.settings import ServiceSettings
    from rag_common.transport.streams import ensure_streams

    nc = await nats.connect(nats_server.url)
    js = nc.jetstream()
    await ensure_streams(js, ServiceSettings(nats_url=nats_server.url))
    await js.add_consumer(
        subjects.QUERY_STREAM,
        ConsumerConfig(
            durable_name=subjects.ROUTER_CONSUMER,
            deliver_subject="old.push.inbox",
            filter_subject=subjects.QUERY_REQUESTED,
        ),
    )
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services, options.gateway = ("router",), False
    async with Stack(options):
        routed = await js.pull_subscribe(subjects.QUERY_ROUTED, durable="probe", stream=subjects.QUERY_STREAM)
        query = QueryRequested(query=Query(request_id="r-old", gateway_id="gw", question="How do I export?"))
        await js.publish(subjects.QUERY_REQUESTED, query.model_dump_json().encode())
        message = (await routed.fetch(1, timeout=10))[0]
        assert json.loads(message.data)["query"]["request_id"] == "r-old"
        info = await js.consumer_info(subjects.QUERY_STREAM, subjects.ROUTER_CONSUMER)
        assert not info.config.deliver_subject
    await nc.close()
