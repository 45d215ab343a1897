"""The router service alone, on FastStream's in-memory broker."""

from __future__ import annotations

import pytest
from faststream.nats import TestNatsBroker

from rag_common import subjects
from rag_common.broker import QUERY_JSTREAM
from rag_common.messages import QueryRequested, QueryRouted
from rag_common.telemetry import setup_telemetry
from rag_router.app import build_broker
from rag_router.settings import RouterSettings

pytestmark = pytest.mark.component


def requested(question: str) -> QueryRequested:
    return QueryRequested(request_id="r1", gateway_id="gw", question=question)


async def test_scored_question_goes_to_retrieval_with_its_route() -> None:
    broker = build_broker(RouterSettings(metrics_port=0), setup_telemetry("router"))
    routed: list[QueryRouted] = []

    @broker.subscriber(subjects.QUERY_ROUTED, stream=QUERY_JSTREAM, durable="probe", pull_sub=True)
    async def capture(msg: QueryRouted) -> None:
        routed.append(msg)

    async with TestNatsBroker(broker) as br:
        await br.publish(
            requested("My timeline view isn't loading after upgrading"),
            subjects.QUERY_REQUESTED,
            stream=subjects.QUERY_STREAM,
        )
        await capture.wait_call(timeout=5)
    assert len(routed) == 1
    assert routed[0].route.tier == "fast"
    assert routed[0].route.score == 2
    assert routed[0].route.signals == {"error": 1, "negation": 1}
    assert "router" in routed[0].timings_ms
