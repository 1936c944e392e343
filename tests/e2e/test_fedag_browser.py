"""Headless Chromium: the fedag tab previews the silos, runs a federation as a job and shows the attention of a
held-out test image (test profile: micro CLIP)."""
from __future__ import annotations

from tests.helpers import open_tab

LABEL = "Federated domain knowledge infusion (FedAG)"


def test_fedag_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, LABEL)
    page.locator("#fedag_preview").click()
    page.locator("#fedag_samples img").first.wait_for(state="visible", timeout=60_000)
    page.locator("#fedag_run").click()
    status = page.locator("#fedag_status")
    status.get_by_text("raw images sent: 0").wait_for(timeout=240_000)
    assert "FedAG out-of-domain" in status.inner_text()
    assert page.locator("#fedag_curves img").get_attribute("src").startswith("data:image")
    assert page.locator("#fedag_table").get_by_text("FedCLIP (one FedAvg adapter)").count() >= 1
    page.locator("#fedag_show").click()
    page.locator("#fedag_attention_text").get_by_text("held-out domain").wait_for(timeout=30_000)
    assert page.locator("#fedag_attention img").get_attribute("src").startswith("data:image")
