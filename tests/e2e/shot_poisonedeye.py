"""Take docs/screenshots/poisonedeye.png from the default profile (released tiny CLIP, SmolLM2).

``python -m tests.e2e.shot_poisonedeye``: serves the app in this process with PAPERLAB_PROFILE=default and inline
jobs, presses Craft & inject poison on the tab's default example in headless Chromium and saves the screenshot once
the job has finished. Uses the normal data directory (SmolLM2's converted weights are cached there).
"""
from __future__ import annotations

import os
import sys

os.environ["PAPERLAB_PROFILE"] = "default"

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, free_port, open_tab, screenshot  # noqa: E402


def main() -> int:
    from playwright.sync_api import sync_playwright

    from app.jobs import InlineBackend, set_backend
    from app.ui import build_demo, launch_kwargs
    from engines.common.settings import get_settings

    set_backend(InlineBackend())
    s = get_settings().model_copy(update={"port": free_port()})
    demo = build_demo()
    demo.queue()
    demo.launch(prevent_thread_lock=True, quiet=True, _frontend=False, **launch_kwargs(s))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(900_000)
            open_tab(page, f"http://127.0.0.1:{s.port}/", "Knowledge poisoning of multimodal RAG (PoisonedEye)")
            page.locator("#poisonedeye_run").click()
            status = page.locator("#poisonedeye_status")  # this run's summary, not the worked example's
            status.filter(has_text="index restored bit for bit").filter(has_not_text="Worked example").wait_for()
            page.wait_for_timeout(1500)
            print(screenshot(page, "poisonedeye"))
            browser.close()
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
