"""Readiness against a real nats-server: /readyz is about the gateway, the rest is reported."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.polling import eventually
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


async def test_missing_services_make_the_gateway_degraded_not_unready(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ("router", "evaluator")
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url) as client:
        response = await client.get("/readyz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "degraded"
        assert body["missing"] == []
        assert body["degraded"] == ["generator", "ingest", "retriever", "vector_store"]
        assert body["checks"] == {"nats": "ok", "buckets": "ok", "streams": "ok"}
        assert body["services"]["router"] == "ok"
        assert body["services"]["evaluator"] == "ok"
        assert (await client.get("/healthz")).status_code == 200
        metrics = (await client.get("/metrics")).text
        assert 'rag_service_up{service="router"} 1.0' in metrics
        assert 'rag_service_up{service="generator"} 0.0' in metrics


async def test_gateway_is_unready_without_its_streams_or_nats(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ()
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url) as client:
        assert (await client.get("/readyz")).json()["status"] == "degraded"
        import nats

        nc = await nats.connect(nats_server.url)
        try:
            await nc.jetstream().delete_stream(subjects.DLQ_STREAM)
        finally:
            await nc.close()
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["checks"]["streams"] == f"missing {subjects.DLQ_STREAM}"
        assert response.json()["missing"] == ["streams"]

        nats_server.stop()

        async def readiness() -> httpx.Response:
            return await client.get("/readyz")

        await eventually(
            readiness,
            lambda r: r.status_code == 503 and r.json()["checks"]["nats"] == "disconnected",
            timeout_s=20,
            what="readiness reports NATS disconnected",
            interval_s=0.1,
        )
        assert (await client.get("/healthz")).status_code == 200
