"""Take docs/screenshots/dpsdp.png from the default profile with the released DPSDP models.

``python -m tests.e2e.shot_dpsdp``: serves the app in this process with PAPERLAB_PROFILE=default and inline jobs,
opens the tab on its worked example (the released transcript of 47+58-26) and saves the screenshot once the
transcript and the vote plot are there.
"""
from __future__ import annotations

import os
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="dpsdp-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    page.locator("#dpsdp_votes img").wait_for(state="visible")
    page.locator("#dpsdp_transcript").get_by_text("running majority").first.wait_for()


if __name__ == "__main__":
    print(shoot_default_profile("dpsdp", "Multi-agent reflection (DPSDP)", act))
