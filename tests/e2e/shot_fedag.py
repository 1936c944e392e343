"""Take docs/screenshots/fedag.png from the default profile (released tiny CLIP).

``python -m tests.e2e.shot_fedag``: serves the app in this process with PAPERLAB_PROFILE=default and inline jobs,
waits for the tab's worked example (the default federation: 4 digit domains, blur held out, 10 rounds, FedAG and
the three baselines), shows the attention of a held-out test image and saves the screenshot.
"""
from __future__ import annotations

import os

os.environ["PAPERLAB_PROFILE"] = "default"

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    status = page.locator("#fedag_status")
    status.filter(has_text="Worked example").filter(has_text="raw images sent").wait_for()
    page.locator("#fedag_show").click()
    page.locator("#fedag_attention_text").get_by_text("held-out domain").wait_for()


if __name__ == "__main__":
    print(shoot_default_profile("fedag", "Federated domain knowledge infusion (FedAG)", act))
