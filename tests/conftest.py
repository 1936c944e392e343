"""Shared fixtures: a throwaway data directory, the test profile, job backends, servers, a browser."""
from __future__ import annotations

import os
import tempfile

# Before anything imports the settings: micro models, a private data directory.
os.environ["PAPERLAB_PROFILE"] = "test"
if "PAPERLAB_DATA_DIR" not in os.environ:
    os.environ["PAPERLAB_DATA_DIR"] = tempfile.mkdtemp(prefix="paperlab-test-")
    os.environ["PAPERLAB_TEST_OWN_DATA_DIR"] = "1"
elif os.environ.get("PAPERLAB_TEST_OWN_DATA_DIR") == "1" and os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs two pytest-xdist workers; each inherits the controller's throwaway directory and takes
    # its own instead, so two workers never build the same model cache at once.
    os.environ["PAPERLAB_DATA_DIR"] = tempfile.mkdtemp(prefix=f"paperlab-test-{os.environ['PYTEST_XDIST_WORKER']}-")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# Test workers keep the normal CPU priority (timing and CPU-use checks on a shared machine).
os.environ.setdefault("PAPERLAB_WORKER_NICE", "0")
os.environ.setdefault("PAPERLAB_SCREENSHOT_DIR", os.path.join(os.environ["PAPERLAB_DATA_DIR"], "screenshots"))

import pytest  # noqa: E402

from tests.helpers import (  # noqa: E402,F401  (fixtures re-exported)
    app_server,
    browser_page,
    inline_app,
    inline_backend,
    live_app,
    _browser,
    redis_url,
)


def is_browser_test(nodeid: str) -> bool:
    """The tests that share the session's served app and Chromium: tests/e2e except the job round trips."""
    return nodeid.startswith("tests/e2e/") and not nodeid.startswith("tests/e2e/test_jobs_e2e.py")


class BrowserTestsOnOneWorker:
    """`make test` runs two pytest-xdist workers (``-n 2 --dist loadgroup``). The browser tests form one work unit,
    so one worker starts the served app (with its two embedded job workers) and Chromium once and runs them all —
    mostly waiting on the app — while the other worker takes the CPU-bound tests one at a time.

    The grouping is by node id in the controller: xdist 3.8's own ``xdist_group`` marker renames items through
    ``item._nodeid``, which pytest 9.2's ``Item.nodeid`` no longer reads, so the marker grouped nothing."""

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config, log):
        if config.getvalue("dist") != "loadgroup":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class Scheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return "browser" if is_browser_test(nodeid) else nodeid

        return Scheduling(config, log)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(BrowserTestsOnOneWorker())
    # Registered here, not in pyproject.toml (an edit there makes `make` reinstall the package).
    config.addinivalue_line("markers", "cancel_full: per-entry cancellation of entries slow to start (make cancel; "
                                       "deselected from make test unless PAPERLAB_CANCEL_TESTS=1)")
    config.addinivalue_line("markers", "flower_extra: the specs' optional Flower engine-parity checks (a Ray start-up "
                                       "each: 11-21 s idle, ~1 min busy; make flower; deselected from make test unless "
                                       "PAPERLAB_FLOWER_TESTS=1; make reproduce measures the same parity)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
    # Slower fault-injection tests run in `make faults` (docs/reliability.md), not in `make test`.
    if os.environ.get("PAPERLAB_FAULT_TESTS", "") != "1":
        faults = [item for item in items if item.get_closest_marker("fault")]
        if faults:
            config.hook.pytest_deselected(items=faults)
            items[:] = [item for item in items if not item.get_closest_marker("fault")]
    # Per-entry cancellation of the entries that are slow to start runs in `make cancel`, the Flower parity checks
    # in `make flower`.
    for marker, opt_in in (("cancel_full", "PAPERLAB_CANCEL_TESTS"), ("flower_extra", "PAPERLAB_FLOWER_TESTS")):
        if os.environ.get(opt_in, "") != "1":
            slow = [item for item in items if item.get_closest_marker(marker)]
            if slow:
                config.hook.pytest_deselected(items=slow)
                items[:] = [item for item in items if not item.get_closest_marker(marker)]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line at the end: what was skipped and why (a silent skip hides a missing component)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        terminalreporter.write_line("paperlab: nothing skipped")
        return
    reasons: dict[str, int] = {}
    for rep in skipped:
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.write_line("paperlab: skipped " + "; ".join(f"{n} × {r}" for r, n in reasons.items()))
