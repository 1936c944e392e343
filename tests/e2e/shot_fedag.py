"""Take docs/screenshots/fedag.png from the default profile (released tiny CLIP).

``python -m tests.e2e.shot_fedag``: serves the app in this process with PAPERLAB_PROFILE=default and inline jobs,
waits for the tab's worked example (the default federation: 4 digit domains, blur held out, 10 rounds, FedAG and
the three baselines), shows the attention of a held-out test image and saves the screenshot.
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
            open_tab(page, f"http://127.0.0.1:{s.port}/", "Federated domain knowledge infusion (FedAG)")
            status = page.locator("#fedag_status")
            status.filter(has_text="Worked example").filter(has_text="raw images sent").wait_for()
            page.locator("#fedag_show").click()
            page.locator("#fedag_attention_text").get_by_text("held-out domain").wait_for()
            page.wait_for_timeout(1500)
            print(screenshot(page, "fedag"))
            browser.close()
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
