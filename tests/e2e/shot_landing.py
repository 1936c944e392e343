"""Take docs/screenshots/landing.png from the default profile (release models, claim badges, zoo section).

``python -m tests.e2e.shot_landing``: serves the app in this process with PAPERLAB_PROFILE=default and saves
the landing page once its 19 cards and the zoo section are there.
"""
from __future__ import annotations

import os
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="landing-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    page.wait_for_selector("#landing .pl-card")
    assert page.locator(".pl-card").count() == 19


if __name__ == "__main__":
    print(shoot_default_profile("landing", "Papers", act))
