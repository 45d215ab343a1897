"""A durable JetStream pull consumer driven by nats-py alone: the query stages' lean path.

FastStream's pull subscriber costs about 2 ms of Python per message on this machine (its fetch
loop, an anyio worker pool, the middleware chain, dependency resolution). Here the consumer keeps
up to ``concurrency`` messages requested or in hand at all times: one pull request asks for every
free slot, each message runs as its own task straight into ``handle``, and a slot that frees asks
again without waiting for a round trip. The inbox is a ``subscribe_direct`` subscription:
nats-py's reader hands each message to ``_received``, which starts its task there (no pending
queue, no nats-py task in between). JetStream's guarantees are the consumer's, not the client's:
explicit acks, ``ack_wait`` redelivery, ``max_deliver`` and one durable consumer shared by every
replica stay exactly as declared (``streams.consumer_config``).

Pull requests are lost when NATS restarts or the consumer is re-created; the count of requested
messages is then reset and requested again: on the server's status (a 408 expiry or a 409 says how
many it did not deliver, a 503 that nobody answers), when the ``JetStreamLayout`` has put the
consumer back, and when no heartbeat came for two heartbeat intervals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import ConsumerConfig

from rag_common.transport.direct import subscribe_direct

log = logging.getLogger(__name__)

Handler = Callable[[Msg], Awaitable[None]]

STATUS = "Status"
PENDING_MESSAGES = "Nats-Pending-Messages"
HEARTBEAT = "100"


class PullConsumer:
    """Keep ``concurrency`` messages of one durable consumer requested or in hand; run each in a task."""

    def __init__(
        self,
        *,
        stream: str,
        durable: str,
        config: ConsumerConfig,
        handle: Handler,
        concurrency: int,
        expires_s: float = 30.0,
        heartbeat_s: float = 5.0,
        retry_s: float = 0.5,
    ) -> None:
        self.stream = stream
        self.durable = durable
        self.config = config
        self.handle = handle
        self.concurrency = concurrency
        self.expires_s = expires_s
        self.heartbeat_s = heartbeat_s
        self.retry_s = retry_s
        self._nc: Client | None = None
        self._sub: Subscription | None = None
        self._inbox = ""
        self._next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}"
        self._requested = 0  # messages asked for and not delivered yet
        self._in_hand = 0  # messages being handled
        self._tasks: set[asyncio.Task[None]] = set()
        self._heard = time.monotonic()  # last message or status on the inbox
        self._stopping = False
        self._watchdog: asyncio.Task[None] | None = None
        self._retry: asyncio.Task[None] | None = None
        self.resets = 0  # how many times lost pull requests were requested again

    @property
    def in_hand(self) -> int:
        return self._in_hand

    async def start(self, nc: Client) -> None:
        """Declare the consumer (as ``pull_subscribe`` would), subscribe the inbox, ask for work."""
        self._nc = nc
        await nc.jetstream().add_consumer(self.stream, config=self.config)
        self._inbox = nc.new_inbox()
        self._sub = await subscribe_direct(nc, self._inbox, self._received)
        self._stopping = False
        self._requested = 0  # requests of an earlier start went to an inbox that is gone
        self._heard = time.monotonic()
        await self._top_up()
        self._watchdog = asyncio.create_task(self._watch(), name=f"pull-watchdog-{self.durable}")

    async def stop(self, timeout_s: float) -> None:
        """Stop asking, hand back what arrives from now on, give what runs ``timeout_s`` to finish,
        then cancel it (the handler gives a cancelled message back to JetStream at once)."""
        self._stopping = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
            self._watchdog = None
        if self._retry is not None:
            self._retry.cancel()
        if self._sub is not None and self._nc is not None and not (self._nc.is_closed or self._nc.is_draining):
            with contextlib.suppress(Exception):  # connection going away: the server drops our requests anyway
                await self._sub.drain()  # type: ignore[no-untyped-call]
        self._sub = None
        if self._tasks:
            _, running = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running)

    async def reset(self) -> None:
        """Pull requests may be gone (NATS restarted, the consumer re-created): ask again."""
        if self._stopping or self._nc is None:
            return
        self._requested = 0
        self.resets += 1
        await self._top_up()

    def _received(self, msg: Msg) -> None:
        """Called by nats-py's reader for each message of the inbox: a message starts its task
        here; a status only changes the count of messages requested (and may ask again)."""
        self._heard = time.monotonic()
        headers = msg.headers
        status = headers.get(STATUS) if headers else None
        if status is None:
            if self._requested:
                self._requested -= 1
            if self._stopping:  # arrived after stop: back to the stream for another replica, now
                self._spawn(msg.nak())
                return
            self._in_hand += 1
            self._spawn(self._run(msg))
            return
        if status == HEARTBEAT:
            return
        assert headers is not None
        pending = headers.get(PENDING_MESSAGES)
        if pending is not None and pending.isdigit():  # a request expired or ended: what it did not deliver
            self._requested = max(0, self._requested - int(pending))
            self._spawn(self._top_up())
            return
        # No pending count: the consumer or stream is missing (503), or a 409 without counts.
        log.debug("pull consumer %s: status %s %s", self.durable, status, headers.get("Description"))
        self._requested = 0
        if not self._stopping and self._retry is None:
            self._retry = asyncio.create_task(self._top_up_later())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task that ``stop`` waits for (a handler, a nak, a pull request)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _top_up_later(self) -> None:
        """Ask again after ``retry_s`` (not at once: a missing consumer would answer 503 in a loop)."""
        try:
            await asyncio.sleep(self.retry_s)
        finally:
            self._retry = None
        await self._top_up()

    async def _run(self, msg: Msg) -> None:
        try:
            await self.handle(msg)
        except Exception:  # the handler settles every message itself; this is a bug, not a message error
            log.exception("pull consumer %s: handler failed", self.durable)
        finally:
            self._in_hand -= 1
            await self._top_up()

    async def _top_up(self) -> None:
        """Ask for every free slot, once at least half of them are free (fewer, larger requests)."""
        if self._stopping or self._nc is None or self._nc.is_closed:
            return
        free = self.concurrency - self._in_hand - self._requested
        if free <= 0 or (self._requested and free < max(1, self.concurrency // 2)):
            return
        request = {
            "batch": free,
            "expires": int(self.expires_s * 1e9),
            "idle_heartbeat": int(self.heartbeat_s * 1e9),
        }
        self._requested += free
        try:
            await self._nc.publish(self._next_subject, json.dumps(request).encode(), reply=self._inbox)
        except Exception as exc:  # disconnected: the watchdog or the layout's restore asks again
            self._requested -= free
            log.debug("pull request of %s not sent: %r", self.durable, exc)

    async def _watch(self) -> None:
        """Requests outstanding and not a word for two heartbeats: they are gone, ask again."""
        while True:
            await asyncio.sleep(self.heartbeat_s)
            silent = time.monotonic() - self._heard
            if silent > 2 * self.heartbeat_s and (self._requested or self._in_hand < self.concurrency):
                log.info("pull consumer %s: no heartbeat for %.1fs, requesting again", self.durable, silent)
                self._heard = time.monotonic()
                await self.reset()
