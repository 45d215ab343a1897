"""Keep a service's JetStream layout in place while it runs, across NATS restarts.

``RAG_QUERY`` is memory-stored: a restarted nats-server comes back without it and without its
consumers. nats-py reconnects by itself and re-subscribes core subscriptions, but a pull
subscription then fetches from a consumer that no longer exists, and the gateway publishes into
a stream that no longer exists. Each broker therefore carries a ``JetStreamLayout``: the streams
and the durable consumers its service declared. It re-declares them when the connection comes
back (the ``reconnected_cb`` of nats-py) and checks them every ``check_interval_s`` as a second
line of defence (JetStream can answer a few hundred milliseconds after the client reconnects).
``missing()`` is what readiness reports, so ``/readyz`` is 503 until the layout is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig
from nats.js.errors import NotFoundError

log = logging.getLogger(__name__)

StreamDeclarer = Callable[[JetStreamContext], Awaitable[None]]
RestoreHook = Callable[[], Awaitable[None]]

CHECK_INTERVAL_S = 5.0
RETRY_BACKOFF_S = (0.1, 0.25, 0.5, 1.0, 2.0)


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """A durable pull consumer as the service declares it."""

    stream: str
    durable: str
    subject: str
    config: ConsumerConfig

    def full_config(self) -> ConsumerConfig:
        """The configuration ``pull_subscribe`` would create, with our name and filter."""
        return self.config.evolve(name=self.durable, durable_name=self.durable, filter_subject=self.subject)


class JetStreamLayout:
    """The streams and consumers one broker needs, re-declared whenever they go missing."""

    def __init__(self, streams: tuple[str, ...], declare_streams: StreamDeclarer) -> None:
        self.streams = streams
        self.consumers: list[ConsumerSpec] = []
        self._declare_streams = declare_streams
        self._js: JetStreamContext | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.redeclared = 0  # how many times a missing stream or consumer was declared again
        self._hooks: list[RestoreHook] = []
        self._reconnected = False  # a reconnect not yet followed by a complete layout

    def add_consumer(self, spec: ConsumerSpec) -> None:
        """Keep this consumer declared: it is put back when NATS comes back without it."""
        self.consumers.append(spec)

    def add_restore_hook(self, hook: RestoreHook) -> None:
        """Run ``hook`` once the layout is complete again after a reconnect or a missing part.

        What a memory-stored stream held is gone by then (a restarted nats-server, or a stream
        deleted by hand), so a hook puts back what its service still waits for: the gateway
        re-submits the questions it has not answered yet (same message ids, so JetStream drops
        any that the stream still had).
        """
        self._hooks.append(hook)

    async def declare(self, js: JetStreamContext) -> None:
        """Create or update every stream and consumer (idempotent; updates carry new settings)."""
        await self._declare_streams(js)
        for spec in self.consumers:
            await js.add_consumer(spec.stream, config=spec.full_config())

    async def missing(self) -> list[str]:
        """Names of the streams and consumers that do not exist right now (all of them if unknown)."""
        if self._js is None:
            return [*self.streams, *(f"{c.stream}/{c.durable}" for c in self.consumers)]
        absent: list[str] = []
        for stream in self.streams:
            try:
                await self._js.stream_info(stream)
            except NotFoundError:
                absent.append(stream)
        for spec in self.consumers:
            try:
                await self._js.consumer_info(spec.stream, spec.durable)
            except NotFoundError:
                absent.append(f"{spec.stream}/{spec.durable}")
        return absent

    async def start(self, js: JetStreamContext, *, check_interval_s: float = CHECK_INTERVAL_S) -> None:
        """Declare now, then keep watching until the connection closes."""
        self._js = js
        await self.declare(js)
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.create_task(self._watch(check_interval_s), name="jetstream-layout")

    async def reconnected(self) -> None:
        """nats-py's ``reconnected_cb``: look at the layout now rather than at the next check."""
        self._reconnected = True
        if self._wake is not None:
            self._wake.set()

    async def closed(self) -> None:
        """nats-py's ``closed_cb``: the connection is gone for good, stop watching."""
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _watch(self, check_interval_s: float) -> None:
        assert self._wake is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=check_interval_s)
            self._wake.clear()
            await self._restore()

    async def _restore(self) -> None:
        """Re-declare what is missing; JetStream may need a moment after a restart, so retry a few times."""
        for attempt, pause in enumerate((*RETRY_BACKOFF_S, None)):
            try:
                reconnected, self._reconnected = self._reconnected, False
                absent = await self.missing()
                if absent:
                    assert self._js is not None
                    await self.declare(self._js)
                    self.redeclared += 1
                    log.warning("JetStream layout restored after it went missing: %s", ", ".join(absent))
                if (absent or reconnected) and not await self._run_hooks():
                    self._reconnected = True  # run them again at the next check
                return
            except Exception as exc:  # NATS still coming back: try again shortly, then at the next check
                self._reconnected = self._reconnected or reconnected
                if pause is None:
                    log.warning("JetStream layout not restored after %d attempts: %r", attempt + 1, exc)
                    return
                await asyncio.sleep(pause)

    async def _run_hooks(self) -> bool:
        """Run every restore hook; False if one failed (one hook's failure does not stop the others)."""
        ok = True
        for hook in self._hooks:
            try:
                await hook()
            except Exception as exc:
                log.warning("JetStream restore hook %r failed, will run again: %r", hook, exc)
                ok = False
        return ok


_LAYOUTS: weakref.WeakKeyDictionary[Any, JetStreamLayout] = weakref.WeakKeyDictionary()


def attach_layout(broker: Any, layout: JetStreamLayout) -> None:
    """Remember the broker's layout, so ``layout_of`` finds it where only the broker is at hand."""
    _LAYOUTS[broker] = layout


def layout_of(broker: Any) -> JetStreamLayout | None:
    """The layout a broker was made with (``rag_common.transport.broker.make_broker``), if any."""
    return _LAYOUTS.get(broker)
