"""The system as one operating-system process per service (``python -m rag_devrun --processes``).

What a container platform runs, on one machine: ``store`` (ingest and retriever, which share the
embedded Qdrant folder: the embedded store has one writer and one process may open it), ``router``,
``generator``, ``evaluator`` and ``gateway``, each its own Python process, interpreter lock and
event loop, all on one NATS. ``make chaos`` kills and restarts them one by one; ``make bench``
compares their throughput with the one-process stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

PROCESSES: dict[str, tuple[str, ...]] = {
    "store": ("ingest", "retriever"),
    "router": ("router",),
    "generator": ("generator",),
    "evaluator": ("evaluator",),
    "gateway": (),
}
# the log line of a worker that could not start (a port in use, no model folder): what follows
# it is the reason, which the runner repeats instead of a bare exit code
START_FAILED = "could not start: "


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now (for a gateway started right after)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class Cluster:
    """Start, kill and stop the processes of the system; each writes its log to ``logs/<name>.log``."""

    def __init__(
        self,
        data_dir: Path,
        nats_url: str,
        port: int,
        *,
        host: str = "127.0.0.1",
        metrics: bool = False,
        env: Mapping[str, str] | None = None,
        own_sessions: bool = False,
    ) -> None:
        """``own_sessions``: each process in a session of its own, so a terminal's Ctrl-C reaches
        only the caller, which stops them with SIGTERM (each drains); the dev runner's choice."""
        self.data_dir, self.nats_url, self.port, self.host, self.metrics = data_dir, nats_url, port, host, metrics
        self.own_sessions = own_sessions
        self.extra_env = dict(env or {})
        self.logs = data_dir / "logs"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "NATS_URL": self.nats_url, "RAG_DATA_DIR": str(self.data_dir), **self.extra_env}

    def start(self, name: str) -> None:
        if name not in PROCESSES:
            raise ValueError(f"unknown process {name!r}; one of {', '.join(PROCESSES)}")
        self.logs.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "rag_devrun.worker", name, "--host", self.host, "--port", str(self.port)]
        if not self.metrics:
            command.append("--no-metrics")
        with (self.logs / f"{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                command, env=self.env(), stdout=log, stderr=log, start_new_session=self.own_sessions
            )

    def start_all(self) -> None:
        for name in PROCESSES:
            self.start(name)

    def kill(self, name: str) -> None:
        """SIGKILL, as a crash or an out-of-memory kill would end it."""
        proc = self.procs.pop(name, None)
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)

    def exited(self) -> dict[str, int]:
        """Processes that ended on their own, with their exit codes."""
        return {name: code for name, proc in self.procs.items() if (code := proc.poll()) is not None}

    def stop_all(self, timeout_s: float = 15.0) -> None:
        """SIGTERM to every process (each drains and stops), SIGKILL to any still running after the timeout."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + timeout_s
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    def why_ended(self, name: str) -> str:
        """What a process that could not start said about it (its ``START_FAILED`` log line)."""
        try:
            lines = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return next((line.split(START_FAILED, 1)[1] for line in reversed(lines) if START_FAILED in line), "")

    async def wait_ready(self, timeout_s: float) -> float:
        """Seconds until the gateway says every service is ready; raises if a process died or time ran out."""
        started = time.monotonic()
        async with httpx.AsyncClient(base_url=self.base_url) as client:
            while time.monotonic() - started < timeout_s:
                if died := self.exited():
                    reasons = [f"{name}: {why}" for name in died if (why := self.why_ended(name))]
                    if reasons:
                        raise RuntimeError("; ".join(reasons))
                    raise RuntimeError(f"process ended during start-up: {died} (logs in {self.logs})")
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    response = await client.get("/readyz", timeout=5)
                    # 200 also means "degraded" (a service missing): ready is every service there
                    if response.status_code == 200 and response.json().get("status") == "ready":
                        return time.monotonic() - started
                await asyncio.sleep(0.2)
        raise RuntimeError(f"system not ready within {timeout_s:.0f}s (logs in {self.logs})")
