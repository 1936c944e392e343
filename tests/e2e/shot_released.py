"""Take docs/screenshots/<id>.png of the tabs whose models ship in the release (saeuron, object_audio,
pde_staggered by default; any tab by id, e.g. l2d) from the default profile.

``python -m tests.e2e.shot_released [ID ...]``: serves the app in this process with PAPERLAB_PROFILE=default and
inline jobs, in a fresh data directory (the models install from ``release/``, nothing trains), opens each tab on
its worked example and saves the full page once the example's status line and the result panels the
first-impressions check expects are there.
"""
from __future__ import annotations

import os
import sys
import tempfile

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_DATA_DIR", tempfile.mkdtemp(prefix="released-shot-data-"))

from engines.registry import available  # noqa: E402
from tests.e2e.test_first_impressions import EXPECT, RELEASED_EXAMPLE  # noqa: E402
from tests.helpers import shoot_default_profile  # noqa: E402

IDS = ["saeuron", "object_audio", "pde_staggered"]


def waiter(method_id: str):
    def act(page) -> None:
        if method_id not in RELEASED_EXAMPLE:  # those read their example at start-up: no status line
            page.locator(f"#{method_id}_status").get_by_text("Worked example").first.wait_for()
        for sel in EXPECT[method_id]:
            if not sel.endswith(" audio"):  # a loaded sound shows as a waveform; the images come with it
                page.locator(sel).first.wait_for(state="visible")
    return act


if __name__ == "__main__":
    titles = {m.id: m.title for m in available()}
    for mid in sys.argv[1:] or IDS:
        print(shoot_default_profile(mid, titles[mid], waiter(mid)), flush=True)
    # as in shot_first_impressions: another tab's worked example may still be computing inside torch in a daemon
    # thread, and finalising the interpreter under it aborts (exit 134) after the screenshots are written
    os._exit(0)
