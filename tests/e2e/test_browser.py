"""Headless Chromium: the landing page, then the kl_bandits tab run end to end on the embedded worker."""
from __future__ import annotations

from tests.helpers import SCREENSHOTS, open_tab, screenshot


def test_landing_page(live_app, browser_page):
    page = browser_page
    page.goto(live_app)
    page.wait_for_selector("#landing .pl-card")
    assert page.locator(".pl-card").count() == 19
    assert page.locator("#card-kl_bandits .pl-available").count() == 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "landing.png"))


def test_kl_bandits_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "KL-regularised bandits")
    page.locator("#kl_bandits_run").click()
    plot = page.locator("#kl_bandits_regret_plot img")
    plot.wait_for(state="visible", timeout=90_000)
    assert plot.get_attribute("src").startswith("data:image")
    page.get_by_text("Done in").wait_for()
    screenshot(page, "kl_bandits")
