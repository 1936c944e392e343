"""What a visitor sees on arrival, from the default profile with the released models (issue 28).

``python -m tests.e2e.shot_first_impressions [ID ...]``: serves the app in this process with PAPERLAB_PROFILE=default and
inline jobs, runs the first-impressions browser check (every tab opens on its worked example, nothing overflows at
1280 px and on a 390 px phone, no console error) and saves ``docs/screenshots/first/first_<id>_<width>.png``.
The first run computes every tab's example once (tens of minutes on 2 cores); later runs read them from the cache.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["PAPERLAB_PROFILE"] = "default"
os.environ.setdefault("PAPERLAB_SCREENSHOT_DIR",
                      str(Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "first"))

from tests.e2e import test_first_impressions as check  # noqa: E402
from tests.helpers import served_in_process  # noqa: E402


def main() -> int:
    check.EXAMPLE_TIMEOUT_MS = 1_800_000  # a cold default-profile example may wait behind a long one
    check.ONLY = set(sys.argv[1:])  # method ids: retake only those tabs (default: every tab)
    with served_in_process() as (url, browser):
        report, errors = check.visit_every_tab(url, browser)
    real = [e for e in errors if not check.NOISE.search(e)]
    print("console errors:", real or "none")
    print("overflow:", {w: r for w, r in report.items() if r} or "none")
    print("screenshots in", check.SCREENSHOTS)
    return 1 if real or any(report.values()) else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # A worked example of a tab not asked for may still be computing in the app's daemon runner thread (inside
    # torch); interpreter finalisation under it aborts the process ("terminate called without an active
    # exception", exit 134) after the work is done. The screenshots are written: leave without finalising.
    os._exit(code)
