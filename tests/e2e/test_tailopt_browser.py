"""Headless Chromium: the TailOPT tab's worked example (defaults) end to end, with a screenshot.

Under the test profile the run is shortened to 20 rounds and no screenshot is written; the committed
screenshot comes from the default profile: ``python -m tests.e2e.shot_tailopt``.
"""
from __future__ import annotations

from engines.common.settings import get_settings
from tests.helpers import open_tab


def test_tailopt_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Distributed optimisation under heavy-tailed noise")
    test_profile = get_settings().profile == "test"
    if test_profile:
        box = page.locator("#tailopt_rounds input[type=number]")
        box.fill("20")
        box.press("Enter")
    page.locator("#tailopt_run").click()
    page.locator("#tailopt_status").get_by_text("Done in").wait_for(timeout=300_000)  # the visitor's run
    plot = page.locator("#tailopt_loss_plot img")
    plot.wait_for(state="visible")
    assert plot.get_attribute("src").startswith("data:image")
    page.get_by_text("Noise tail index").wait_for(timeout=180_000)
    assert page.get_by_text("tuned on a validation seed").count() >= 1
