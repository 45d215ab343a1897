"""The chat page at ``/`` in a real headless Chromium, against the running system."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, Route, expect

from rag_common.wire.formats import FORMAT_NAMES, SUPPORTED_EXTENSIONS
from tests.support.browser import save_screenshot
from tests.support.office_files import course_docx, course_html, course_pptx
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

LATE_LIST_IN = """() => performance.getEntriesByType('resource')
  .some((entry) => entry.name.includes('/v1/documents?collection=default&') && entry.responseEnd > 0)"""


async def ask(page: Page, question: str) -> None:
    await page.get_by_label("Your question").fill(question)
    await page.get_by_label("Your question").press("Enter")


async def test_page_loads_with_collections_and_documents(page: Page, system: System) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    response = await page.goto(f"{system.base_url}/")
    assert response is not None
    assert response.status == 200
    await expect(page.locator("#assistant-name")).to_have_text("Document assistant")  # no profile: the default
    await expect(page.get_by_label("Collection", exact=True)).to_have_value("default")
    await expect(page.locator("#documents li", has_text="pricing.md")).to_be_visible()
    await expect(page.locator("#documents li", has_text="pricing.md")).to_contain_text("indexed")
    assert requested, requested
    assert all(url.startswith(system.base_url) for url in requested), requested  # nothing from outside


async def test_streamed_answer_with_sources_and_route(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await page.evaluate(COUNT_STREAMED_UPDATES)
    await ask(page, "What is the API rate limit per token?")
    turn = page.locator(".turn").last
    citation = turn.locator(".sources button.citation", has_text="api.md").first
    await expect(citation).to_be_visible()
    await expect(citation).to_contain_text("Rate limits")
    await expect(turn.locator(".answer")).to_contain_text("600")
    assert await page.evaluate("window.__streamedUpdates") >= 1, "tokens should appear before the final answer"
    await expect(turn.locator("[data-flag]")).to_have_count(0)  # nothing raised, nothing shown
    await expect(turn.locator(".route")).to_contain_text("Route: ")
    await expect(turn.locator(".timings")).to_contain_text("total")
    await expect(page.locator("#answer-live")).to_contain_text("600")

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
    notice = page.locator(".turn").last.locator('[data-flag="conflicting_sources"]')
    await expect(notice).to_contain_text("Sources disagree on")
    await expect(notice).to_contain_text("$12")
    await expect(notice).to_contain_text("$15")


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
    await expect(page.locator(".turn").nth(0).get_by_text("Details", exact=True)).to_be_visible()
    await ask(page, "And what does it cost per year?")
    second = page.locator(".turn").nth(1)
    await expect(second.get_by_text("Details", exact=True)).to_be_visible()
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
    await page.get_by_label(re.compile(r"^Upload ")).set_input_files(str(note))
    await page.get_by_label("Into collection").fill("browser")
    await page.get_by_role("button", name="Upload", exact=True).click()
    row = page.locator("#documents li", has_text=note.name)
    await expect(row).to_have_attribute("data-status", "indexed", timeout=60_000)
    await expect(row).to_contain_text("chunks")
    await expect(page.locator("#collection option[value=browser]")).to_have_count(1)


async def test_upload_takes_word_powerpoint_and_html_and_lists_every_file_it_skips(
    page: Page, system: System, tmp_path: Path
) -> None:
    files = {
        "browser-handbook.docx": course_docx(),
        "browser-reefs.pptx": course_pptx(),
        "browser-moon.html": course_html(),
        "tool.exe": b"MZ",
        "macros.docm": course_docx(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    await page.goto(f"{system.base_url}/")
    chooser = page.get_by_label(re.compile(r"^Upload "))
    assert ".docx" in (await chooser.get_attribute("accept") or "")
    await chooser.set_input_files([str(tmp_path / name) for name in files])
    await page.get_by_label("Into collection").fill("browser-office")
    await page.get_by_role("button", name="Upload", exact=True).click()
    for name in ("browser-handbook.docx", "browser-reefs.pptx", "browser-moon.html"):
        row = page.locator("#documents li", has_text=name)
        await expect(row).to_have_attribute("data-status", "indexed", timeout=60_000)
    skipped = page.locator("#upload-error")
    await expect(skipped).to_contain_text("tool.exe: ")
    await expect(skipped).to_contain_text("macros.docm: ")
    await expect(skipped).to_contain_text("unsupported file type")


async def test_the_upload_label_lists_every_accepted_format(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    label = page.locator("label[for=files]")
    for name in FORMAT_NAMES.values():
        await expect(label).to_contain_text(name)
    for extension in SUPPORTED_EXTENSIONS:
        await expect(label).to_contain_text(re.compile(rf"{re.escape(extension)}\b"))
    chooser = page.get_by_label(re.compile(r"^Upload "))
    accepted = (await chooser.get_attribute("accept") or "").split(",")
    assert sorted(accepted) == sorted(SUPPORTED_EXTENSIONS)  # nothing the gateway refuses (".text")


async def test_an_upload_into_a_new_collection_switches_the_page_to_it(
    page: Page, system: System, tmp_path: Path
) -> None:
    marker = uuid.uuid4().hex[:8]
    fresh = f"browser-new-{marker}"
    note = tmp_path / f"fresh-note-{marker}.md"
    note.write_text(f"# Fresh note\n\nThe code word of this new collection is {marker}.\n")
    await page.goto(f"{system.base_url}/")
    picker = page.get_by_label("Collection", exact=True)
    documents = page.locator("#documents li")
    await expect(documents.filter(has_text="pricing.md")).to_be_visible()
    await page.get_by_label(re.compile(r"^Upload ")).set_input_files(str(note))
    await page.get_by_label("Into collection").fill(fresh)
    await page.get_by_role("button", name="Upload", exact=True).click()

    await expect(picker).to_have_value(fresh)
    await expect(documents.filter(has_text=note.name)).to_have_attribute("data-status", "indexed", timeout=60_000)
    await expect(documents).to_have_count(1)  # only the new collection's document, not default's
    await expect(page.locator("#session-info")).to_contain_text(fresh)

    await picker.select_option("default")
    await expect(documents.filter(has_text="pricing.md")).to_be_visible()
    await expect(documents.filter(has_text=note.name)).to_have_count(0)
    await picker.select_option(fresh)
    await expect(documents).to_have_text([re.compile(re.escape(note.name))])


async def test_the_document_list_shows_the_picked_collection_even_when_an_earlier_list_answers_late(
    page: Page, system: System, client: httpx.AsyncClient
) -> None:
    """Picking default and then another collection: default's list, answered last, is not shown."""
    marker = uuid.uuid4().hex[:8]
    other = f"browser-pick-{marker}"
    accepted = await client.post(
        "/v1/documents",
        files={"file": (f"picked-{marker}.md", f"# Picked\n\nOnly in {other}.\n".encode())},
        data={"collection": other},
    )
    assert accepted.status_code == 202, accepted.text
    await page.goto(f"{system.base_url}/?collection={other}")
    documents = page.locator("#documents li")
    await expect(documents).to_have_text([re.compile(f"picked-{marker}.md")])

    release = asyncio.Event()

    async def held(route: Route) -> None:
        await release.wait()
        await route.continue_()

    await page.route("**/v1/documents?collection=default&*", held)  # the page asks for its pages
    picker = page.get_by_label("Collection", exact=True)
    await picker.select_option("default")
    await picker.select_option(other)
    await expect(documents).to_have_text([re.compile(f"picked-{marker}.md")])
    release.set()
    # the late list has reached the page (its resource timing entry is written once the body is in),
    # then two turns of the page's event loop for its script to read it
    await page.wait_for_function(LATE_LIST_IN)
    await page.evaluate("() => new Promise((resolve) => setTimeout(() => setTimeout(resolve)))")
    await expect(picker).to_have_value(other)
    await expect(documents).to_have_text([re.compile(f"picked-{marker}.md")])
    await expect(documents.filter(has_text="pricing.md")).to_have_count(0)


