"""Headless Chromium: open the object-click audio tab, click an object in the scene, get its mask and audio."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot

LABEL = "Object-click audio"


def _open(page, url: str) -> None:
    """``open_tab``, or through Gradio's "More tabs" overflow menu when the tab bar is full."""
    page.goto(url)
    page.wait_for_selector("#landing .pl-card")
    if page.get_by_role("tab", name=LABEL).count():
        open_tab(page, url, LABEL)
        return
    page.get_by_label("More tabs").click()
    page.locator(".overflow-dropdown button", has_text=LABEL).click()


def test_object_audio_tab(live_app, browser_page):
    page = browser_page
    _open(page, live_app)
    img = page.locator("#object_audio_image img")
    img.wait_for(state="visible")
    # the first gallery scene (seed 3): click the centre of its first sounding object
    from engines.object_audio import scenes

    sc = scenes.make_scenes(1, seed=3, min_objects=2, max_objects=3, p_silent=0.3)
    j = next(k for k, name in enumerate(sc.kinds[0]) if not name.startswith("silent"))
    from scipy import ndimage
    import numpy as np

    ys, xs = np.nonzero(ndimage.binary_erosion(sc.masks[0][j]))
    x, y = xs[len(xs) // 2] + 0.5, ys[len(ys) // 2] + 0.5
    box = img.bounding_box()
    page.mouse.click(box["x"] + box["width"] * x / 64, box["y"] + box["height"] * y / 64)
    page.locator("#object_audio_overlay img").wait_for(state="visible", timeout=300_000)
    status = page.locator("#object_audio_status")
    status.get_by_text("Click-to-audio").wait_for(timeout=300_000)
    assert f"clicked object: {sc.kinds[0][j]}" in status.inner_text()
    assert page.locator("#object_audio_clicks textarea").input_value().endswith(",1")
    page.locator("#object_audio_figure img").wait_for(state="visible")
    screenshot(page, "object_audio")
