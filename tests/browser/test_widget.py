"""The widget on a page of another origin, in a real headless Chromium: it opens, answers, asks about a selection."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, Request, expect

from tests.support.browser import QUOTE, save_screenshot, serve_host_page
from tests.support.system import System, origin_of

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
async def partner_site(system: System, other_origin: socket.socket) -> AsyncIterator[str]:
    async with serve_host_page(other_origin, system.base_url) as url:
        yield url


def stream_bodies(page: Page) -> list[dict[str, object]]:
    bodies: list[dict[str, object]] = []

    def record(request: Request) -> None:
        if request.url.endswith("/v1/query/stream") and request.method == "POST" and request.post_data:
            bodies.append(json.loads(request.post_data))

    page.on("request", record)
    return bodies


async def test_widget_opens_and_answers_across_origins(
    page: Page, system: System, partner_site: str, artifacts: Path
) -> None:
    assert partner_site != system.base_url
    sent = stream_bodies(page)
    await page.goto(partner_site)
    widget = page.locator("rag-chat")
    launcher = widget.locator("button[aria-controls]")  # the floating button: "Open chat", "Hide chat" when open
    await expect(launcher).to_have_text("Open chat")
    await launcher.click()
    panel = widget.get_by_role("dialog", name="Ask the Orbitly docs")
    await expect(panel).to_be_visible()
    await expect(launcher).to_have_attribute("aria-expanded", "true")
    await expect(panel.get_by_label("Your question")).to_be_focused()
    await panel.get_by_label("Your question").fill("What is the API rate limit per token?")
    await panel.get_by_label("Your question").press("Enter")
    citation = panel.locator("details.citation", has_text="api.md").first
    await expect(citation).to_be_visible()
    await expect(panel.locator(".a").last).to_contain_text("600")
    await expect(citation.locator("summary")).to_contain_text("Rate limits")
    await citation.locator("summary").click()
    await expect(citation.locator("p")).to_contain_text("600 requests per minute")
    assert sent
    assert sent[0]["collection"] == "default"
    assert str(sent[0]["session_id"]).startswith("widget-")
    await save_screenshot(page, "widget.png", artifacts)
    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()


async def test_ask_about_the_selected_text(page: Page, partner_site: str) -> None:
    sent = stream_bodies(page)
    await page.goto(partner_site)
    widget = page.locator("rag-chat")
    ask_selected = widget.get_by_role("button", name="Ask about the selection")
    await expect(ask_selected).to_be_hidden()
    await page.evaluate(
        """() => { const range = document.createRange();
                   range.selectNodeContents(document.getElementById('quote'));
                   const s = getSelection(); s.removeAllRanges(); s.addRange(range); }"""
    )
    await expect(ask_selected).to_be_visible()
    await ask_selected.click()
    panel = widget.get_by_role("dialog")
    await expect(panel).to_be_visible()
    await expect(panel.locator(".about")).to_contain_text(QUOTE)
    await panel.get_by_label("Your question").fill("What happens when I go over it?")
    await panel.get_by_role("button", name="Ask", exact=True).click()
    await expect(panel.locator("details.citation").first).to_be_visible()
    assert sent[-1]["selected_text"] == QUOTE
    await expect(panel.locator(".log li").last).to_contain_text("About:")
    await expect(panel.locator(".log li").last.locator("summary").first).to_contain_text("api.md")
    await expect(panel.locator(".about")).to_be_hidden()


async def test_cors_allows_only_the_listed_origin(system: System, other_origin: socket.socket) -> None:
    allowed = origin_of(other_origin)
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    async with httpx.AsyncClient(base_url=system.base_url) as http:
        ok = await http.options("/v1/query/stream", headers={"Origin": allowed, **preflight})
        denied = await http.options("/v1/query/stream", headers={"Origin": "http://evil.example", **preflight})
        script = await http.get("/widget.js")
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == allowed
    assert "access-control-allow-origin" not in denied.headers
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert 'customElements.define("rag-chat"' in script.text


async def test_launcher_and_close_buttons_are_labelled_apart(page: Page, partner_site: str) -> None:
    await page.goto(partner_site)
    widget = page.locator("rag-chat")
    await widget.get_by_role("button", name="Open chat").click()
    await expect(widget.get_by_role("dialog")).to_be_visible()
    await expect(widget.get_by_role("button", name="Close chat")).to_have_count(1)
    await expect(widget.get_by_role("button", name="Hide chat")).to_have_count(1)
    await widget.get_by_role("button", name="Close chat").click()
    await expect(widget.get_by_role("dialog")).to_be_hidden()
    await expect(widget.get_by_role("button", name="Open chat")).to_be_focused()


async def test_a_site_the_gateway_does_not_allow_is_told_how_to_fix_it(page: Page, system: System) -> None:
    """A partner site whose origin is not in RAG_GATEWAY_CORS_ORIGINS: the browser blocks the answer
    (fetch throws, with no status to show); the widget says which setting lets the site in."""
    refused = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    refused.bind(("127.0.0.1", 0))
    refused.listen(64)
    with refused:
        async with serve_host_page(refused, system.base_url) as site:
            await page.goto(site)
            widget = page.locator("rag-chat")
            await widget.locator("button[aria-controls]").click()  # the launcher
            panel = widget.get_by_role("dialog")
            await panel.get_by_label("Your question").fill("What is the API rate limit per token?")
            await panel.get_by_label("Your question").press("Enter")
            error = panel.get_by_role("alert")
            await expect(error).to_have_text(
                f"This site ({site}) is not allowed by the gateway: "
                f"set RAG_GATEWAY_CORS_ORIGINS to include {site} on the gateway."
            )
            await expect(error).not_to_contain_text("Failed to fetch")


async def test_a_gateway_that_is_down_is_named_as_such(page: Page, partner_site: str) -> None:
    """Not every failed fetch is CORS: with the gateway unreachable the widget says that instead."""
    await page.goto(partner_site)
    await page.route("**/v1/query/stream", lambda route: route.abort("connectionrefused"))
    await page.route("**/healthz", lambda route: route.abort("connectionrefused"))
    widget = page.locator("rag-chat")
    await widget.locator("button[aria-controls]").click()  # the launcher
    panel = widget.get_by_role("dialog")
    await panel.get_by_label("Your question").fill("Anyone there?")
    await panel.get_by_label("Your question").press("Enter")
    await expect(panel.get_by_role("alert")).to_contain_text("cannot be reached: check that it is running")


async def test_the_widget_is_titled_with_the_collections_assistant_name(
    page: Page, system: System, partner_site: str
) -> None:
    async with httpx.AsyncClient(base_url=system.base_url) as client:
        put = await client.put("/v1/collections/named-widget/profile", json={"assistant_name": "Kestrel Rota Help"})
        assert put.status_code == 200, put.text
    await page.goto(partner_site)
    # A second widget, as a site would embed it without a title of its own.
    await page.evaluate(
        "const chat = document.createElement('rag-chat'); chat.id = 'named';"
        "chat.setAttribute('collection', 'named-widget'); document.body.append(chat);"
    )
    widget = page.locator("rag-chat#named")
    await widget.locator("button[aria-controls]").click()
    await expect(widget.get_by_role("dialog", name="Kestrel Rota Help")).to_be_visible()
    await expect(widget.get_by_role("heading", name="Kestrel Rota Help")).to_be_visible()
