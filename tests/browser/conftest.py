"""A real headless Chromium (Debian's ``chromium``), driven by Playwright without a browser download."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

ROOT = Path(__file__).resolve().parents[2]
# Answers take a few seconds on a busy machine: wait up to 30 s for what a user would wait for.
expect.set_options(timeout=30_000)


def chromium_path() -> str | None:
    """The system Chromium: ``RAG_CHROMIUM`` if set, else the Debian package's binary."""
    for candidate in (os.environ.get("RAG_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where the browser tests keep their screenshots (``RAG_TEST_ARTIFACTS``, default reports/test-artifacts)."""
    folder = Path(os.environ.get("RAG_TEST_ARTIFACTS", ROOT / "reports" / "test-artifacts")) / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium installed (apt-get install chromium; `make install` does it where apt works)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(30_000)
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield opened
    finally:
        await context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
