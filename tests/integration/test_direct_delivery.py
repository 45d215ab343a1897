"""Messages handed over where nats-py parses them (``rag_common.transport.direct``), on a real
nats-server: in order, past a failing handler, none left behind by a drain, and requests (a
JetStream publish's PubAck) still answered, or timed out, once their replies are handed over too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import RetentionPolicy, StorageType, StreamConfig

from rag_common.transport.direct import direct_replies, subscribe_direct
from rag_devrun.natsserver import LocalNatsServer
from tests.support.polling import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
async def nc(nats_server: LocalNatsServer) -> AsyncIterator[Client]:
    connection = await nats.connect(nats_server.url)
    yield connection
    await connection.close()


async def _value(value: int) -> int:
    return value


async def test_messages_arrive_in_order_and_a_failing_handler_stops_none_of_the_next(nc: Client) -> None:
    seen: list[bytes] = []

    def on_message(msg: Msg) -> None:
        seen.append(msg.data)
        if msg.data == b"2":
            raise RuntimeError("a bug in the handler")

    subscription = await subscribe_direct(nc, "direct.test.*", on_message)
    for i in range(50):
        await nc.publish(f"direct.test.{i % 3}", str(i).encode())
    await nc.flush()
    await eventually(lambda: _value(len(seen)), lambda n: n == 50, timeout_s=5, what="all 50 handed over")
    assert seen == [str(i).encode() for i in range(50)]
    assert subscription.pending_msgs == 0 and subscription.pending_bytes == 0
    await subscription.drain()  # type: ignore[no-untyped-call]  # nothing is queued: only the round trip
    await nc.publish("direct.test.0", b"after")
    await nc.flush()
    assert seen[-1] == b"49"


async def test_requests_and_jetstream_publishes_are_answered_once_replies_are_handed_over(nc: Client) -> None:
    stream = StreamConfig(
        name="DIRECT", subjects=["direct.js"], retention=RetentionPolicy.WORK_QUEUE, storage=StorageType.MEMORY
    )
    await nc.jetstream().add_stream(stream)
    await direct_replies(nc)
    await direct_replies(nc)  # a second call changes nothing

    async def echo(msg: Msg) -> None:
        await msg.respond(msg.data.upper())

    await nc.subscribe("direct.echo", cb=echo)
    replies = [await nc.request("direct.echo", f"q{i}".encode(), timeout=2) for i in range(20)]
    assert [r.data for r in replies] == [f"Q{i}".encode() for i in range(20)]

    js = nc.jetstream()
    acks = [await js.publish("direct.js", str(i).encode(), timeout=2) for i in range(20)]
    assert [a.seq for a in acks] == list(range(1, 21))

    await nc.subscribe("direct.silent", cb=_ignore)
    with pytest.raises(NatsTimeoutError):
        await nc.request("direct.silent", b"?", timeout=0.2)


async def _ignore(msg: Msg) -> None:
    return None
