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


def worker_command(s: Settings, queues: str = "cpu,gpu", pool: str = "prefork") -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker",
        "-Q", queues, f"--pool={pool}", "-c", str(s.embedded_concurrency),
        "--loglevel=INFO", "-n", f"embedded-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
    ]


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
        self.proc = subprocess.Popen(worker_command(self.settings), stdout=log, stderr=subprocess.STDOUT,
                                     env=env, cwd=root, start_new_session=True)
        atexit.register(self.stop)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
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

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def main() -> None:  # pragma: no cover - foreground convenience
    os.execv(sys.executable, worker_command(get_settings()))


if __name__ == "__main__":
    main()
