"""Test helpers and fixtures: free ports, real servers, the app in-process or as a subprocess, Chromium."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Callable

import pytest

from workers.embedded import stop_process_group

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("PAPERLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# The suite (conftest) points this at its data directory: test-profile screenshots never replace the
# default-profile ones in docs/screenshots, which the shot_<id>.py scripts take.
SCREENSHOTS = Path(os.environ.get("PAPERLAB_SCREENSHOT_DIR") or ROOT / "docs" / "screenshots")


def measuring() -> bool:
    """True under ``make bench`` (benchmarks/timed_tests.py), which collects what :func:`record_measure` records."""
    return bool(os.environ.get("PAPERLAB_BENCH_MEASURES"))


def record_measure(name: str, value: float) -> None:
    """Record a time (or a ratio of times) the test measured, for ``make bench`` to report against its budget.

    Tests never assert times (a loaded machine fails them, not a bug): they check behaviour and record the
    measure; without ``PAPERLAB_BENCH_MEASURES`` (``make test``) this does nothing.
    """
    if measuring():
        with open(os.environ["PAPERLAB_BENCH_MEASURES"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "value": float(value)}) + "\n")


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require(ok: bool, what: str, opt_out: str = "PAPERLAB_SKIP_E2E") -> None:
    """Fail when a component the README promises is missing, unless the user opts out explicitly.

    ``PAPERLAB_SKIP_E2E=1`` (or the narrower ``PAPERLAB_SKIP_BROWSER=1`` for Chromium) turns the failure
    into a skip; the end of the run lists every skip with its reason.
    """
    if ok:
        return
    if os.environ.get(opt_out, "") == "1" or os.environ.get("PAPERLAB_SKIP_E2E", "") == "1":
        pytest.skip(f"{what} is not installed ({opt_out}=1)")
    pytest.fail(f"{what} is required for the end-to-end tests: install it (see README, 'System packages') "
                f"or set {opt_out}=1 to skip these tests")


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except Exception:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    stop_process_group(proc, timeout)


def spawn(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    return subprocess.Popen(args, cwd=ROOT, env=full, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def start_worker(env: dict, log: Path, queues: str = "cpu,gpu") -> subprocess.Popen:
    return spawn([sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "-Q", queues,
                  "--pool=prefork", "-c", "1", "--loglevel=INFO", "--without-gossip", "--without-mingle",
                  "-n", f"test-{os.getpid()}-{time.monotonic_ns()}@%h"], env, log)


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def redis_url():
    exe = shutil.which("redis-server")
    require(exe is not None, "redis-server")
    port = free_port()
    d = tempfile.mkdtemp(prefix="paperlab-redis-")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", d], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    t0 = time.monotonic()
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except Exception:
            if time.monotonic() - t0 > 10:
                raise
            time.sleep(0.05)
    yield url
    stop(proc)


@pytest.fixture
def inline_backend():
    from app import jobs
    from app.jobs import InlineBackend, set_backend

    prev = jobs._backend  # a session-scoped app may share the module-level backend: put it back
    b = InlineBackend()
    set_backend(b)
    yield b
    set_backend(prev)


def patient_url_ok(url: str) -> bool:
    """Gradio's launch check with a 30 s budget (its own gives up after 3 s: the config of 20 tabs
    takes longer than that to render on a loaded 2-core machine)."""
    import httpx

    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        try:
            if httpx.head(url, timeout=30).status_code in (200, 401, 302, 307):
                return True
        except Exception:
            time.sleep(0.5)
    return False


@pytest.fixture(scope="session")
def inline_app():
    """The whole app served in this process with jobs run inline: (url, demo)."""
    import gradio.networking

    gradio.networking.url_ok = patient_url_ok
    from app.jobs import InlineBackend, set_backend
    from app.ui import build_demo, launch_kwargs
    from engines.common.settings import get_settings

    set_backend(InlineBackend())
    s = get_settings().model_copy(update={"port": free_port()})
    demo = build_demo()
    demo.queue()
    demo.launch(prevent_thread_lock=True, quiet=True, **launch_kwargs(s))
    yield f"http://127.0.0.1:{s.port}/", demo
    demo.close()
    set_backend(None)


@pytest.fixture
def app_server(tmp_path):
    """Factory: start ``python -m app`` as a subprocess with extra env; returns (url, proc, start seconds)."""
    procs = []

    def start(env: dict | None = None, args: tuple[str, ...] = (), timeout: float = 60.0):
        port = free_port()
        full = {"PAPERLAB_PORT": str(port), "PAPERLAB_DATA_DIR": os.environ["PAPERLAB_DATA_DIR"],
                **(env or {})}
        t0 = time.monotonic()
        proc = spawn([sys.executable, "-m", "app", *args], full, tmp_path / f"app-{port}.log")
        procs.append(proc)
        url = f"http://127.0.0.1:{port}/"
        wait_http(url, timeout=timeout, proc=proc)
        return url, proc, time.monotonic() - t0

    yield start
    for p in procs:
        stop(p)


@pytest.fixture(scope="session")
def live_app(tmp_path_factory):
    """One ``python -m app`` subprocess with two embedded worker processes, shared by the browser tests: url.

    Every page load asks for each tab's worked example; they are computed one at a time, so with a second
    worker process a visitor's run never waits behind an example job (the tests wait for the visitor's run)."""
    log = tmp_path_factory.mktemp("live-app") / "app.log"
    port = free_port()
    proc = spawn([sys.executable, "-m", "app"], {"PAPERLAB_PORT": str(port), "PAPERLAB_EMBEDDED_CONCURRENCY": "2"},
                 log)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_http(url, proc=proc)
    except Exception:
        stop(proc)
        raise RuntimeError(f"the app did not start; log:\n{log.read_text()[-3000:]}") from None
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def _browser():
    require(Path(CHROMIUM).exists(), f"Chromium at {CHROMIUM}", "PAPERLAB_SKIP_BROWSER")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(_browser):
    """A fresh Chromium page (1400×1000) with a 60 s default timeout."""
    page = _browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    yield page
    page.close()


def open_tab(page, url: str, tab_label: str) -> None:
    """Open the app and switch to the tab whose label is ``tab_label``."""
    page.goto(url)
    page.wait_for_selector("#landing .pl-card")
    page.get_by_role("tab", name=tab_label).click()


def screenshot(page, method_id: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{method_id}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@contextmanager
def served_in_process():
    """``(url, browser)``: the app served in this process with inline jobs, and headless Chromium."""
    from playwright.sync_api import sync_playwright

    from app.jobs import InlineBackend, set_backend
    from app.ui import build_demo, launch_kwargs
    from engines.common.settings import get_settings

    set_backend(InlineBackend())
    s = get_settings().model_copy(update={"port": free_port()})
    demo = build_demo()
    demo.queue()
    # _frontend=False skips Gradio's localhost self-check, which times out on a heavily loaded machine.
    demo.launch(prevent_thread_lock=True, quiet=True, _frontend=False, **launch_kwargs(s))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                yield f"http://127.0.0.1:{s.port}/", browser
            finally:
                browser.close()
    finally:
        demo.close()


def shoot_default_profile(method_id: str, tab_label: str, act: Callable[[Any], None]) -> Path:
    """``docs/screenshots/<method_id>.png`` from the default profile, for the ``shot_<id>`` scripts.

    Serves the app in this process with inline jobs (the script sets ``PAPERLAB_PROFILE=default`` before it
    imports this module), opens the tab in headless Chromium, lets ``act(page)`` press buttons and wait for
    the result, then saves the full page.
    """
    with served_in_process() as (url, browser):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(900_000)
        open_tab(page, url, tab_label)
        act(page)
        page.wait_for_timeout(1500)
        return screenshot(page, method_id)
