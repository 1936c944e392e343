"""Headless Chromium: the fedag tab runs a federation as a job (1 round) and shows the attention of a held-out
test image (test profile: micro CLIP; the preview endpoint is covered by tests/app/test_fedag_api.py)."""
from __future__ import annotations

import re

from tests.helpers import open_tab

LABEL = "Federated domain knowledge infusion (FedAG)"


def test_fedag_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, LABEL)
    # 1 round and two in-domain silos (tint, noise; blur held out) keep the suite fast
    page.locator("#fedag_domains").get_by_label("rotated 15-35°").uncheck()
    box = page.locator("#fedag_rounds input[type=number]")
    box.fill("1")
    box.press("Enter")
    page.locator("#fedag_run").click()
    status = page.locator("#fedag_status")
    # the visitor's own run (the worked example's line starts with "Worked example")
    status.get_by_text(re.compile(r"^Held out")).wait_for(timeout=240_000)
    assert "FedAG out-of-domain" in status.inner_text() and "raw images sent: 0" in status.inner_text()
    assert page.locator("#fedag_curves img").get_attribute("src").startswith("data:image")
    assert page.locator("#fedag_table").get_by_text("FedCLIP (one FedAvg adapter)").count() >= 1
    page.locator("#fedag_show").click()
    page.locator("#fedag_attention_text").get_by_text("held-out domain").wait_for(timeout=30_000)
    assert page.locator("#fedag_attention img").get_attribute("src").startswith("data:image")
