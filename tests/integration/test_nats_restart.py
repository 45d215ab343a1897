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

from rag_common import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
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

        # The gateway itself can still serve (issue 11: services are reported, not required), but
        # the truth is in the body: the generator is degraded, and why.
        response = await client.get("/readyz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "degraded" and body["degraded"] == ["generator"]
        assert body["services"]["generator"] == "missing RAG_QUERY/generator"
