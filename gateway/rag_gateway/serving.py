"""How the gateway is served: uvicorn with bounds on what an unfinished request may hold.

uvicorn's httptools protocol (the one ``http="auto"`` picks) has no limit on a request's head and
no timeout before the head is complete: ``h11_max_incomplete_event_size`` applies to the h11
protocol only, and ``timeout_keep_alive`` starts after a response, not while a request is read.
A client could hold a connection open forever, or make the gateway buffer a header of any size.
``bounded_protocol`` adds the three bounds at the connection, before any byte reaches the app:

- the request head (request line and headers) may be at most ``header_max_bytes``: beyond it the
  client gets 431 and the connection is closed, so no more than that is ever buffered;
- the head must arrive within ``header_timeout_s`` of the connection opening (or of the request's
  first byte on a kept-alive connection): past it, 408 and the connection is closed;
- a body may pause at most ``body_idle_timeout_s`` between chunks: past it, 408 and closed
  (unless the gateway itself paused reading because it has not consumed what it was sent).

Both ``rag_devrun``'s ``Stack`` and ``python -m rag_gateway`` serve through ``uvicorn_config``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from rag_gateway.settings import GatewaySettings


@dataclass(frozen=True)
class ConnectionLimits:
    header_max_bytes: int
    header_timeout_s: float
    body_idle_timeout_s: float

    @classmethod
    def of(cls, settings: GatewaySettings) -> ConnectionLimits:
        return cls(settings.header_max_bytes, settings.header_timeout_s, settings.body_idle_timeout_s)


_REASONS = {408: "Request Timeout", 431: "Request Header Fields Too Large"}
_CODES = {408: "timeout", 431: "headers_too_large"}


def _refusal(status: int, message: str) -> bytes:
    """A whole HTTP response in the API's error shape, for a request that never reached the app."""
    rid = uuid.uuid4().hex
    body = json.dumps({"error": {"code": _CODES[status], "message": message, "request_id": rid}}).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nx-request-id: {rid}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a head size limit, a head timeout and a body idle timeout."""

    limits = ConnectionLimits(32 * 1024, 10.0, 30.0)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._conn: asyncio.Transport | None = None
        self._reading_head = True
        self._head_bytes = 0
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._conn = transport
        self._arm(self.limits.header_timeout_s, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        while data and self._reading_head and not self._closing():
            room = self.limits.header_max_bytes - self._head_bytes
            if room <= 0:
                self._refuse(431, f"the request head is larger than {self.limits.header_max_bytes} bytes")
                return
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            super().data_received(piece)
        if data and not self._closing():
            super().data_received(data)

    # --- httptools parser callbacks -------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head, self._head_bytes = True, 0
        self._arm(self.limits.header_timeout_s, self._head_timed_out)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._arm(self.limits.body_idle_timeout_s, self._body_timed_out)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._arm(self.limits.body_idle_timeout_s, self._body_timed_out)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._cancel()
        super().on_message_complete()

    # --- timers -----------------------------------------------------------------------------
    def _closing(self) -> bool:
        return self._conn is None or self._conn.is_closing()

    def _arm(self, delay: float, callback: Callable[[], None]) -> None:
        self._cancel()
        self._timer = asyncio.get_running_loop().call_later(delay, callback)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _head_timed_out(self) -> None:
        self._timer = None
        self._refuse(408, f"the request head did not arrive within {self.limits.header_timeout_s:g} s")

    def _body_timed_out(self) -> None:
        self._timer = None
        if self._conn is not None and not self._conn.is_closing() and not self._conn.is_reading():
            # The gateway paused reading (it has not consumed the body yet): not the client's delay.
            self._arm(self.limits.body_idle_timeout_s, self._body_timed_out)
            return
        self._refuse(408, f"the request body paused longer than {self.limits.body_idle_timeout_s:g} s")

    def _refuse(self, status: int, message: str) -> None:
        self._cancel()
        if self._conn is None or self._conn.is_closing():
            return
        self._conn.write(_refusal(status, message))
        self._conn.close()


def bounded_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """The protocol class uvicorn instantiates per connection, with these limits."""
    return type("GatewayHttpProtocol", (BoundedHttpToolsProtocol,), {"limits": limits})


def uvicorn_config(app: ASGIApp, settings: GatewaySettings, *, host: str, port: int, log_level: str) -> uvicorn.Config:
    """The uvicorn configuration every way of serving the gateway uses."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        http=bounded_protocol(ConnectionLimits.of(settings)),
        timeout_keep_alive=settings.keep_alive_timeout_s,
    )
