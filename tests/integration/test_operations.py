"""Operations against a real nats-server: consumer limits, health ports, counters that start at 0."""

from __future__ import annotations

import asyncio
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path

import nats
import pytest
from prometheus_client.parser import text_string_to_metric_families

from rag_common.transport.streams import consumer_config
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_retriever.settings import RetrieverSettings
from tests.support.polling import eventually
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one series in a Prometheus text exposition (None when absent)."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return None


def test_max_ack_pending_is_sized_for_the_most_replicas() -> None:
    settings = RetrieverSettings(max_replicas=20, concurrency=8)
    assert consumer_config(settings, ack_wait=30).max_ack_pending == 160


async def test_consumer_on_the_server_allows_every_replica_its_concurrency(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir, router={"max_replicas": 20, "concurrency": 8})
    options.services, options.gateway = ("router",), False
    async with Stack(options):
        nc = await nats.connect(nats_server.url)
        try:
            info = await nc.jetstream().consumer_info(subjects.QUERY_STREAM, subjects.ROUTER_CONSUMER)
        finally:
            await nc.close()
    assert info.config.max_ack_pending == 160


async def test_livez_fails_when_the_event_loop_hangs() -> None:
    telemetry = setup_telemetry("router")
    port = telemetry.serve_metrics("127.0.0.1", free_port(), liveness_timeout_s=0.5)
    try:
        url = f"http://127.0.0.1:{port}"
        assert await asyncio.to_thread(get, url + "/livez") == (200, '{"status": "ok", "checks": {"event_loop": "ok"}}')
        answered = threading.Event()
        result: list[tuple[int, str]] = []

        def probe() -> None:
            result.append(get(url + "/livez"))
            answered.set()

        threading.Thread(target=probe, daemon=True).start()
        # Block the event loop, as a hung handler would, until the probe has its answer.
        assert answered.wait(timeout=10)
        status, body = result[0]
        assert status == 503
        assert "no answer within 0.5s" in body
        # /metrics is served by its own thread and still answers: it cannot be the liveness probe
        status, _ = await asyncio.to_thread(get, url + "/metrics")
        assert status == 200
    finally:
        telemetry.stop_serving()


async def test_service_counters_start_at_zero_and_count_the_first_dead_letter(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    port = free_port()
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services, options.gateway = ("router",), False
    options.metrics = True
    options.overrides["router"] = {"metrics_port": port}
    async with Stack(options):
        url = f"http://127.0.0.1:{port}"
        status, text = await asyncio.to_thread(get, url + "/metrics")
        assert status == 200
        router = {"service": "router", "stage": "router"}
        assert sample(text, "rag_messages_handled_total", outcome="dead_letter", **router) == 0
        for kind in ("invalid_message", "permanent", "transient"):
            assert sample(text, "rag_errors_total", kind=kind, **router) == 0
        for reason in ("invalid_message", "permanent", "exhausted"):
            assert sample(text, "rag_dead_letters_total", reason=reason, **router) == 0
        assert (await asyncio.to_thread(get, url + "/readyz"))[0] == 200

        nc = await nats.connect(nats_server.url)
        try:
            await nc.jetstream().publish(subjects.QUERY_REQUESTED, b'{"not": "a query"}')
        finally:
            await nc.close()

        async def metrics() -> str:
            return (await asyncio.to_thread(get, url + "/metrics"))[1]

        await eventually(
            metrics,
            lambda text: sample(text, "rag_dead_letters_total", reason="invalid_message", **router) == 1,
            timeout_s=10,
            what="the invalid message dead-lettered",
        )
