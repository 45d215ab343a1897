"""Helpers of the browser tests: screenshots, and a second web origin serving a page that embeds the widget."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import uvicorn
from playwright.async_api import Page
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"

QUOTE = "Each API token can make up to 600 requests per minute."


def host_page(gateway_url: str) -> str:
    """A partner site that knows nothing of the gateway except the two lines of the widget."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Partner site</title></head>
<body style="font-family: sans-serif; margin: 2rem; max-width: 40rem">
  <h1>Partner site</h1>
  <p>Some article on a site that is not the gateway.</p>
  <p id="quote">{QUOTE}</p>
  <script src="{gateway_url}/widget.js"></script>
  <rag-chat collection="default" title="Ask the Orbitly docs"></rag-chat>
</body></html>"""


@asynccontextmanager
async def serve_host_page(sock: socket.socket, gateway_url: str) -> AsyncIterator[str]:
    """Serve the partner page on ``sock`` (another origin than the gateway) until the block ends."""

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(host_page(gateway_url))

    app = Starlette(routes=[Route("/", index)])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    deadline = time.monotonic() + 30
    while not server.started:
        if task.done():
            task.result()
        assert time.monotonic() < deadline, "the partner page server did not start"
        await asyncio.sleep(0.01)
    host, port = sock.getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)


async def save_screenshot(page: Page, name: str, artifacts: Path) -> Path:
    """Keep a screenshot as a test artifact; refresh the README's picture in docs/screenshots too when
    it is missing or ``RAG_UPDATE_SCREENSHOTS=1`` (so a test run leaves the checked-in one alone)."""
    data = await page.screenshot(full_page=False)
    assert len(data) > 1000, "the screenshot is empty"
    (artifacts / name).write_bytes(data)
    checked_in = SCREENSHOTS / name
    if os.environ.get("RAG_UPDATE_SCREENSHOTS") == "1" or not checked_in.exists():
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        checked_in.write_bytes(data)
    return artifacts / name
