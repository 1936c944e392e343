"""Take docs/screenshots/rose.png from the default profile with the released ROSE model (v2).

``python -m tests.e2e.shot_rose``: serves the app in this process with PAPERLAB_PROFILE=default and inline jobs,
opens the tab on its worked example (airline, zero-shot and few-shot with the shipped weights beside the
statistical baselines) and saves the screenshot once the forecast plot, register plot and table are there.
"""
from __future__ import annotations

import os
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="rose-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    page.locator("#rose_plot img").wait_for(state="visible")
    page.locator("#rose_register img").wait_for(state="visible")
    page.locator("#rose_table").get_by_text("ROSE zero-shot").first.wait_for()


if __name__ == "__main__":
    print(shoot_default_profile("rose", "General time-series forecasting (ROSE)", act))
