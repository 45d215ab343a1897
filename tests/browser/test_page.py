"""The chat page at ``/`` in a real headless Chromium, against the running system."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.support.browser import save_screenshot
from tests.support.system import System

pytestmark = pytest.mark.browser

# Counts changes to an answer while it is still streaming (before the final answer is rendered).
COUNT_STREAMED_UPDATES = """
window.__streamedUpdates = 0;
new MutationObserver((records) => {
  for (const r of records) {
    const target = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    if (target && target.closest('.answer.streaming')) window.__streamedUpdates += 1;
  }
}).observe(document.getElementById('turns'), {subtree: true, childList: true, characterData: true});
"""


async def ask(page: Page, question: str) -> None:
    await page.get_by_label("Your question").fill(question)
    await page.get_by_label("Your question").press("Enter")


async def test_page_loads_with_collections_and_documents(page: Page, system: System) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    response = await page.goto(f"{system.base_url}/")
    assert response is not None and response.status == 200
    await expect(page.get_by_role("heading", name="Ask your documents")).to_be_visible()
    await expect(page.get_by_label("Collection", exact=True)).to_have_value("default")
    await expect(page.locator("#documents li", has_text="pricing.md")).to_be_visible()
    await expect(page.locator("#documents li", has_text="pricing.md")).to_contain_text("indexed")
    assert requested and all(url.startswith(system.base_url) for url in requested), requested  # nothing from outside


async def test_streamed_answer_with_citations_flags_and_route(page: Page, system: System, artifacts: Path) -> None:
    await page.goto(f"{system.base_url}/")
    await page.evaluate(COUNT_STREAMED_UPDATES)
    await ask(page, "What is the API rate limit per token?")
    turn = page.locator(".turn").last
    citation = turn.locator("button.citation", has_text="api.md").first
    await expect(citation).to_be_visible()
    await expect(citation).to_contain_text("Rate limits")
    await expect(turn.locator(".answer")).to_contain_text("600")
    assert await page.evaluate("window.__streamedUpdates") >= 1, "tokens should appear before the final answer"
    await expect(turn.locator('[data-flag="refused"]')).to_have_text("refused: no")
    await expect(turn.locator(".route")).to_contain_text("Route: ")
    await expect(turn.locator(".route")).to_contain_text("total")
    await expect(page.locator("#answer-live")).to_contain_text("600")
    await save_screenshot(page, "page.png", artifacts)

    await citation.click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await expect(dialog.locator("#passage-text")).to_contain_text("600")
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()


async def test_pdf_citation_shows_its_page(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await ask(page, "How much does the Pro plan cost per user per month?")
    citations = page.locator(".turn").last.locator("button.citation", has_text=".pdf")
    await expect(citations.first).to_contain_text("p. ")
    await expect(page.locator(".turn").last.locator('[data-flag="conflicting_sources"]')).to_have_text(
        "conflicting_sources: yes"
    )


async def test_stop_button_aborts_the_answer(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await expect(page.locator("#documents li").first).to_be_visible()
    cdp = await page.context.new_cdp_session(page)
    # A slow network (3 s before any response byte) so the answer is still pending when Stop is clicked.
    await cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 3000, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    await ask(page, "What is the API rate limit per token?")
    stop = page.get_by_role("button", name="Stop")
    await expect(stop).to_be_enabled()
    await stop.click()
    turn = page.locator(".turn").last
    await expect(turn.locator(".status")).to_have_text("Stopped.")
    await expect(page.get_by_role("button", name="Ask")).to_be_enabled()
    await expect(stop).to_be_disabled()
    assert await turn.locator("button.citation").count() == 0


async def test_follow_up_in_the_same_conversation(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await ask(page, "How much does the Pro plan cost per user per month?")
    await expect(page.locator(".turn").nth(0).locator(".route")).to_be_visible()
    await ask(page, "And what does it cost per year?")
    second = page.locator(".turn").nth(1)
    await expect(second.locator(".route")).to_be_visible()
    await expect(second).to_contain_text("Searched as:")
    await expect(second).to_contain_text("Pro")
    session_id = await page.locator("#turns").get_attribute("data-session")
    assert session_id
    async with httpx.AsyncClient(base_url=system.base_url) as http:
        session = (await http.get(f"/v1/sessions/{session_id}")).json()
    assert [t["question"] for t in session["turns"]] == [
        "How much does the Pro plan cost per user per month?",
        "And what does it cost per year?",
    ]
    await page.get_by_role("button", name="New conversation").click()
    await expect(page.locator(".turn")).to_have_count(0)
    assert await page.locator("#turns").get_attribute("data-session") != session_id


async def test_upload_shows_the_document_status(page: Page, system: System, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex[:8]
    note = tmp_path / f"browser-note-{marker}.md"
    note.write_text(f"# Browser note\n\nThe browser test code word is {marker}, used only by this test.\n")
    await page.goto(f"{system.base_url}/")
    await page.get_by_label("Upload PDF, Markdown or text files").set_input_files(str(note))
    await page.get_by_label("Into collection").fill("browser")
    await page.get_by_role("button", name="Upload", exact=True).click()
    row = page.locator("#documents li", has_text=note.name)
    await expect(row).to_have_attribute("data-status", "indexed", timeout=60_000)
    await expect(row).to_contain_text("chunks")
    await expect(page.locator("#collection option[value=browser]")).to_have_count(1)


async def test_an_upload_that_never_reaches_the_gateway_says_so(page: Page, system: System, tmp_path: Path) -> None:
    """A dropped connection (gateway down, a proxy's reset) is shown next to the upload, like a refused one."""
    note = tmp_path / "unsent.md"
    note.write_text("# Unsent\n\nThis upload never reaches the gateway.\n")
    await page.goto(f"{system.base_url}/")
    await expect(page.locator("#documents li").first).to_be_visible()
    await page.route("**/v1/documents", lambda route: route.abort("connectionreset"))
    await page.get_by_label("Upload PDF, Markdown or text files").set_input_files(str(note))
    await page.get_by_role("button", name="Upload", exact=True).click()
    await expect(page.locator("#upload-error")).to_contain_text("unsent.md: the gateway could not be reached")


async def test_api_key_is_sent_as_a_bearer_token(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await expect(page.locator("#documents li").first).to_be_visible()  # the first loads, without a key, are done
    sent: list[str | None] = []
    page.on(
        "request",
        lambda request: sent.append(request.headers.get("authorization")) if "/v1/" in request.url else None,
    )
    await page.get_by_label("API key").fill("test-key-123")
    await page.get_by_label("API key").press("Tab")
    await ask(page, "What is the API rate limit per token?")
    await expect(page.locator(".turn").last.locator("button.citation").first).to_be_visible()
    assert len(sent) >= 2 and all(header == "Bearer test-key-123" for header in sent), sent


async def test_the_page_shows_the_collections_assistant_name(page: Page, system: System) -> None:
    async with httpx.AsyncClient(base_url=system.base_url) as client:
        put = await client.put("/v1/collections/named-page/profile", json={"assistant_name": "Orbitly Help"})
        assert put.status_code == 200, put.text
    await page.goto(f"{system.base_url}/?collection=named-page")
    await expect(page.locator("#assistant-name")).to_have_text("Orbitly Help")
