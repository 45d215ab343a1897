"""A JetStream publish waits RAG_PUBLISH_TIMEOUT_S for its acknowledgement, not FastStream's 0.5 s.

Under load (two cores at load average 20) the gateway's publish of a question or an upload failed
with ``503 could not queue the question: nats: timeout`` after 0.5 s although the server stored
the message moments later.
"""

from __future__ import annotations

from typing import Any

import pytest
from faststream.nats import NatsBroker

from rag_common.config.settings import ServiceSettings
from rag_common.transport.broker import make_broker
from rag_common.transport.telemetry import setup_telemetry

pytestmark = pytest.mark.unit


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    async def publish(self: NatsBroker, message: Any, subject: str, **kwargs: Any) -> None:
        calls.append({"subject": subject, **kwargs})

    monkeypatch.setattr(NatsBroker, "publish", publish)
    return calls


async def test_a_jetstream_publish_waits_the_configured_time(
    sent: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_PUBLISH_TIMEOUT_S", "7.5")
    settings = ServiceSettings()
    broker = make_broker(settings, setup_telemetry("test-publish", settings=settings))

    await broker.publish(b"{}", "rag.query.requested", stream="RAG_QUERY")
    await broker.publish(b"{}", "rag.query.requested", stream="RAG_QUERY", timeout=1.0)
    await broker.publish(b"{}", "rag.answer.g.r.final")

    assert [c["timeout"] for c in sent] == [7.5, 1.0, None]  # core NATS has no acknowledgement to wait for


def test_the_default_outlasts_a_loaded_servers_acknowledgement() -> None:
    assert ServiceSettings().publish_timeout_s == 5.0
    with pytest.raises(ValueError, match="publish_timeout_s"):
        ServiceSettings(publish_timeout_s=0)