async def test_an_upload_that_never_reaches_the_gateway_says_so(page: Page, system: System, tmp_path: Path) -> None:
    """A dropped connection (gateway down, a proxy's reset) is shown next to the upload, like a refused one."""
    note = tmp_path / "unsent.md"
    note.write_text("# Unsent\n\nThis upload never reaches the gateway.\n")
    await page.goto(f"{system.base_url}/")
    await expect(page.locator("#documents li").first).to_be_visible()
    await page.route("**/v1/documents", lambda route: route.abort("connectionreset"))
    await page.get_by_label(re.compile(r"^Upload ")).set_input_files(str(note))
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
    assert len(sent) >= 2, sent
    assert all(header == "Bearer test-key-123" for header in sent), sent


NO_HORIZONTAL_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
PRO_PLAN = "How much does the Pro plan cost per user per month?"


async def assert_fits(page: Page) -> None:
    """No sideways scroll, and the file input stays inside its column."""
    widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert await page.evaluate(NO_HORIZONTAL_SCROLL), widths
    files, aside = await page.locator("#files").bounding_box(), await page.locator("aside").bounding_box()
    assert files, (files, aside)
    assert aside, (files, aside)
    assert files["x"] + files["width"] <= aside["x"] + aside["width"] + 0.5, (files, aside)


