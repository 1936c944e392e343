"""Headless Chromium: the l2d tab solves the worked example; the step-0 check equals the base answer.

With the released models in the repository the app runs in the default profile (the screenshot shows the
released models); otherwise the shared test-profile app with its micro models.
"""
from __future__ import annotations

from tests.helpers import open_tab, screenshot

LABEL = "LLMs to diffusion finetuning (L2D)"


def test_l2d_tab(request, browser_page):
    from engines.common import release

    if release.artifacts("l2d"):  # the released models, as a fresh clone shows them
        url, _, _ = request.getfixturevalue("app_server")({"PAPERLAB_PROFILE": "default"})
    else:
        url = request.getfixturevalue("live_app")
    page = browser_page
    open_tab(page, url, LABEL)
    page.locator("#l2d_solve").click()
    status = page.locator("#l2d_status")
    status.get_by_text("Done:").wait_for(timeout=180_000)
    answer = page.locator("#l2d_answer").inner_text()
    assert "Step-0 check" in answer and "which equals the base model" in answer
    page.locator("#l2d_trajectory img").wait_for(state="visible")
    assert page.locator("#l2d_table").get_by_text("base LM").count() >= 1
    screenshot(page, "l2d")
