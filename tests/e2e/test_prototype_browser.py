"""Headless Chromium: the prompt-to-prototype tab applies instructions, undoes one, shows the model."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_prototype_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Prompt-to-prototype")
    box = page.locator("#prototype_instruction textarea")
    summary = page.locator("#prototype_summary")
    for text, expect in [("make the seat a bit wider", "seat.width: 45 cm → 47 cm"),
                         ("make the backrest taller and a bit more reclined, keep the seat as is", "backrest.height"),
                         ("add armrests", "armrests.present: off → on")]:
        box.fill(text)
        page.locator("#prototype_apply").click()
        summary.get_by_text(expect).wait_for(timeout=180_000)
    page.locator("#prototype_undo").click()
    summary.get_by_text("step 3/4").wait_for()
    page.get_by_role("button", name="Redo").click()
    summary.get_by_text("Changed components (orange): armrests").wait_for()
    page.locator("#prototype_model canvas").wait_for(state="visible")
    page.wait_for_timeout(1500)  # let the viewer draw
    screenshot(page, "prototype")
