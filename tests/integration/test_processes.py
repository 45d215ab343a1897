"""``python -m rag_devrun --processes``: one process per service answers, and SIGTERM stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.processes import PROCESSES, free_port
from tests.support.http import ask, upload_and_wait, wait_until_ready

pytestmark = pytest.mark.integration


def workers(parent: int) -> dict[str, int]:
    """The runner's worker processes by name (``python -m rag_devrun.worker NAME``), from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().decode().split("\0")
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        if ppid == parent and "rag_devrun.worker" in command:
            found[command[command.index("rag_devrun.worker") + 1]] = int(entry.name)
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_one_process_per_service_answers_and_stops_on_sigterm(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    port = free_port()
    env = {**os.environ, "NATS_URL": nats_server.url, "RAG_MODEL_DIR": str(model_dir)}
    for key in [k for k in env if k.endswith("_METRICS_PORT")]:
        del env[key]
    log = (tmp_path / "devrun.log").open("wb")
    for name in ("ingest", "retriever", "router", "generator", "evaluator"):
        env[f"RAG_{name.upper()}_METRICS_PORT"] = "0"
    command = ["-m", "rag_devrun", "--processes", "--port", str(port), "--corpus", "", "--data-dir", str(tmp_path)]
    runner = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is polled below
        [sys.executable, *command],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            await wait_until_ready(client, timeout_s=180, what="every process ready")
            assert sorted(workers(runner.pid)) == sorted(PROCESSES)
            assert runner.poll() is None

            await upload_and_wait(client, "otters.md", b"# Otters\n\nThe otter pool is cleaned every Tuesday.\n")
            body = await ask(client, "When is the otter pool cleaned?")
            assert "Tuesday" in body["answer"]
            assert [c["source"] for c in body["citations"]] == ["otters.md"]

        children = workers(runner.pid)
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=60) == 0  # the runner waits for its workers (SIGKILL after 15 s)
        assert not [name for name, pid in children.items() if running(pid)]
        lines = (tmp_path / "devrun.log").read_text()
        assert "process ended" not in lines and "Traceback" not in lines, lines[-2000:]
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        log.close()
