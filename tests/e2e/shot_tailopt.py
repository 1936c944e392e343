"""Take docs/screenshots/tailopt.png from the default profile (the suite itself runs the test profile).

``python -m tests.e2e.shot_tailopt``: serves the app in this process with PAPERLAB_PROFILE=default and
inline jobs, presses Run on the tab's worked example in headless Chromium and saves the screenshot once
the run has finished.
"""
from __future__ import annotations

import os
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="tailopt-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    page.locator("#tailopt_run").click()
    page.locator("#tailopt_status").get_by_text("Done in").wait_for()  # the run's line, not the worked example's
    page.locator("#tailopt_status").get_by_text("Noise tail index").wait_for()


if __name__ == "__main__":
    print(shoot_default_profile("tailopt", "Distributed optimisation under heavy-tailed noise", act))
