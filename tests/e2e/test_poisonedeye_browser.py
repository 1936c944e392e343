"""Headless Chromium: the poisonedeye tab crafts a PE-S poison, shows retrieval before/after and removes it.

The suite's app runs the test profile (micro CLIP); the generator is switched to the rule reader so no LLM is
converted in the fresh data directory. The default-profile screenshot: ``python -m tests.e2e.shot_poisonedeye``.
"""
from __future__ import annotations

from tests.helpers import open_tab

LABEL = "Knowledge poisoning of multimodal RAG (PoisonedEye)"


def test_poisonedeye_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, LABEL)
    page.get_by_text("Retriever, generator and defences").click()
    page.get_by_label("rule-based reader (deterministic stand-in, NOT a language model)").check()
    page.locator("#poisonedeye_run").click()
    status = page.locator("#poisonedeye_status")
    # this run's summary, not the worked example's (which says so and may be on screen already)
    status.filter(has_text="index restored bit for bit").filter(has_not_text="Worked example").wait_for(
        timeout=180_000)
    text = status.inner_text()
    assert "Poison rank for the target query" in text and "restored bit for bit: True" in text
    assert page.locator("#poisonedeye_images img").count() == 3
    assert page.locator("#poisonedeye_before img").count() == 3 and page.locator("#poisonedeye_after img").count() == 3
    assert page.locator("#poisonedeye_trace img").get_attribute("src").startswith("data:image")