@pytest.mark.parametrize("width", [390, 1280])
async def test_answer_sources_and_raised_flags_fit_the_width(
    page: Page, system: System, artifacts: Path, width: int
) -> None:
    """A phone and a laptop: nothing scrolls sideways, the answer comes before its numbered sources,
    and of the flags only the raised ones show, in words."""
    await page.set_viewport_size({"width": width, "height": 900})
    await page.goto(f"{system.base_url}/")
    await expect(page.locator("#documents li").first).to_be_visible()
    await assert_fits(page)
    await ask(page, PRO_PLAN)
    turn = page.locator(".turn").last
    await expect(turn.locator(".sources button.citation").first).to_be_visible()
    await assert_fits(page)

    answer, sources = await turn.locator(".answer").bounding_box(), await turn.locator(".sources").bounding_box()
    assert answer, (answer, sources)
    assert sources, (answer, sources)
    assert answer["y"] + answer["height"] <= sources["y"], (answer, sources)
    numbers = await turn.locator(".sources button.citation").all_inner_texts()
    assert [text.split("]")[0] for text in numbers] == [f"[{n}" for n in range(1, len(numbers) + 1)], numbers

    # The sample corpus's forum thread with a planted instruction is retrieved beside the prices:
    # that flag is raised too (a marked passage that is retrieved counts), and only these two show.
    disagreement = turn.locator('[data-flag="conflicting_sources"]')
    await expect(disagreement).to_have_count(1)
    await expect(disagreement).to_have_text(
        "Sources disagree on “pro”: $15 (sales-brochure-2025.pdf) vs $12 (pricing.md)"
    )
    raised = turn.locator("[data-flag]")
    assert set(await raised.evaluate_all("(els) => els.map((e) => e.dataset.flag)")) <= {
        "conflicting_sources",
        "injection_suspected",
    }
    shown = await turn.evaluate("(t) => t.innerText")
    for developer_words in ("refused", "citation_invalid", ": no", "{", "Route:", "total"):
        assert developer_words not in shown, (developer_words, shown)
    await save_screenshot(page, "page-phone.png" if width == 390 else "page.png", artifacts)


