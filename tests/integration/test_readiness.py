"""Readiness against a real nats-server: /readyz names exactly what is missing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from rag_common.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.conftest import stack_options

pytestmark = pytest.mark.integration


async def test_readyz_names_the_services_that_do_not_answer(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ("router", "evaluator")
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url) as client:
        response = await client.get("/readyz")
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "not_ready"
        assert body["missing"] == ["generator", "ingest", "retriever", "vector_store"]
        assert body["checks"]["nats"] == "ok" and body["checks"]["router"] == "ok"
        assert (await client.get("/healthz")).status_code == 200
