"""Every component test runs twice: on the in-memory broker, and against a fresh real nats-server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rag_devrun.natsserver import LocalNatsServer
from tests.support.components import BrokerMode


@pytest.fixture(params=["memory", pytest.param("real", marks=pytest.mark.integration)])
async def mode(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BrokerMode]:
    if request.param == "memory":
        yield BrokerMode(None)
        return
    server = LocalNatsServer(tmp_path / "nats")
    server.start()
    try:
        real = BrokerMode(server.url)
        await real.declare_streams()
        yield real
    finally:
        server.stop()
