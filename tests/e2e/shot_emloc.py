"""Take docs/screenshots/emloc.png from the default profile with the released EMLoC model.

``python -m tests.e2e.shot_emloc``: serves the app in this process with PAPERLAB_PROFILE=default and inline jobs,
opens the tab on its worked example (128 demonstrations compressed by the shipped model) and saves the screenshot.
"""
from __future__ import annotations

import os
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="emloc-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    page.locator("#emloc_status").get_by_text("EMLoC keeps").first.wait_for()
    for plot in ("#emloc_memory", "#emloc_compare", "#emloc_trace"):  # an empty plot shows an svg icon: wait for img
        page.locator(plot).locator("img").first.wait_for(state="visible")


if __name__ == "__main__":
    print(shoot_default_profile("emloc", "Multimodal long-context compression (EMLoC)", act))
