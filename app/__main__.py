"""``python -m app`` / ``paperlab``: the web UI plus, by default, an embedded worker.

    python -m app                  # UI + embedded worker (filesystem broker)
    python -m app --no-worker      # web only (workers run elsewhere)
    python -m app --inline         # jobs in the web process (development)
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time

T0 = time.perf_counter()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="paperlab", description="Paperlab web app")
    ap.add_argument("--host", help="bind address (PAPERLAB_HOST)")
    ap.add_argument("--port", type=int, help="port (PAPERLAB_PORT)")
    ap.add_argument("--no-worker", action="store_true", help="do not start the embedded worker")
    ap.add_argument("--inline", action="store_true", help="run jobs in the web process (no Celery)")
    args = ap.parse_args(argv)
    if args.inline:
        os.environ["PAPERLAB_INLINE_JOBS"] = "true"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    from engines.common.settings import get_settings, reset_settings

    reset_settings()
    s = get_settings()
    if args.host:
        s.host = args.host
    if args.port:
        s.port = args.port

    # SIGTERM (docker stop, test teardown) must run the finally below: a graceful shutdown.
    terminated = []

    def on_sigterm(*_):
        terminated.append(time.monotonic())
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_sigterm)
    worker = None
    if not s.inline_jobs and not args.no_worker and s.embedded_worker and not s.broker_url:
        from workers.embedded import EmbeddedWorker

        worker = EmbeddedWorker(s).start()
        logging.getLogger("paperlab").info("embedded worker started (pids %s, log %s)",
                                           [p.pid for p in worker.procs if p], worker.log_path)

    from .ui import build_demo, launch_kwargs

    demo = build_demo()
    demo.queue(default_concurrency_limit=8, max_size=s.queue_max_size)
    from .housekeeping import start as start_housekeeping

    start_housekeeping(s)
    try:
        demo.launch(prevent_thread_lock=True, **launch_kwargs(s))
        from .health import install

        install(demo)
        logging.getLogger("paperlab").info("serving on http://%s:%s after %.2f s", s.host, s.port,
                                           time.perf_counter() - T0)
        demo.block_thread()
    finally:
        graceful_shutdown(demo, worker, s)
        if terminated:  # everything is stopped: skip the interpreter's slow teardown (seconds on a busy host)
            logging.getLogger("paperlab").info("exit 0, %.1f s after SIGTERM", time.monotonic() - terminated[0])
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)


def graceful_shutdown(demo, worker, s) -> None:
    """Stop taking jobs, give running ones ``shutdown_grace_s`` to finish, cancel the rest (their users see
    "stopped: the server is shutting down"), close the web server and stop the embedded worker."""
    from .limits import TRACKER

    log = logging.getLogger("paperlab")
    TRACKER.stop_accepting()
    t0 = time.monotonic()
    if TRACKER.running():
        log.info("shutting down: %d job(s) running, waiting up to %.0f s", len(TRACKER.running()), s.shutdown_grace_s)
    while TRACKER.running() and time.monotonic() - t0 < s.shutdown_grace_s:
        time.sleep(0.2)
    n = TRACKER.cancel_all("the server is shutting down; run it again in a minute")
    t1 = time.monotonic()
    while TRACKER.running() and time.monotonic() - t1 < 3.0:  # let the handlers tell their users
        time.sleep(0.1)
    t2 = time.monotonic()
    stopper = None
    # The worker stops while the web server closes. Its jobs are cancelled by now, and an idle solo worker on
    # the filesystem transport needs ~6 s for a warm shutdown (2 s polls): SIGKILL after 2 s loses nothing.
    if worker is not None:
        import threading

        stopper = threading.Thread(target=worker.stop, kwargs={"timeout": 2.0}, name="stop-worker")
        stopper.start()
    try:
        demo.close()
    except Exception:  # pragma: no cover - closing a half-started server
        log.warning("closing the web server failed", exc_info=True)
    t3 = time.monotonic()
    if stopper is not None:
        stopper.join(10.0)
    log.info("shut down after %.1f s (%d job(s) cancelled; handlers %.1f s, web server %.1f s, worker %.1f s)",
             time.monotonic() - t0, n, t2 - t1, t3 - t2, time.monotonic() - t2)


if __name__ == "__main__":
    main()
