"""Take docs/screenshots/tailopt.png from the default profile (the suite itself runs the test profile).

``python -m tests.e2e.shot_tailopt``: starts ``python -m app`` with PAPERLAB_PROFILE=default, presses Run on
the tab's worked example in headless Chromium and saves the screenshot once the run has finished.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, free_port, open_tab, screenshot, spawn, stop, wait_http


def main() -> int:
    from playwright.sync_api import sync_playwright

    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="tailopt-shot-")) / "app.log"
    data = tempfile.mkdtemp(prefix="tailopt-shot-data-")  # a private embedded broker: no other worker takes the job
    proc = spawn([sys.executable, "-m", "app"], {"PAPERLAB_PORT": str(port), "PAPERLAB_PROFILE": "default",
                                                 "PAPERLAB_DATA_DIR": data}, log)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_http(url, timeout=600, proc=proc)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(600_000)
            open_tab(page, url, "Distributed optimisation under heavy-tailed noise")
            page.locator("#tailopt_run").click()
            try:
                page.locator("#tailopt_status").get_by_text("Noise tail index").wait_for()
            except Exception:
                page.screenshot(path=str(log.parent / "timeout.png"), full_page=True)
                print(f"timed out; see {log.parent}")
                raise
            page.wait_for_timeout(1500)
            print(screenshot(page, "tailopt"))
            browser.close()
    finally:
        stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
