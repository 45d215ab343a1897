"""One component-test body, two brokers: FastStream's in-memory ``TestNatsBroker`` and a real nats-server.

``with_real=True`` keeps FastStream's test hooks (``wait_call``, the handler mocks) but sends every
message through the real server, so a test that passes in memory also proves the subjects,
streams and consumers exist as the service declares them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nats
from faststream.nats import NatsBroker, TestNatsBroker

from rag_common.config.settings import ServiceSettings
from rag_common.transport.streams import ensure_streams


@dataclass(frozen=True, slots=True)
class BrokerMode:
    """Where a component test's messages go: ``nats_url`` None is the in-memory broker."""

    nats_url: str | None

    @property
    def real(self) -> bool:
        return self.nats_url is not None

    @property
    def settings(self) -> dict[str, Any]:
        """Settings fields that point a service at this mode's server (none in memory)."""
        return {"nats_url": self.nats_url} if self.nats_url else {}

    def broker(self, broker: NatsBroker) -> TestNatsBroker:
        return TestNatsBroker(broker, with_real=self.real)

    async def declare_streams(self) -> None:
        """The services' streams, as ``prepare_jetstream`` declares them at start-up (real server only)."""
        if self.nats_url is None:
            return
        connection = await nats.connect(self.nats_url)
        try:
            await ensure_streams(connection.jetstream(), ServiceSettings(nats_url=self.nats_url))
        finally:
            await connection.close()
