"""Headless Chromium: the subset-selection tab's default run (real video clip) end to end."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_multinoulli_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Subset selection with the Multinoulli Extension")
    page.locator("#multinoulli_run").click()
    page.get_by_text("Done in").wait_for(timeout=180_000)  # the visitor's run (the worked example says "Computed in")
    plot = page.locator("#multinoulli_value_plot img")
    plot.wait_for(state="visible")
    assert plot.get_attribute("src").startswith("data:image")
    assert page.get_by_text("Multinoulli-SCG used neither").count() >= 1
    screenshot(page, "multinoulli")
