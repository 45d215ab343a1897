"""``python -m rag_devrun --processes``: one process per service answers, and SIGTERM stops them all."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer, reachable
from rag_devrun.processes import PROCESSES, free_port
from tests.support.http import ask, upload_and_wait, wait_until_ready
from tests.support.polling import eventually

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


def workers_of(nats_url: str) -> list[int]:
    """Running worker processes (whoever their parent now is) started with this ``NATS_URL``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"rag_devrun.worker" in command and f"NATS_URL={nats_url}".encode() in environment:
            found.append(int(entry.name))
    return [pid for pid in found if running(pid)]


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
        assert "process ended" not in lines, lines[-2000:]
        assert "Traceback" not in lines, lines[-2000:]
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        log.close()


async def said_ready(runner_log: Path) -> None:
    """The runner's log says "ready:" (every process up, the gateway answering)."""
    await eventually(
        lambda: asyncio.to_thread(runner_log.read_text),
        lambda text: "ready:" in text,
        timeout_s=180,
        what="the runner ready",
    )


def run_processes(nats_url: str, model_dir: Path, port: int, data_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The arguments and environment of ``make run-processes`` for a test: no sample corpus and no
    metrics ports (several systems may run at once)."""
    env = {**os.environ, "NATS_URL": nats_url, "RAG_MODEL_DIR": str(model_dir)}
    for name in ("ingest", "retriever", "router", "generator", "evaluator"):
        env[f"RAG_{name.upper()}_METRICS_PORT"] = "0"
    command = ["-m", "rag_devrun", "--processes", "--port", str(port), "--corpus", "", "--data-dir", str(data_dir)]
    return command, env


@pytest.mark.parametrize("when", ["while-starting", "when-ready"])
async def test_ctrl_c_stops_every_process_cleanly_and_the_nats_server_the_runner_started_last(
    tmp_path: Path, model_dir: Path, when: str
) -> None:
    """``make run-processes`` with no NATS running, then Ctrl-C: the terminal sends SIGINT to the
    whole foreground process group, the workers and the nats-server the runner started included.
    Pressed while the processes start, the runner does not take their stopping for a crash; pressed
    once ready, the server outlives the services' drain. Either way: exit 0, no traceback in any
    log, nothing the runner started left running."""
    port = free_port()
    nats_url = f"nats://127.0.0.1:{free_port()}"  # nothing there: the runner starts its own
    command, env = run_processes(nats_url, model_dir, port, tmp_path)
    runner_log = tmp_path / "devrun.log"
    with runner_log.open("wb") as log:
        runner = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is polled below
            # its own process group, as a shell gives a foreground job; Ctrl-C signals that group
            [sys.executable, *command],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            if when == "while-starting":
                await eventually(
                    lambda: asyncio.to_thread(workers, runner.pid),
                    lambda found: len(found) == len(PROCESSES),
                    timeout_s=60,
                    what="every worker process started",
                )
            else:
                await said_ready(runner_log)
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                    assert (await ask(client, "Hello!"))["answer"]
            children = workers(runner.pid)
            os.killpg(runner.pid, signal.SIGINT)
            assert runner.wait(timeout=60) == 0, runner_log.read_text()[-3000:]
            assert not [name for name, pid in children.items() if running(pid)]
            assert not await reachable(nats_url), "the nats-server the runner started is still running"
        finally:
            if runner.poll() is None:
                os.killpg(runner.pid, signal.SIGKILL)
                runner.wait()
    logs = {path.name: path.read_text() for path in [runner_log, *(tmp_path / "logs").glob("*.log")]}
    assert sorted(logs) == sorted(["devrun.log", *(f"{name}.log" for name in PROCESSES)])
    broken = {name: text[-2000:] for name, text in logs.items() if "Traceback" in text or "Connection broken" in text}
    assert not broken, broken
    assert logs["devrun.log"].splitlines()[-1].endswith("stopped"), logs["devrun.log"][-1000:]


async def test_a_process_that_cannot_start_is_named_with_its_reason_and_nothing_is_left_running(
    tmp_path: Path, model_dir: Path
) -> None:
    """``make run-processes`` on a taken gateway port: the runner says which process could not
    start and why (the gateway's own message: the port and the setting that moves it), exits 1
    without a traceback, and stops the other processes and the nats-server it started."""
    nats_url = f"nats://127.0.0.1:{free_port()}"  # nothing there: the runner starts its own
    env = {**os.environ, "NATS_URL": nats_url, "RAG_MODEL_DIR": str(model_dir)}
    for name in ("ingest", "retriever", "router", "generator", "evaluator"):
        env[f"RAG_{name.upper()}_METRICS_PORT"] = "0"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = ["-m", "rag_devrun", "--processes", "--port", str(port), "--corpus", "", "--data-dir", str(tmp_path)]
        result = await asyncio.to_thread(
            subprocess.run, [sys.executable, *command], env=env, capture_output=True, text=True, timeout=240
        )
    said = result.stdout + result.stderr
    assert result.returncode == 1, said
    assert "Traceback" not in said, said
    assert f"gateway: the gateway could not listen on 127.0.0.1:{port}" in said, said
    assert "RAG_GATEWAY_PORT or --port" in said
    assert not await reachable(nats_url), "the nats-server the runner started is still running"
    assert not workers_of(nats_url), "worker processes are still running"


async def test_a_process_that_dies_stops_the_others_and_the_runner_exits_1(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    """A worker killed while the system serves (an out-of-memory kill): the runner names it, stops
    the other processes and exits 1, so whatever supervises ``make run-processes`` sees a failure."""
    port = free_port()
    command, env = run_processes(nats_server.url, model_dir, port, tmp_path)
    runner_log = tmp_path / "devrun.log"
    with runner_log.open("wb") as log:
        runner = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is polled below
            [sys.executable, *command], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            await said_ready(runner_log)
            children = workers(runner.pid)
            os.kill(children["router"], signal.SIGKILL)
            assert runner.wait(timeout=60) == 1, runner_log.read_text()[-3000:]
            assert not [name for name, pid in children.items() if running(pid)]
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    said = runner_log.read_text()
    assert "process ended: {'router': -9}" in said, said[-2000:]
    assert "Traceback" not in said, said[-2000:]
