"""Headless Chromium: the cl_angles tab's live run (default θ = 150°) on the embedded worker."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_cl_angles_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "Forgetting vs task angle")
    page.locator("#cl_angles_run").click()
    status = page.locator("#cl_angles_status")
    # the visitor's run ("Done in"); the plots are already there from the worked example, so wait for the run
    # first (it may queue behind an example job on the one embedded worker)
    status.get_by_text("Done in").wait_for(timeout=180_000)
    curves = page.locator("#cl_angles_curves img")
    curves.wait_for(state="visible")
    assert curves.get_attribute("src").startswith("data:image")
    page.locator("#cl_angles_neurons img").wait_for(state="visible")
    assert "harmful for CL" in status.inner_text()
    screenshot(page, "cl_angles")
