"""A query survives a worker that dies mid-message: another replica redoes the stage, once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import nats
import pytest

from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_retriever.app import create_app as create_retriever
from rag_retriever.settings import RetrieverSettings
from tests.support.http import upload_and_wait
from tests.support.system import stack_options

pytestmark = pytest.mark.integration

FAST_REDELIVERY = {"query_ack_wait_s": 1.0}


async def test_stage_taken_by_a_dying_worker_is_redone_by_another_replica(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(
        tmp_path,
        nats_server.url,
        model_dir,
        **{service: FAST_REDELIVERY for service in ("router", "retriever", "generator", "evaluator")},
    )
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
        retriever_index = [t.service for t in stack.telemetries].index("retriever")
        await stack.apps[retriever_index].stop()

        nc = await nats.connect(nats_server.url)
        doomed = await nc.jetstream().pull_subscribe_bind(
            durable=subjects.RETRIEVER_CONSUMER, stream=subjects.QUERY_STREAM
        )
        asking = asyncio.create_task(client.post("/v1/query", json={"question": "When is the otter pool cleaned?"}))
        taken = await doomed.fetch(1, timeout=10)  # the worker takes the question ...
        assert taken[0].metadata.num_delivered == 1
        await nc.close()  # ... and dies without acknowledging it

        settings = RetrieverSettings(**options.overrides["retriever"], nats_url=nats_server.url, metrics_port=0)
        replacement = create_retriever(settings, setup_telemetry("retriever"))
        await replacement.start()
        try:
            response = await asking
        finally:
            await replacement.stop()

    assert response.status_code == 200, response.text
    body = response.json()
    assert "Tuesday" in body["answer"]
    assert [c["source"] for c in body["citations"]] == ["otters.md"]
