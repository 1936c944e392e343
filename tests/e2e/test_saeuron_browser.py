"""Headless Chromium: the SAeUron tab — train the SAE and statistics, then erase a style (micro sizes)."""
from __future__ import annotations

from tests.helpers import screenshot

TAB = "Concept erasure with sparse autoencoders (SAeUron)"


def open_tab_any(page, url: str, label: str) -> None:
    """Like tests.helpers.open_tab, but also through Gradio's "More tabs" menu when the tab bar overflows."""
    page.goto(url)
    page.wait_for_selector("#landing .pl-card")
    tab = page.get_by_role("tab", name=label)
    if tab.count():
        tab.click()
        return
    page.get_by_role("button", name="More tabs").click()
    page.locator(".overflow-dropdown button", has_text=label).click()


def test_saeuron_tab(live_app, browser_page):
    page = browser_page
    open_tab_any(page, live_app, TAB)
    page.locator("#saeuron_build").click()
    page.locator("#saeuron_build_md").get_by_text("FVU").first.wait_for(timeout=180_000)
    box = page.locator("#saeuron_concepts input")
    box.click()
    box.fill("star")
    page.get_by_role("option", name="star (object)").click()
    page.get_by_text("Erase 'star'").wait_for()  # a second row of sliders appears
    page.locator("#saeuron_erase").click()
    page.locator("#saeuron_status").get_by_text("Done in").wait_for(timeout=180_000)  # the first job loads the models
    page.locator("#saeuron_grid img").wait_for(state="visible")
    page.locator("#saeuron_judges img").wait_for(state="visible")
    status = page.locator("#saeuron_status").inner_text()
    assert "P(striped)" in status and "P(star)" in status
    screenshot(page, "saeuron")
