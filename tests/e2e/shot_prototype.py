"""Take docs/screenshots/prototype.png from the default profile (MiniLM interface, released zoo).

``python -m tests.e2e.shot_prototype``: serves the app in this process with PAPERLAB_PROFILE=default and inline
jobs, applies three designer instructions to the chair (a relative amount, a multi-clause edit with a "keep"
constraint, a new component), then saves the screenshot with the 3D model, the edit history and the summary.
"""
from __future__ import annotations

import os
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="prototype-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402

STEPS = [("make the seat 10% wider", "seat.width"),
         ("make the backrest taller and a bit more reclined, keep the seat as is", "backrest.height"),
         ("add armrests", "armrests.present: off → on")]


def act(page) -> None:
    box = page.locator("#prototype_instruction textarea")
    summary = page.locator("#prototype_summary")
    for text, expect in STEPS:
        box.fill(text)
        page.locator("#prototype_apply").click()
        summary.get_by_text(expect).wait_for()
    page.locator("#prototype_model canvas").wait_for(state="visible")
    page.wait_for_timeout(2000)  # let the viewer draw


if __name__ == "__main__":
    print(shoot_default_profile("prototype", "Prompt-to-prototype", act))
