"""Take docs/screenshots/poisonedeye.png from the default profile (released tiny CLIP, SmolLM2).

``python -m tests.e2e.shot_poisonedeye``: serves the app in this process with PAPERLAB_PROFILE=default and inline
jobs, presses Craft & inject poison on the tab's default example in headless Chromium and saves the screenshot once
the job has finished. Uses the normal data directory (SmolLM2's converted weights are cached there).
"""
from __future__ import annotations

import os

os.environ["PAPERLAB_PROFILE"] = "default"

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    page.locator("#poisonedeye_run").click()
    status = page.locator("#poisonedeye_status")  # this run's summary, not the worked example's
    status.filter(has_text="index restored bit for bit").filter(has_not_text="Worked example").wait_for()


if __name__ == "__main__":
    print(shoot_default_profile("poisonedeye", "Knowledge poisoning of multimodal RAG (PoisonedEye)", act))
