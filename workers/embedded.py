"""The embedded worker: one local Celery worker process started (and stopped) by the launcher.

With no broker configured it uses kombu's filesystem transport under the data
directory, so ``python -m app`` needs no server. ``python -m workers.embedded``
runs one in the foreground.
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
from pathlib import Path

from engines.common.settings import Settings, get_settings


def worker_args(s: Settings, queues: str = "cpu,gpu", pool: str = "prefork") -> list[str]:
    return [
        "worker", "-Q", queues, f"--pool={pool}", "-c", str(s.embedded_concurrency),
        "--loglevel=INFO", "-n", f"embedded-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
    ]


def worker_command(s: Settings, parent_pid: int | None = None) -> list[str]:
    """``python -m workers.embedded --parent PID``: a worker that exits when its parent is gone."""
    cmd = [sys.executable, "-m", "workers.embedded"]
    return cmd + (["--parent", str(parent_pid)] if parent_pid else [])



def stop_process_group(p: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM the process group led by ``p`` (started with ``start_new_session``), SIGKILL after ``timeout``."""
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

class EmbeddedWorker:
    def __init__(self, settings: Settings | None = None, log_path: Path | None = None):
        self.settings = settings or get_settings()
        self.log_path = log_path or Path(self.settings.data_dir) / "embedded-worker.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "EmbeddedWorker":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        root = Path(__file__).resolve().parent.parent
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(worker_command(self.settings, os.getpid()), stdout=log, stderr=subprocess.STDOUT,
                                     env=env, cwd=root, start_new_session=True)
        atexit.register(self.stop)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        p, self.proc = self.proc, None
        if p is not None:
            stop_process_group(p, timeout)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _watch_parent(parent_pid: int, grace_s: float = 15.0) -> None:
    """Stop this worker (warm shutdown, then hard exit) once the launching process has gone away."""
    import threading
    import time

    def watch() -> None:
        while True:
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                break
            if os.getppid() != parent_pid:
                break
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m workers.embedded", description="run the embedded worker")
    ap.add_argument("--parent", type=int, help="exit when this process id is gone (set by the launcher)")
    args = ap.parse_args(argv)
    if args.parent:
        _watch_parent(args.parent)
    from .celery_app import app

    app.worker_main(worker_args(get_settings()))


if __name__ == "__main__":
    main()
