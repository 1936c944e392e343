"""Headless Chromium: the SyncMind tab opens on its worked example and runs an episode as a job."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_syncmind_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Out-of-sync recovery of coding agents (SyncMind)")
    verdict = page.locator("#syncmind_verdict")
    verdict.get_by_text("Recovered").wait_for()  # the worked example
    page.locator("#syncmind_log").get_by_text("ask").first.wait_for()
    page.wait_for_timeout(1000)  # let the plots draw
    screenshot(page, "syncmind")
    page.get_by_role("radio", name="Gold replay (upper bound)").check()
    page.get_by_label("independent").first.check()
    page.locator("#syncmind_run").click()
    verdict.get_by_text("in 1 turns").wait_for(timeout=180_000)
    assert "LA_func ✓" in verdict.inner_text()
