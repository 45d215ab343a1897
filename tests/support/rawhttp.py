"""HTTP/1.1 by hand, for what a polite client cannot send: lying Content-Length, raw file names."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def multipart(
    filename: bytes, content: bytes, fields: dict[str, str] | None = None, boundary: bytes = b"HostileBoundary7"
) -> tuple[bytes, str]:
    """A multipart/form-data body whose file name goes on the wire byte for byte, unescaped."""
    parts = [
        b"--"
        + boundary
        + b'\r\nContent-Disposition: form-data; name="'
        + name.encode()
        + b'"\r\n\r\n'
        + value.encode()
        + b"\r\n"
        for name, value in (fields or {}).items()
    ]
    parts.append(
        b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="' + filename + b'"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + content + b"\r\n"
    )
    return b"".join(parts) + b"--" + boundary + b"--\r\n", f"multipart/form-data; boundary={boundary.decode()}"


class RawConnection:
    """One keep-alive TCP connection to the gateway; requests go one after another on it."""

    def __init__(self, base_url: str, timeout_s: float = 30) -> None:
        parts = urlsplit(base_url)
        self.host, self.port, self.timeout_s = parts.hostname or "127.0.0.1", parts.port or 80, timeout_s
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> RawConnection:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.close()

    async def send(self, head: bytes, body: bytes = b"") -> None:
        assert self.writer is not None
        self.writer.write(head + body)
        await self.writer.drain()

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> RawResponse:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        await self.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), body)
        return await self.response()

    async def response(self) -> RawResponse:
        return await asyncio.wait_for(self._read_response(), self.timeout_s)

    async def _read_response(self) -> RawResponse:
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await self.reader.readexactly(length) if length else b""
        return RawResponse(int(status_line.split()[1]), headers, body)
