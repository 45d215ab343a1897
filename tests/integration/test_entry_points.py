"""Each service and the gateway start alone with ``python -m <package>``, configured by environment."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import nats
import pytest

from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.polling import eventually
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_every_service_runs_as_its_own_process(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    gateway_port, router_metrics = free_port(), free_port()
    base = {**os.environ, "NATS_URL": nats_server.url, "RAG_DATA_DIR": str(tmp_path), "RAG_MODEL_DIR": str(model_dir)}
    for key in [k for k in base if k.endswith("_METRICS_PORT")]:
        del base[key]
    extra = {
        "rag_ingest": {"QDRANT_PATH": str(tmp_path / "q-ingest"), "RAG_INGEST_METRICS_PORT": "0"},
        "rag_retriever": {"QDRANT_PATH": str(tmp_path / "q-retriever"), "RAG_RETRIEVER_METRICS_PORT": "0"},
        "rag_router": {"RAG_ROUTER_METRICS_PORT": str(router_metrics)},
        "rag_generator": {"RAG_GENERATOR_METRICS_PORT": "0"},
        "rag_evaluator": {"RAG_EVALUATOR_METRICS_PORT": "0"},
        "rag_gateway": {"RAG_GATEWAY_PORT": str(gateway_port)},
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    processes = [  # Popen returns at once; readiness is awaited below by pinging each service
        subprocess.Popen(  # noqa: ASYNC220
            [sys.executable, "-m", module],
            env={**base, **env},
            stdout=subprocess.DEVNULL,
            stderr=(logs / f"{module}.log").open("wb"),
        )
        for module, env in extra.items()
    ]
    try:
        nc = await nats.connect(nats_server.url)
        deadline = time.monotonic() + 90
        pending = set(subjects.SERVICES)
        while pending and time.monotonic() < deadline:
            for service in sorted(pending):
                try:
                    reply = await nc.request(subjects.ping_subject(service), b"", timeout=0.5)
                except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
                    continue
                assert json.loads(reply.data)["service"] == service
                pending.discard(service)
            if pending:
                await asyncio.sleep(0.2)
        assert not pending, f"no ping reply from {pending}"
        await nc.close()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{gateway_port}") as client:

            async def readiness() -> int:
                try:
                    return (await client.get("/readyz")).status_code
                except httpx.TransportError:
                    return 0

            await eventually(readiness, lambda status: status == 200, timeout_s=30, what="the gateway's /readyz")
            assert (await client.get("/readyz")).json()["status"] == "ready"
            assert (await client.post("/v1/query", json={"question": "hello"})).json()["route"]["tier"] == "greeting"
            metrics = (await client.get(f"http://127.0.0.1:{router_metrics}/metrics")).text
            assert 'rag_stage_duration_seconds_count{service="router",stage="router"} 1.0' in metrics
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


async def test_stack_starts_its_own_nats_when_none_answers(tmp_path: Path, model_dir: Path) -> None:
    unreachable = f"nats://127.0.0.1:{free_port()}"
    options = stack_options(tmp_path, unreachable, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url) as client:
        assert stack.nats_server is not None
        assert stack.nats_server.store_dir == (tmp_path / "nats").resolve()
        assert (stack.nats_server.store_dir / "run" / "nats.conf").read_text().count("sync_interval: always") == 1
        assert (await client.get("/readyz")).status_code == 200
    assert stack.nats_server.process is None
