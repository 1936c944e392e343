"""Headless Chromium: the landing page, then the kl_bandits tab run end to end on the embedded worker."""
from __future__ import annotations

from tests.helpers import SCREENSHOTS


def test_landing_and_kl_bandits_tab(app_server, browser_page, tmp_path):
    url, _, start_s = app_server({"PAPERLAB_DATA_DIR": str(tmp_path / "data")})  # embedded worker
    page = browser_page
    page.goto(url)
    page.wait_for_selector("#landing .pl-card")
    assert page.locator(".pl-card").count() == 19
    assert page.locator("#card-kl_bandits .pl-available").count() == 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "landing.png"))

    page.get_by_role("tab", name="KL-regularised bandits").click()
    page.locator("#kl_bandits_run").click()
    plot = page.locator("#kl_bandits_regret_plot img")
    plot.wait_for(state="visible", timeout=90_000)
    assert plot.get_attribute("src").startswith("data:image")
    page.get_by_text("Done in").wait_for()
    page.screenshot(path=str(SCREENSHOTS / "kl_bandits.png"), full_page=True)
