"""``python -m rag_devrun`` (``make run``): Ctrl-C or SIGTERM stops every service cleanly, no traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer, reachable
from rag_devrun.processes import free_port
from rag_devrun.stack import Stack, StackOptions, StartError
from tests.support.http import ask, upload_and_wait, wait_until_ready

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
async def test_the_one_process_runner_answers_and_stops_cleanly(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path, stop: signal.Signals
) -> None:
    port = free_port()
    env = {**os.environ, "NATS_URL": nats_server.url, "RAG_MODEL_DIR": str(model_dir)}
    for name in ("ingest", "retriever", "router", "generator", "evaluator"):
        env[f"RAG_{name.upper()}_METRICS_PORT"] = "0"
    log_path = tmp_path / "devrun.log"
    command = ["-m", "rag_devrun", "--port", str(port), "--corpus", "", "--data-dir", str(tmp_path / "data")]
    with log_path.open("wb") as log:
        runner = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is polled below
            [sys.executable, *command], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                await wait_until_ready(client, timeout_s=180, what="the runner ready")
                await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
                body = await ask(client, "When is the otter pool cleaned?")
                assert "Tuesday" in body["answer"]

            runner.send_signal(stop)
            assert runner.wait(timeout=60) == 0
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    lines = log_path.read_text()
    assert "Traceback" not in lines, lines[-3000:]
    assert "stopped" in lines.splitlines()[-1], lines[-1000:]


async def test_a_gateway_port_in_use_is_named_and_the_nats_server_it_started_is_stopped(tmp_path: Path) -> None:
    """A second ``make run`` on a taken port: an error that says which port and how to pick another,
    and nothing of what the runner started (its nats-server) left running."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        nats_url = f"nats://127.0.0.1:{free_port()}"  # nothing there: the runner starts its own
        options = StackOptions(data_dir=tmp_path, nats_url=nats_url, port=port, metrics=False, services=())
        with pytest.raises(StartError, match=f"127.0.0.1:{port}.*RAG_GATEWAY_PORT"):
            async with Stack(options):
                pass
    assert not await reachable(nats_url), "the nats-server the runner started is still running"


async def test_a_service_metrics_port_in_use_is_named_with_its_setting(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    """A second ``make run`` meets the services' metrics ports (9101-9105) before the gateway's: the
    error names the service, the port and the setting that moves it, not a bare "Address already in use"."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = StackOptions(
            data_dir=tmp_path,
            nats_url=nats_server.url,
            services=("router",),
            gateway=False,
            overrides={"router": {"metrics_port": port}},
        )
        with pytest.raises(StartError, match=f"router.*127.0.0.1:{port}.*RAG_ROUTER_METRICS_PORT"):
            async with Stack(options):
                pass


async def test_a_missing_model_folder_is_named_with_its_setting_and_how_to_make_it(
    tmp_path: Path, nats_server: LocalNatsServer
) -> None:
    """``make run`` with ``RAG_MODEL_DIR`` pointing nowhere: one error saying what is missing and
    the command that assembles the folder, not a traceback through the service's start-up."""
    options = StackOptions(
        data_dir=tmp_path,
        nats_url=nats_server.url,
        services=("ingest",),
        gateway=False,
        metrics=False,
        overrides={"ingest": {"model_dir": tmp_path / "no-model"}},
    )
    with pytest.raises(StartError, match=r"RAG_MODEL_DIR=.*no-model lacks model\.onnx.*make model"):
        async with Stack(options):
            pass
