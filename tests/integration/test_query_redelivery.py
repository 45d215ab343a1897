"""Every query stage redelivers well within the client's deadline, from settings alone.

A question held by a generator that dies is answered by another generator before the gateway
gives up; a stage that is merely slow is not handed to a second worker (in-progress beats).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import nats
import pytest

from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_generator.app import create_app as create_generator
from rag_generator.settings import GeneratorSettings
from tests.support.http import upload_and_wait
from tests.support.system import stack_options

pytestmark = pytest.mark.integration

TIMEOUT_S = 15.0
ALL = ("ingest", "router", "retriever", "generator", "evaluator", "gateway")
QUERY_CONSUMERS = (
    subjects.ROUTER_CONSUMER,
    subjects.RETRIEVER_CONSUMER,
    subjects.GENERATOR_CONSUMER,
    subjects.EVALUATOR_CONSUMER,
)


async def test_question_held_by_a_killed_generator_is_answered_before_the_gateway_timeout(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(
        tmp_path, nats_server.url, model_dir, **{service: {"query_timeout_s": TIMEOUT_S} for service in ALL}
    )
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        for consumer in QUERY_CONSUMERS:
            info = await js.consumer_info(subjects.QUERY_STREAM, consumer)
            assert info.config.ack_wait is not None, consumer
            assert info.config.ack_wait <= TIMEOUT_S / 3, consumer
            assert info.config.max_deliver is not None, consumer
            assert 1 < info.config.max_deliver <= 5, consumer

        generator_index = [t.service for t in stack.telemetries].index("generator")
        await stack.apps[generator_index].stop()
        doomed = await js.pull_subscribe_bind(durable=subjects.GENERATOR_CONSUMER, stream=subjects.QUERY_STREAM)
        started = time.monotonic()
        asking = asyncio.create_task(client.post("/v1/query", json={"question": "When is the otter pool cleaned?"}))
        taken = await doomed.fetch(1, timeout=10)  # the generator takes the question ...
        assert taken[0].metadata.num_delivered == 1
        await nc.close()  # ... and dies without acknowledging it

        settings = GeneratorSettings(
            **options.overrides["generator"], nats_url=nats_server.url, data_dir=tmp_path, metrics_port=0
        )
        replacement = create_generator(settings, setup_telemetry("generator"))
        await replacement.start()
        try:
            response = await asking
        finally:
            await replacement.stop()
        elapsed = time.monotonic() - started

    assert response.status_code == 200, response.text
    assert "Tuesday" in response.json()["answer"]
    assert elapsed < TIMEOUT_S


def test_an_ack_wait_longer_than_a_third_of_the_deadline_is_refused_at_start_up() -> None:
    with pytest.raises(ValueError, match="RAG_QUERY_ACK_WAIT_S=30 must be at most RAG_QUERY_TIMEOUT_S / 3"):
        GeneratorSettings(query_timeout_s=60, query_ack_wait_s=30)
    assert GeneratorSettings(query_timeout_s=60).stage_ack_wait_s == 20
