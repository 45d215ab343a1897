"""The whole system in one process: every service plus the gateway, still talking over NATS.

``make run`` uses it, and so do the end-to-end tests. Each service keeps its own broker
connection, settings and telemetry, exactly as if it ran in its own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from faststream import FastStream
from opentelemetry.sdk.trace import SpanProcessor

from rag_common.store.embedding import ModelFolderError
from rag_common.transport.telemetry import MetricsPortError, ServiceTelemetry, setup_telemetry
from rag_devrun.natsserver import LocalNatsServer, ensure_nats
from rag_evaluator.app import create_app as create_evaluator
from rag_evaluator.settings import EvaluatorSettings
from rag_gateway.app import create_app as create_gateway
from rag_gateway.serving import uvicorn_config
from rag_gateway.settings import GatewaySettings
from rag_generator.app import create_app as create_generator
from rag_generator.settings import GeneratorSettings
from rag_ingest.app import create_app as create_ingest
from rag_ingest.settings import IngestSettings
from rag_retriever.app import create_app as create_retriever
from rag_retriever.settings import RetrieverSettings
from rag_router.app import create_app as create_router
from rag_router.settings import RouterSettings

log = logging.getLogger("rag.devrun")


@dataclass
class StackOptions:
    """What differs between ``make run`` and a test: where things live and which ports are used."""

    data_dir: Path = Path("data")
    nats_url: str | None = None  # None: the NATS_URL setting (default nats://127.0.0.1:4222)
    host: str = "127.0.0.1"
    port: int = 8000
    metrics: bool = True  # per-service /metrics ports 9101-9105
    span_processors: Sequence[SpanProcessor] = ()
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # per service: settings fields
    services: Sequence[str] = ("ingest", "router", "retriever", "generator", "evaluator")  # which to start
    replicas: dict[str, int] = field(default_factory=dict)  # e.g. {"retriever": 2}; default 1 each
    gateway: bool = True


def stop_on_signals() -> asyncio.Event:
    """An event that Ctrl-C (SIGINT) or SIGTERM sets: how a runner or worker is told to stop and
    drain, instead of the signal ending the process (call from the running event loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


class StartError(RuntimeError):
    """The system could not start; the message says what to change."""


class _Server(uvicorn.Server):
    """uvicorn without signal handlers of its own: whoever runs the ``Stack`` decides when it stops.

    uvicorn catches SIGINT and SIGTERM while it serves and raises the signal again once it has
    stopped, which ended the process before the services behind the gateway were drained and
    closed (``Stack.__aexit__``). For the same reason a gateway that cannot listen (its port taken)
    is a ``StartError``, not uvicorn's ``sys.exit``, which skipped stopping the services and the
    nats-server the ``Stack`` had started.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().serve(sockets)
        except SystemExit:  # uvicorn logged why (e.g. "address already in use")
            where = f"{self.config.host}:{self.config.port}"
            raise StartError(
                f"the gateway could not listen on {where} (port in use?): pick another with RAG_GATEWAY_PORT or --port"
            ) from None


class Stack:
    """Start NATS (if none is reachable), the five services and the gateway; stop all of them."""

    def __init__(self, options: StackOptions | None = None) -> None:
        self.options = options or StackOptions()
        self.nats_server: LocalNatsServer | None = None
        self.apps: list[FastStream] = []
        self.telemetries: list[ServiceTelemetry] = []  # one per started app, same order
        self.server: uvicorn.Server | None = None
        self.serve_task: asyncio.Task[None] | None = None
        self.base_url = ""
        self.nats_url = ""

    def _settings(self, cls: type[Any], service: str, **defaults: Any) -> Any:
        values = {"nats_url": self.nats_url, "data_dir": self.options.data_dir, **defaults}
        if not self.options.metrics:
            values["metrics_port"] = 0
        values.update(self.options.overrides.get(service, {}))
        return cls(**values)

    async def __aenter__(self) -> Stack:
        try:
            await self._start()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def _start(self) -> None:
        url = self.options.nats_url or GatewaySettings().nats_url
        self.nats_url, self.nats_server = await ensure_nats(url, self.options.data_dir / "nats")
        if self.nats_server:
            log.info(
                "no NATS at %s: started nats-server at %s (store %s)", url, self.nats_url, self.nats_server.store_dir
            )
        processors = list(self.options.span_processors)
        factories: list[tuple[Callable[..., FastStream], type[Any], str]] = [
            (create_ingest, IngestSettings, "ingest"),
            (create_router, RouterSettings, "router"),
            (create_retriever, RetrieverSettings, "retriever"),
            (create_generator, GeneratorSettings, "generator"),
            (create_evaluator, EvaluatorSettings, "evaluator"),
        ]
        for create, settings_cls, name in factories:
            if name not in self.options.services:
                continue
            for replica in range(self.options.replicas.get(name, 1)):
                settings = self._settings(settings_cls, name)
                if replica:
                    settings.metrics_port = 0  # one metrics port per service in one process
                telemetry = setup_telemetry(name, processors, settings=settings)
                app = create(settings, telemetry)
                try:
                    await app.start()
                except (MetricsPortError, ModelFolderError) as exc:  # a setting to change: say which
                    with contextlib.suppress(Exception):
                        await app.stop()
                    raise StartError(str(exc)) from None
                self.apps.append(app)
                self.telemetries.append(telemetry)
        if not self.options.gateway:
            return
        gateway_settings = self._settings(GatewaySettings, "gateway", host=self.options.host, port=self.options.port)
        gateway = create_gateway(gateway_settings, setup_telemetry("gateway", processors, settings=gateway_settings))
        config = uvicorn_config(
            gateway, gateway_settings, host=self.options.host, port=self.options.port, log_level="warning"
        )
        self.server = _Server(config)
        self.serve_task = asyncio.create_task(self.server.serve())
        deadline = time.monotonic() + 60
        while not self.server.started:
            if self.serve_task.done():
                self.serve_task.result()
                raise RuntimeError(f"gateway did not start on {self.options.host}:{self.options.port}")
            if time.monotonic() > deadline:
                raise RuntimeError("gateway did not start within 60s")
            await asyncio.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://{self.options.host}:{port}"

    async def wait(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set (the runner's Ctrl-C or SIGTERM) or the gateway ends by itself."""
        stopping = asyncio.ensure_future(stop.wait())
        try:
            running = [stopping, *([self.serve_task] if self.serve_task else [])]
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()

    async def __aexit__(self, *exc: object) -> None:
        if self.server and self.serve_task:
            self.server.should_exit = True
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self.serve_task
        for app in reversed(self.apps):
            with contextlib.suppress(Exception):
                await app.stop()
        self.apps.clear()
        if self.nats_server:
            self.nats_server.stop()
