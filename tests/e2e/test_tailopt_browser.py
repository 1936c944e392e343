"""Headless Chromium: the TailOPT tab's worked example (defaults) end to end, with a screenshot."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_tailopt_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Distributed optimisation under heavy-tailed noise")
    page.locator("#tailopt_run").click()
    plot = page.locator("#tailopt_loss_plot img")
    plot.wait_for(state="visible", timeout=240_000)
    assert plot.get_attribute("src").startswith("data:image")
    page.get_by_text("Noise tail index").wait_for(timeout=120_000)
    assert page.get_by_text("tuned on a validation seed").count() >= 1
    screenshot(page, "tailopt")
