"""Headless Chromium: the PDE surrogates tab's rollout and rotate-the-input demo on the embedded worker."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot


def test_pde_staggered_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, "PDE surrogates")
    page.locator("#pde_staggered_run").click()
    status = page.locator("#pde_staggered_status")
    status.get_by_text("Done in").wait_for(timeout=180_000)
    assert "Correlation time" in status.inner_text()
    assert page.locator("#pde_staggered_anim img").get_attribute("src")
    page.locator("#pde_staggered_frame img").wait_for(state="visible")
    page.locator("#pde_staggered_curves img").wait_for(state="visible")
    page.locator("#pde_staggered_rotate").click()
    rs = page.locator("#pde_staggered_rotate_status")
    rs.get_by_text("Done in").wait_for(timeout=180_000)
    page.locator("#pde_staggered_rotate_img img").wait_for(state="visible")
    screenshot(page, "pde_staggered")