async def test_details_toggle_shows_route_scores_timings_and_trace(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await ask(page, "What is the API rate limit per token?")
    turn = page.locator(".turn").last
    toggle = turn.get_by_text("Details", exact=True)
    await expect(toggle).to_be_visible()
    for hidden in (".route", ".timings", ".trace-id"):
        await expect(turn.locator(hidden)).to_be_hidden()
    await toggle.focus()
    await page.keyboard.press("Enter")  # a keyboard opens it as well as a click
    await expect(turn.locator(".route")).to_be_visible()
    await expect(turn.locator(".route")).to_contain_text("Route: fast (score")
    await expect(turn.locator(".timings")).to_contain_text("total")
    await expect(turn.locator(".trace-id")).to_have_text(re.compile(r"^[0-9a-f]{32}$"))
    await expect(turn.locator("details.details")).to_contain_text("Source scores")
    await toggle.click()
    await expect(turn.locator(".route")).to_be_hidden()


async def test_citation_click_shows_the_passage_with_the_quote_highlighted(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await ask(page, "What is the API rate limit per token?")
    turn = page.locator(".turn").last
    await expect(turn.locator(".sources button.citation").first).to_be_visible()
    # The answer cites passages 1 and 3 of what was retrieved; they read 1 and 2, in the order cited.
    await expect(turn.locator(".sources button.citation")).to_have_text(
        ["[1] api.md · Rate limits", "[2] release-notes.txt · ORBITLY RELEASE NOTES"]
    )
    await turn.locator(".answer").get_by_role("button", name="Source 1: api.md · Rate limits").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await expect(dialog.get_by_role("heading")).to_have_text("[1] api.md")
    await expect(dialog.locator("mark")).to_have_text(["Each API token can make up to 600 requests per minute."])
    await expect(dialog.locator("#passage-text")).to_contain_text("429 Too Many Requests")  # the rest, not marked
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()

    await turn.locator(".answer").get_by_role("button", name=re.compile(r"^Source 2: release-notes")).click()
    await expect(dialog.locator("mark")).to_have_text(
        ["- API: rate limit raised from 300 to 600 requests per minute per token."]
    )


async def test_the_conversation_survives_a_reload_until_a_new_one(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/")
    await ask(page, "What is the API rate limit per token?")
    await expect(page.locator(".turn").last.locator(".sources button.citation").first).to_be_visible()
    session_id = await page.locator("#turns").get_attribute("data-session")

    await page.reload()
    turn = page.locator(".turn")
    await expect(turn).to_have_count(1)
    await expect(turn.locator(".question")).to_have_text("What is the API rate limit per token?")
    await expect(turn.locator(".answer")).to_contain_text("600 requests per minute")
    await expect(turn.locator(".sources button.citation")).to_have_count(2)
    assert await page.locator("#turns").get_attribute("data-session") == session_id
    await turn.locator(".sources button.citation").first.click()
    await expect(page.get_by_role("dialog").locator("mark")).to_contain_text("600 requests per minute")
    await page.keyboard.press("Escape")

    await page.get_by_role("button", name="New conversation").click()
    await expect(page.locator(".turn")).to_have_count(0)
    await page.reload()
    await expect(page.locator("#session-info")).to_contain_text("New conversation")
    await expect(page.locator(".turn")).to_have_count(0)
    assert await page.locator("#turns").get_attribute("data-session") != session_id


async def test_title_is_the_collections_assistant_name(page: Page, system: System) -> None:
    async def profile(route: Route) -> None:
        await route.fulfill(json={"collection": "default", "assistant_name": "Orbitly Help"})

    await page.route("**/v1/collections/default/profile", profile)
    await page.goto(f"{system.base_url}/")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Orbitly Help")
    await expect(page.locator("#assistant-name")).to_have_text("Orbitly Help")
    await expect(page).to_have_title("Orbitly Help")


STREAMED_MARKDOWN = """Three steps [1]:

1. Open **Settings**
2. Pick `API keys`
   - then *Create*

| Plan | Price |
|------|------:|
| Pro  | $12   |

```
curl -H "Authorization: Bearer $KEY" https://api.example
```

<img src=x onerror="window.__injected = 1"><script>window.__injected = 2</script> [a link](javascript:alert(1))"""


def sse(event: str, data: dict[str, object]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


async def test_markdown_answers_render_as_lists_code_and_tables_without_raw_html(page: Page, system: System) -> None:
    """What a model writes is shown as Markdown; HTML in it stays text and never runs."""
    done: dict[str, object] = {
        "answer": STREAMED_MARKDOWN,
        "citations": [
            {"n": 1, "source": "guide.md", "section": "Keys", "page": None, "score": 1.0, "text": "Open Settings."}
        ],
        "route": {"tier": "fast", "score": 0, "reason": "test", "signals": {}},
        "flags": {"refused": False, "ungrounded": True, "low_confidence": False},
        "flag_details": {"ungrounded": {"sentence": "Pick API keys [1].", "support": 0.2, "missing_numbers": []}},
        "timings_ms": {"total": 1.0},
        "trace_id": "0" * 32,
        "model": "test",
    }
    body = sse("token", {"text": STREAMED_MARKDOWN}) + sse("done", done)

    async def stream(route: Route) -> None:
        await route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=body)

    await page.route("**/v1/query/stream", stream)
    await page.goto(f"{system.base_url}/")
    await ask(page, "How do I make an API key?")
    answer = page.locator(".turn").last.locator(".answer")
    await expect(answer.locator("ol > li")).to_have_count(2)
    await expect(answer.locator("ol > li").first).to_have_text("Open Settings")
    await expect(answer.locator("ol > li strong")).to_have_text("Settings")
    await expect(answer.locator("ol li ul li em")).to_have_text("Create")
    await expect(answer.locator("table th")).to_have_text(["Plan", "Price"])
    await expect(answer.locator("table td")).to_have_text(["Pro", "$12"])
    await expect(answer.locator("pre code")).to_contain_text('curl -H "Authorization: Bearer $KEY"')
    await expect(answer.get_by_role("button", name="Source 1: guide.md · Keys")).to_be_visible()
    await expect(answer).to_contain_text('<img src=x onerror="window.__injected = 1"><script>')
    assert await answer.locator("img, script, a").count() == 0
    assert await page.evaluate("window.__injected") is None
    await expect(page.locator(".turn").last.locator("[data-flag]")).to_have_text(
        ["Part of this answer is weakly supported: “Pick API keys.”"]
    )


async def test_the_page_shows_the_collections_assistant_name(page: Page, system: System) -> None:
    async with httpx.AsyncClient(base_url=system.base_url) as client:
        put = await client.put("/v1/collections/named-page/profile", json={"assistant_name": "Orbitly Help"})
        assert put.status_code == 200, put.text
    await page.goto(f"{system.base_url}/?collection=named-page")
    await expect(page.locator("#assistant-name")).to_have_text("Orbitly Help")
