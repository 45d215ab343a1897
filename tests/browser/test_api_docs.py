"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) render in Chromium with every request held to the
gateway: nothing is fetched from a CDN, so they work on a machine without internet."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Page, Route, expect

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.system import stack_options

pytestmark = pytest.mark.browser


@pytest.fixture
async def gateway_url(tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path) -> AsyncIterator[str]:
    """The gateway alone (its docs need no service behind it)."""
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ()
    async with Stack(options) as stack:
        yield stack.base_url


async def offline(page: Page) -> list[str]:
    """Let only requests to 127.0.0.1 through, as on a machine without internet; the others are
    refused and returned, so a test can say what the page tried to fetch."""
    refused: list[str] = []

    async def only_loopback(route: Route) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            await route.continue_()
        else:
            refused.append(route.request.url)
            await route.abort("internetdisconnected")

    await page.route("**/*", only_loopback)
    return refused


async def test_swagger_ui_renders_offline(page: Page, gateway_url: str) -> None:
    refused = await offline(page)
    await page.goto(f"{gateway_url}/docs")
    await expect(page.locator(".swagger-ui .info .title")).to_contain_text("RAG gateway")
    query = page.locator(".opblock-summary-path", has_text="/v1/query").first
    await expect(query).to_be_visible()
    await expect(page.locator(".models")).to_contain_text("Answer")
    assert refused == []


async def test_redoc_renders_offline(page: Page, gateway_url: str) -> None:
    refused = await offline(page)
    await page.goto(f"{gateway_url}/redoc")
    await expect(page.locator("h1").first).to_contain_text("RAG gateway")
    await expect(page.get_by_text("/v1/query", exact=True).first).to_be_attached()
    assert refused == []
