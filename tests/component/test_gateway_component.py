"""The gateway's side of NATS alone: answers addressed to this replica reach the request waiting for them.

In memory and, with the same body, on a real nats-server.
"""

from __future__ import annotations

import asyncio

import pytest

from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import AnswerDelta, QueryAnswered
from rag_gateway.answers import AnswerHub
from rag_gateway.app import build_broker
from rag_gateway.settings import GatewaySettings
from tests.support.components import BrokerMode
from tests.support.messages import answered

pytestmark = pytest.mark.component


async def test_deltas_and_the_final_answer_reach_the_waiting_request_in_order(mode: BrokerMode) -> None:
    settings = GatewaySettings(gateway_id="gw1", metrics_port=0, **mode.settings)
    hub = AnswerHub()
    broker = build_broker(settings, setup_telemetry("gateway"), hub)
    pending, other = hub.open("r1"), hub.open("r2")
    async with mode.broker(broker) as br:
        for seq, text in enumerate(["Pro costs ", "$12 [1]"]):
            delta = AnswerDelta(request_id="r1", attempt="a1", seq=seq, text=text)
            await br.publish(delta, subjects.answer_subject("gw1", "r1", "delta"))
        await br.publish(answered("Pro costs $12 [1]"), subjects.answer_subject("gw1", "r1", "final"))
        # Another replica's answer for a request of the same id never reaches this one.
        await br.publish(answered("not for gw1", "r2"), subjects.answer_subject("gw2", "r2", "final"))
        events = [await asyncio.wait_for(pending.queue.get(), timeout=10) for _ in range(3)]
    assert [type(e) for e in events] == [AnswerDelta, AnswerDelta, QueryAnswered]
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "Pro costs $12 [1]"
    assert isinstance(events[-1], QueryAnswered)
    assert events[-1].draft.answer == "Pro costs $12 [1]"
    assert other.queue.empty()
