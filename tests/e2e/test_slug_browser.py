"""Headless Chromium: the slug tab forgets the digit "two" on the micro CLIP (embedded worker)."""
from __future__ import annotations

from tests.helpers import screenshot

LABEL = "Single-layer unlearning (SLUG)"


def _open(page, url: str) -> None:
    """open_tab, also when the tab sits in Gradio's "More tabs" overflow menu (many methods available)."""
    page.goto(url)
    page.wait_for_selector("#landing .pl-card")
    tab = page.get_by_role("tab", name=LABEL)
    if tab.count():
        tab.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=LABEL).click()


def test_slug_tab(live_app, browser_page):
    page = browser_page
    _open(page, live_app)
    target = page.locator("#slug_target input")
    target.click()
    page.get_by_role("option", name="two", exact=True).click()
    page.get_by_label("highest-importance layer + same step search").check()
    page.locator("#slug_run").click()
    status = page.locator("#slug_status")
    # "Done in" is the visitor's own run ("Layers touched" is also in the worked example's line).
    status.get_by_text("Done in").wait_for(timeout=180_000)
    assert "Layers touched: 1" in status.inner_text()
    for el in ("scatter", "trace", "bars", "cost"):
        img = page.locator(f"#slug_{el} img")
        img.wait_for(state="visible")
        assert img.get_attribute("src").startswith("data:image")
    assert "revert bit-exact: True" in status.inner_text()
    assert "importance-only layer" in page.locator("#slug_table").inner_text()
    screenshot(page, "slug")
