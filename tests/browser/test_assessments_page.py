"""The assessments page in a real headless Chromium: make a paper, watch it, read it, download it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.support.browser import save_screenshot
from tests.support.gift import parse_gift
from tests.support.system import System

pytestmark = pytest.mark.browser


async def test_make_watch_read_and_download_an_assessment(page: Page, system: System, artifacts: Path) -> None:
    await page.goto(f"{system.base_url}/")
    await page.get_by_role("link", name="Assessments").click()
    await expect(page.get_by_role("heading", name="Make an assessment")).to_be_visible()
    await expect(page.get_by_label("Collection")).to_have_value("default")
    await page.get_by_label("Multiple choice").fill("2")
    await page.get_by_label("Short answer").fill("1")
    await page.get_by_label("Long answer").fill("1")
    await page.get_by_label("Total marks (optional)").fill("10")
    statuses: list[str] = []

    def seen(text: str) -> None:
        statuses.append(text)

    await page.expose_function("__status", seen)
    await page.evaluate(
        "new MutationObserver(() => window.__status(document.getElementById('a-status').textContent))"
        ".observe(document.getElementById('a-status'), {childList: true, characterData: true, subtree: true})"
    )
    await page.get_by_role("button", name="Make assessment").click()
    await expect(page.locator("#a-status")).to_contain_text("Done: 4 questions", timeout=120_000)
    assert any(s.startswith("Status:") for s in statuses), statuses  # progress was shown before the paper
    questions = page.locator("#a-questions > li")
    await expect(questions).to_have_count(4)
    first = questions.first
    await expect(first.locator(".options li")).to_have_count(4)
    await expect(first.locator(".options li.key")).to_have_count(1)
    await first.get_by_text("Answer and source").click()
    await expect(first.locator(".source")).to_contain_text("Source: ")
    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Moodle GIFT").click()
    download = await download_info.value
    assert download.suggested_filename.endswith(".gift")
    text = await asyncio.to_thread(Path(await download.path()).read_text)
    assert [q.kind for q in parse_gift(text)] == ["mcq", "mcq", "essay", "essay"]
    await save_screenshot(page, "assessments.png", artifacts)


async def test_a_bad_blueprint_shows_the_error_and_its_request_id(page: Page, system: System) -> None:
    await page.goto(f"{system.base_url}/assessments")
    for field in ("Multiple choice", "Short answer", "Long answer"):
        await page.get_by_label(field).fill("0")
    await page.get_by_role("button", name="Make assessment").click()
    await expect(page.locator("#a-error")).to_contain_text("at least one question")
    await expect(page.locator("#a-error")).to_contain_text("request ")
