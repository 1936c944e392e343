"""Take docs/screenshots/moex.png from the default profile (the released MoE-X, dense, top-k and SAE models).

``python -m tests.e2e.shot_moex``: serves the app in this process with PAPERLAB_PROFILE=default and inline jobs,
opens the MoE-X tab and saves the screenshot once its worked example (a position of random game #0) is shown.
"""
from __future__ import annotations

import os
import re
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="moex-shot-data-"))

from tests.helpers import shoot_default_profile  # noqa: E402


def act(page) -> None:
    # case-sensitive: "Computing the worked example…" is not the result
    page.locator("#moex_status").get_by_text(re.compile("Worked example")).wait_for()
    page.locator("#moex_units").get_by_text("MoE-X").first.wait_for()


if __name__ == "__main__":
    print(shoot_default_profile("moex", "Intrinsically interpretable mixture of experts (MoE-X)", act))
