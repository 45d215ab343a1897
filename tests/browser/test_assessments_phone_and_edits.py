"""The Assessments tab on a phone and a laptop, in a real headless Chromium against the running
system: one column on the phone and nothing scrolls sideways; the key says it is the key; the
source stands beside each question; a teacher removes one question and has another written again,
and the download follows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.support.browser import save_screenshot
from tests.support.gift import parse_gift
from tests.support.system import System

pytestmark = pytest.mark.browser

NO_HORIZONTAL_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"


async def assert_fits(page: Page) -> None:
    widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert await page.evaluate(NO_HORIZONTAL_SCROLL), widths


async def box(page: Page, selector: str) -> dict[str, float]:
    found = await page.locator(selector).first.bounding_box()
    assert found, selector
    return {"x": found["x"], "y": found["y"], "width": found["width"], "height": found["height"]}


async def stems(page: Page) -> list[str]:
    return await page.locator("#a-questions > li .stem").all_inner_texts()


@pytest.mark.parametrize("width", [390, 1280])
async def test_a_teacher_reads_the_key_removes_a_question_and_has_one_written_again(
    page: Page, system: System, artifacts: Path, width: int
) -> None:
    await page.set_viewport_size({"width": width, "height": 900})
    await page.goto(f"{system.base_url}/assessments")
    await expect(page.get_by_role("heading", name="Make an assessment")).to_be_visible()
    await assert_fits(page)
    form, paper = await box(page, "section:has(#assess-form)"), await box(page, "section:has(#a-questions)")
    if width == 390:  # one column: the paper under the form, as wide as it
        assert paper["y"] >= form["y"] + form["height"] - 1, (form, paper)
        assert abs(paper["x"] - form["x"]) < 1, (form, paper)
        assert form["width"] > width * 0.8, form
    else:  # two columns: the paper beside the form
        assert paper["x"] >= form["x"] + form["width"] - 1, (form, paper)

    await page.get_by_label("Multiple choice").fill("3")
    await page.get_by_label("Short answer").fill("1")
    await page.get_by_label("Long answer").fill("0")
    await page.get_by_role("button", name="Make assessment").click()
    await expect(page.locator("#a-status")).to_contain_text("Done: 4 questions", timeout=120_000)
    await assert_fits(page)
    questions = page.locator("#a-questions > li")
    await expect(questions).to_have_count(4)

    # The key reads as the key, in words, once per multiple-choice question; it is the answer given.
    for n in range(3):
        question = questions.nth(n)
        marked = question.locator(".options li").filter(has_text="(correct answer)")
        await expect(marked).to_have_count(1)
        await expect(question.locator(".options li")).to_have_count(4)
        await question.get_by_text("Answer and source").click()
        answer = await question.locator(".answer").inner_text()
        await expect(marked).to_have_text(f"{answer} (correct answer)")
    # The source stands beside the question, to its right on a laptop (under it on a phone).
    first_stem, first_source = await box(page, "#a-questions > li .stem"), await box(page, "#a-questions > li .where")
    source_text = await questions.first.locator(".where").inner_text()
    assert source_text.startswith("Source: "), source_text
    if width == 1280:
        assert first_source["x"] >= first_stem["x"] + first_stem["width"] - 1, (first_stem, first_source)
    # No stem wraps a few letters a line: each is at least half the paper's width, or on one line.
    for stem_box in [await questions.nth(n).locator(".stem").bounding_box() for n in range(4)]:
        assert stem_box, stem_box
        assert stem_box["width"] >= paper["width"] * 0.5 or stem_box["height"] < 30, (stem_box, paper)

    before = await stems(page)
    total = await page.locator("#a-total").inner_text()
    await page.get_by_role("button", name="Remove question 2").click()
    await expect(questions).to_have_count(3)
    assert await stems(page) == [before[0], before[2], before[3]]
    changes = page.get_by_role("list", name="Your changes")
    await expect(changes).to_contain_text(f"Removed question 2 (mcq, 1 mark): {before[1]}")
    await expect(page.locator("#a-total")).not_to_have_text(total)
    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Moodle GIFT").click()
    gift = await asyncio.to_thread(Path(await (await download_info.value).path()).read_text)
    assert [q.title.split()[0] for q in parse_gift(gift)] == ["Q1", "Q2", "Q3"]
    assert before[1] not in gift

    await page.get_by_role("button", name="Rewrite question 1").click()
    await expect(changes.locator("li")).to_have_count(2, timeout=120_000)
    await expect(changes.locator("li").last).to_have_text(f"Wrote question 1 again; it was: {before[0]}")
    after = await stems(page)
    assert after[0] != before[0]
    assert after[1:] == [before[2], before[3]]
    await expect(questions.first.locator(".meta")).to_contain_text("mcq · remember")
    await expect(questions.first.locator(".options li").filter(has_text="(correct answer)")).to_have_count(1)
    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Moodle GIFT").click()
    gift = await asyncio.to_thread(Path(await (await download_info.value).path()).read_text)
    assert [q.title.split()[0] for q in parse_gift(gift)] == ["Q1", "Q2", "Q3"]
    assert before[0] not in gift
    await expect(page.locator("#a-status")).to_contain_text("Since then: 2 changes (below).")
    await assert_fits(page)
    await questions.first.evaluate("(q) => q.scrollIntoView()")
    await save_screenshot(page, "assessments-phone.png" if width == 390 else "assessments-edits.png", artifacts)
