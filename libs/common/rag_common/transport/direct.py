"""A nats-py subscription whose messages are handed over where nats-py parses them.

With a callback, nats-py puts each message of a subscription on the subscription's pending queue;
a task of the subscription's own (``Subscription._wait_for_msgs``) takes it off and awaits the
callback. On the query path that is a queue round and one more event-loop turn per delivery before
our code sees the message, and the pull consumer then made a task of its own for the handler. Here
the subscription's pending queue is replaced by one that calls ``on_message`` at once, from
nats-py's reader (``Client._process_msg``), in arrival order: a plain function that must not
block; work that awaits goes into a task of its own (``PullConsumer``), or there is none (the
gateway's answers, ``AnswerHub.deliver``).

``direct_replies`` does the same for nats-py's own reply subscription (a JetStream publish's
PubAck). What stays nats-py's: the SUB and UNSUB, the subscription kept across reconnects,
``drain`` and ``unsubscribe`` (nothing is ever pending here, so a drain only waits for the
server's round trip). This reaches into nats-py's private attributes (pinned in
``requirements.lock``); ``tests/integration/test_direct_delivery.py`` checks the path on a real
server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

log = logging.getLogger(__name__)

OnMessage = Callable[[Msg], None]


class _HandOver(asyncio.Queue[Msg]):
    """Stands in for a subscription's pending queue: a message put on it goes to ``on_message``
    and is never queued, so ``join`` (a drain) never waits and ``qsize`` is always 0."""

    def __init__(self, subscription: Subscription, on_message: OnMessage) -> None:
        super().__init__()
        self._subscription = subscription
        self._on_message = on_message

    def put_nowait(self, item: Msg) -> None:
        self._subscription._pending_size -= len(item.data)  # counted by nats-py as it hands it over
        try:
            self._on_message(item)
        except Exception:  # raised into nats-py's reader it would drop the connection's next messages
            log.exception("message handler failed on %s", item.subject)


async def subscribe_direct(nc: Client, subject: str, on_message: OnMessage) -> Subscription:
    """Subscribe ``subject`` (wildcards allowed) and call ``on_message(msg)`` for each message,
    synchronously, in arrival order, from nats-py's reader."""
    subscription = await nc.subscribe(subject)  # no callback: no task of nats-py's per subscription
    _hand_over(subscription, on_message)
    return subscription


async def direct_replies(nc: Client) -> None:
    """Hand each reply to a request (a JetStream publish's PubAck above all) to its waiting future
    from nats-py's reader, as ``Client._request_sub_callback`` does, but without the reply
    subscription's queue and task in between: one event-loop turn less before a stage may ack.

    nats-py makes its reply subscription (``_INBOX.<id>.*``) on the first request; made here
    first if need be. It lasts as long as the connection (kept across reconnects), so once is
    enough; a second call changes nothing.
    """
    if not nc._resp_sub_prefix:
        await nc._init_request_sub()
    prefix = len(nc._inbox_prefix) + 22 + 2  # "<inbox prefix>.<22-character nuid>." as nats-py cuts it

    def on_reply(msg: Msg) -> None:
        future = nc._resp_map.get(msg.subject[prefix:])
        if future is not None and not future.done():
            future.set_result(msg)

    for subscription in list(nc._subs.values()):
        if subscription._cb == nc._request_sub_callback and not isinstance(subscription._pending_queue, _HandOver):
            _hand_over(subscription, on_reply)
            if subscription._wait_for_msgs_task is not None:
                subscription._wait_for_msgs_task.cancel()  # it would wait on a queue nothing is put on


def _hand_over(subscription: Subscription, on_message: OnMessage) -> None:
    queued = subscription._pending_queue
    subscription._pending_queue = _HandOver(subscription, on_message)
    while not queued.empty():  # anything that arrived before the hand-over
        subscription._pending_queue.put_nowait(queued.get_nowait())
