"""Headless Chromium: open the object-click audio tab, click an object in the scene, get its mask and audio."""
from __future__ import annotations

from tests.helpers import open_tab, screenshot

LABEL = "Object-click audio"


def test_object_audio_tab(live_app, browser_page):
    page = browser_page
    open_tab(page, live_app, LABEL)
    img = page.locator("#object_audio_image img")
    img.wait_for(state="visible")
    # the first gallery scene (seed 3): click the centre of its first sounding object
    from engines.object_audio import scenes

    sc = scenes.make_scenes(1, seed=3, min_objects=2, max_objects=3, p_silent=0.3)
    j = next(k for k, name in enumerate(sc.kinds[0]) if not name.startswith("silent"))
    from scipy import ndimage
    import numpy as np

    # the pixel deepest inside the object (distance transform), in image coordinates
    y, x = np.unravel_index(np.argmax(ndimage.distance_transform_edt(sc.masks[0][j])), (64, 64))
    x, y = x + 0.5, y + 0.5
    box = img.bounding_box()  # the picture is drawn centred in the element (object-fit: contain)
    side = min(box["width"], box["height"])
    ox, oy = box["x"] + (box["width"] - side) / 2, box["y"] + (box["height"] - side) / 2
    page.mouse.click(ox + side * x / 64, oy + side * y / 64)
    page.locator("#object_audio_overlay img").wait_for(state="visible", timeout=300_000)
    status = page.locator("#object_audio_status")
    # the visitor's click, not the worked example's line (which also reports a Click-to-audio time)
    status.filter(has_text="Click-to-audio").filter(has_not_text="Worked example").wait_for(timeout=300_000)
    assert f"clicked object: {sc.kinds[0][j]}" in status.inner_text()
    assert page.locator("#object_audio_clicks textarea").input_value().endswith(",1")
    page.locator("#object_audio_figure img").wait_for(state="visible")
    screenshot(page, "object_audio")
