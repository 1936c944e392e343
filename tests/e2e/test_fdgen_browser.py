"""Headless Chromium: the FDGen tab — inspect the German credit graph, then train and sample (micro sizes)."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_fdgen_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Fair graph generation (FDGen)")
    page.locator("#fdgen_inspect").click()
    page.locator("#fdgen_inspect_plot img").wait_for(state="visible", timeout=30_000)
    page.get_by_text("German credit (1,000 applicants)").first.wait_for()
    page.locator("#fdgen_train").click()
    page.get_by_text("Done in").wait_for(timeout=180_000)
    page.locator("#fdgen_drawing img").wait_for(state="visible")
    assert page.locator("#fdgen_table").get_by_text("FDGen (both)").count() >= 1
    screenshot(page, "fdgen")
