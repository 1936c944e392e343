"""Headless Chromium: the ZapFormat tab steps through the gallery's first example."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_zapformat_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Constrained decoding with Earley pruning (ZapFormat)")
    page.locator("#zapformat_step").click()
    plot = page.locator("#zapformat_plot img")
    plot.wait_for(state="visible", timeout=60_000)
    assert plot.get_attribute("src").startswith("data:image")
    page.get_by_text("Complete: the grammar's start symbol is finished.").wait_for()
    screenshot(page, "zapformat")
