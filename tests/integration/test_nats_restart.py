"""A NATS restart loses the memory-stored RAG_QUERY stream and its consumers; the system puts
them back by itself, and /readyz says "not ready" for exactly as long as they are missing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_router.app import create_app as create_router
from rag_router.settings import RouterSettings
from tests.support.http import ask, upload_and_wait
from tests.support.system import stack_options

pytestmark = pytest.mark.integration

SERVICES = ("ingest", "router", "retriever", "generator", "evaluator", "gateway")


async def wait_ready(client: httpx.AsyncClient, timeout_s: float) -> dict[str, Any]:
    """Poll /readyz until it says ready (bounded in time); the last body on failure."""
    deadline = time.monotonic() + timeout_s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        response = await client.get("/readyz")
        body = response.json()
        if response.status_code == 200:
            return body
        await asyncio.sleep(0.1)
    raise AssertionError(f"not ready after {timeout_s}s: {body}")


async def test_queries_are_answered_after_nats_restarts_without_restarting_any_service(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
        before = await ask(client, "When is the otter pool cleaned?")
        assert "Tuesday" in before["answer"]

        port = int(nats_server.url.rsplit(":", 1)[1])
        nats_server.stop()
        down = await client.get("/readyz")
        assert down.status_code == 503
        nats_server.port = port
        nats_server.start()  # same port and store: file streams survive, RAG_QUERY does not

        await wait_ready(client, timeout_s=30)
        after = await ask(client, "When is the otter pool cleaned?")
        assert "Tuesday" in after["answer"]
        assert [c["source"] for c in after["citations"]] == ["otters.md"]
        # the document indexed before the restart is still listed as indexed
        listed = (await client.get("/v1/documents")).json()["documents"]
        assert [(d["source"], d["status"]) for d in listed] == [("otters.md", "indexed")]


async def test_readyz_reports_a_missing_consumer_while_nats_itself_is_up(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    slow_checks = {service: {"js_check_interval_s": 60.0} for service in SERVICES}
    options = stack_options(tmp_path, nats_server.url, model_dir, **slow_checks)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await wait_ready(client, timeout_s=30)
        nc = await nats.connect(nats_server.url)
        try:
            await nc.jetstream().delete_consumer(subjects.QUERY_STREAM, subjects.GENERATOR_CONSUMER)
        finally:
            await nc.close()

        # The gateway itself can still serve (/readyz reports the services, it does not require them), but
        # the truth is in the body: the generator is degraded, and why.
        response = await client.get("/readyz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "degraded"
        assert body["degraded"] == ["generator"]
        assert body["services"]["generator"] == "missing RAG_QUERY/generator"


async def test_a_question_inside_nats_when_it_restarts_is_answered_within_its_deadline(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    """RAG_QUERY is memory-stored: a restart drops the questions it held. The gateway knows
    which it still waits for and queues them again, once, so the caller gets its answer
    instead of a 504 at its deadline. The router is started only after the restart, so the
    question is certainly inside the stream (not in a worker) when nats-server dies."""
    timeout = {"query_timeout_s": 40.0}
    options = stack_options(tmp_path, nats_server.url, model_dir, gateway=timeout)
    options.services = ("ingest", "retriever", "generator", "evaluator")  # no router yet
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
        await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
        asking = asyncio.create_task(client.post("/v1/query", json={"question": "When is the otter pool cleaned?"}))
        nc = await nats.connect(nats_server.url)
        try:
            deadline = time.monotonic() + 20
            while (await nc.jetstream().stream_info(subjects.QUERY_STREAM)).state.messages < 1:
                assert time.monotonic() < deadline, "the question never reached RAG_QUERY"
                assert not asking.done(), "the question never reached RAG_QUERY"
                await asyncio.sleep(0.02)
        finally:
            await nc.close()

        port = int(nats_server.url.rsplit(":", 1)[1])
        nats_server.stop()
        nats_server.port = port
        nats_server.start()
        router = create_router(RouterSettings(nats_url=stack.nats_url, data_dir=tmp_path, metrics_port=0))
        await router.start()
        try:
            started = time.monotonic()
            response = await asking
            waited = time.monotonic() - started
        finally:
            await router.stop()
        assert response.status_code == 200, response.text
        body = response.json()
        assert "Tuesday" in body["answer"]
        assert [c["source"] for c in body["citations"]] == ["otters.md"]
        assert waited < 30, f"answered {waited:.1f}s after the restart: not re-submitted, redelivered by chance"
        nc = await nats.connect(nats_server.url)
        try:
            router_info = await nc.jetstream().consumer_info(subjects.QUERY_STREAM, subjects.ROUTER_CONSUMER)
        finally:
            await nc.close()
        assert router_info.delivered.consumer_seq == 1  # queued again once: no second copy, no second answer
