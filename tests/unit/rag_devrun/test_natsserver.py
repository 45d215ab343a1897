"""The local nats-server counts as listening only once its ports file is whole."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from rag_devrun.natsserver import LocalNatsServer, _listening_url

pytestmark = pytest.mark.unit


def test_a_missing_empty_or_half_written_ports_file_is_not_ready(tmp_path: Path) -> None:
    ports = tmp_path / "nats-server_1.ports"
    assert _listening_url(ports) is None
    ports.write_text("")
    assert _listening_url(ports) is None
    ports.write_text('{"nats": ["nats://127.0.0.1:4')
    assert _listening_url(ports) is None
    ports.write_text('{"nats": []}')
    assert _listening_url(ports) is None


def test_a_whole_ports_file_gives_the_client_url(tmp_path: Path) -> None:
    ports = tmp_path / "nats-server_1.ports"
    ports.write_text('{"nats": ["nats://127.0.0.1:4321"], "monitoring": []}')
    assert _listening_url(ports) == "nats://127.0.0.1:4321"


def test_chaos_kills_nats_server_with_sigkill(tmp_path: Path) -> None:
    """``make chaos`` crashes nats-server (SIGKILL), not a graceful SIGTERM shutdown."""
    from benchmarks.chaos import crash

    server = LocalNatsServer(tmp_path / "nats")
    server.start()
    try:
        assert crash(server) == -signal.SIGKILL
        assert server.process is None
    finally:
        server.stop()
