"""Headless Chromium: the MoE-X tab opens on the worked example (board + units), then runs a position job and a search."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot

LABEL = "Intrinsically interpretable mixture of experts (MoE-X)"


def test_moex_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, LABEL)
    page.locator("#moex_board svg").first.wait_for(state="visible")
    screenshot(page, "moex")
    box = page.locator("#moex_position input[type=number]")
    box.fill("3")
    box.press("Enter")
    page.locator("#moex_run").click()
    page.locator("#moex_status").get_by_text("position 3 of").wait_for(timeout=180_000)
    assert "MoE-X" in page.locator("#moex_units").inner_text()
    page.locator("#moex_feature textarea, #moex_feature input").first.fill("castle kingside")
    page.locator("#moex_search").click()
    page.locator("#moex_search_status").get_by_text("board feature(s) match").wait_for(timeout=180_000)
    assert "white can castle kingside" in page.locator("#moex_search_table").inner_text()
