"""Headless Chromium: the ROSE tab opens on the worked example (shipped model), then runs a forecast job."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot

LABEL = "General time-series forecasting (ROSE)"


def test_rose_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, LABEL)
    # the worked example (airline, computed with the shipped weights) is there before any click
    page.locator("#rose_plot img").wait_for(state="visible")
    page.locator("#rose_register img").wait_for(state="visible")
    assert "ROSE zero-shot" in page.locator("#rose_table").inner_text()
    screenshot(page, "rose")
    page.get_by_label("AutoARIMA (pmdarima)").uncheck()
    box = page.locator("#rose_horizon input[type=number]")
    box.fill("16")
    box.press("Enter")
    page.locator("#rose_run").click()
    page.locator("#rose_status").get_by_text("forecast 16 steps").wait_for(timeout=180_000)
    assert "Seasonal naive" in page.locator("#rose_table").inner_text()
