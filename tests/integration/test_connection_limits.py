"""An unauthenticated client cannot hold the gateway's connections or memory with unfinished requests.

Both ways of serving the gateway are checked: the ``Stack`` (``make run``, the e2e tests) and
``python -m rag_gateway`` (one process, as deployed), with a 1 s head timeout to keep the test short.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack, StackOptions

pytestmark = pytest.mark.integration

HEAD_TIMEOUT_S = 1.0
HEAD_MAX = 32 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, port: int, pid: int) -> None:
        self.port, self.pid = port, pid

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")


async def _wait_healthy(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        while time.monotonic() < deadline:
            assert process.poll() is None, "the gateway process exited"
            try:
                if (await client.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("the gateway did not answer /healthz within 60 s")


@pytest.fixture(params=["stack", "process"])
async def served(request: pytest.FixtureRequest, tmp_path: Path, nats_server: LocalNatsServer) -> AsyncIterator[Served]:
    if request.param == "stack":
        options = StackOptions(
            data_dir=tmp_path,
            nats_url=nats_server.url,
            port=0,
            metrics=False,
            services=(),
            overrides={"gateway": {"header_timeout_s": HEAD_TIMEOUT_S, "header_max_bytes": HEAD_MAX}},
        )
        async with Stack(options) as stack:
            yield Served(int(stack.base_url.rsplit(":", 1)[1]), os.getpid())
        return
    port = free_port()
    env = {
        **os.environ,
        "NATS_URL": nats_server.url,
        "RAG_DATA_DIR": str(tmp_path),
        "RAG_GATEWAY_PORT": str(port),
        "RAG_GATEWAY_METRICS_PORT": "0",
        "RAG_GATEWAY_HEADER_TIMEOUT_S": str(HEAD_TIMEOUT_S),
        "RAG_GATEWAY_HEADER_MAX_BYTES": str(HEAD_MAX),
    }
    process = subprocess.Popen(  # noqa: ASYNC220 - readiness is awaited below
        [sys.executable, "-m", "rag_gateway"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        await _wait_healthy(port, process)
        yield Served(port, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes | None:
    """Everything the server sent before closing, or None if it still holds the connection open."""
    received = b""
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            chunk = await asyncio.wait_for(reader.read(65536), left)
            if not chunk:
                return received
            received += chunk
    except TimeoutError:
        return None
    except ConnectionError:
        return received
    return None


async def test_a_head_that_never_ends_is_closed_within_the_timeout(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    started = time.monotonic()

    async def trickle() -> None:  # one byte every 0.2 s, never the blank line that ends the head
        # the sleep is the slow client under test, not a wait for a condition
        for _ in range(50):
            writer.write(b"a")
            await writer.drain()
            await asyncio.sleep(0.2)

    dripping = asyncio.create_task(trickle())
    try:
        answer = await _closed_within(reader, HEAD_TIMEOUT_S + 4)
    finally:
        dripping.cancel()
        writer.close()
    assert answer is not None, "the gateway still holds a connection whose head never ends"
    assert time.monotonic() - started < HEAD_TIMEOUT_S + 3
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b'"request_id"' in answer


async def test_an_8_mb_header_is_refused_with_431(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (8 * 1024 * 1024) + b"\r\n\r\n"
    writer.write(head)
    with contextlib.suppress(ConnectionError):  # the gateway closed the connection while we sent: refused early
        await writer.drain()
    answer = await _closed_within(reader, 10)
    writer.close()
    assert answer is not None, "the gateway kept the connection open"
    assert not answer.startswith(b"HTTP/1.1 200"), "an 8 MB header was served"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431 "), answer[:200]


async def test_huge_unfinished_headers_do_not_grow_the_gateways_memory(served: Served) -> None:
    before = served.rss_mb()

    async def flood() -> None:  # 100 MB of one header value, never ended
        _, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nX-Big: ")
        block = b"a" * (1024 * 1024)
        try:
            for _ in range(100):
                writer.write(block)
                await asyncio.wait_for(writer.drain(), 10)
        except (ConnectionError, TimeoutError):
            pass
        finally:
            writer.close()

    await asyncio.wait_for(asyncio.gather(*(flood() for _ in range(4))), 60)
    grown = served.rss_mb() - before
    assert grown < 30, f"the gateway grew by {grown:.0f} MB"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}") as client:
        assert (await client.get("/healthz")).status_code == 200


async def test_200_slow_connections_are_all_closed(served: Served) -> None:
    connections = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(200)]
    for _, writer in connections:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    answers = await asyncio.gather(*(_closed_within(reader, HEAD_TIMEOUT_S + 5) for reader, _ in connections))
    for _, writer in connections:
        writer.close()
    still_open = sum(answer is None for answer in answers)
    assert still_open == 0, f"{still_open} of 200 slow connections still open"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}") as client:
        assert (await client.get("/healthz")).status_code == 200
