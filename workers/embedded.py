"""The embedded worker: local Celery worker processes started, supervised and stopped by the launcher.

With no broker configured it uses kombu's filesystem transport under the data
directory, so ``python -m app`` needs no server. ``python -m workers.embedded``
runs one in the foreground.

Supervision (docs/reliability.md): each worker process runs Celery's ``solo`` pool — the
process *is* the executor, so there is no pool child whose death (an out-of-memory kill) could
leave a parent waiting on a semaphore — and a supervisor thread in the launcher restarts a
process that died, with exponential backoff (1 s, 2 s, … 30 s; reset after a minute of uptime)
and a log line. ``embedded_concurrency`` processes are started. A job whose process died is
reported by the lost-worker check (workers/client.py). Trade-off of ``solo``: Celery's time
limits are not enforced in-process (entries check ``ctx.cancelled()``; the hard limit is
enforced by the lost check when the process stops answering).
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from engines.common.settings import Settings, get_settings


log = logging.getLogger("paperlab.worker")

#: The supervisor of this process's embedded workers (set by ``EmbeddedWorker.start``), for health reports.
CURRENT: "EmbeddedWorker | None" = None


def worker_args(s: Settings, queues: str = "cpu,gpu", pool: str = "solo") -> list[str]:
    conc = ["-c", "1"] if pool == "solo" else ["-c", str(s.embedded_concurrency)]
    return [
        "worker", "-Q", queues, f"--pool={pool}", *conc,
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
    """``embedded_concurrency`` supervised solo-pool worker processes."""

    BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
    STABLE_S = 60.0  # uptime after which the backoff starts over

    def __init__(self, settings: Settings | None = None, log_path: Path | None = None, supervise: bool = True):
        self.settings = settings or get_settings()
        self.log_path = log_path or Path(self.settings.data_dir) / "embedded-worker.log"
        self.procs: list[subprocess.Popen | None] = [None] * self.settings.embedded_concurrency
        self.started_at: list[float] = [0.0] * len(self.procs)
        self.failures: list[int] = [0] * len(self.procs)
        self.restarts = 0
        self.last_exit: str | None = None
        self.supervise = supervise
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def proc(self) -> subprocess.Popen | None:
        """The first worker process (compatibility with one-process callers)."""
        return self.procs[0] if self.procs else None

    def _spawn(self, i: int) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log_path, "ab")
        root = Path(__file__).resolve().parent.parent
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
                   PAPERLAB_EMBEDDED_INDEX=str(i))
        self.procs[i] = subprocess.Popen(worker_command(self.settings, os.getpid()), stdout=out,
                                         stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
        out.close()
        self.started_at[i] = time.monotonic()

    def start(self) -> "EmbeddedWorker":
        global CURRENT
        with self._lock:
            for i in range(len(self.procs)):
                self._spawn(i)
        atexit.register(self.stop)
        if self.supervise:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="embedded-worker-supervisor")
            self._thread.start()
        CURRENT = self
        return self

    def _watch(self) -> None:
        due: dict[int, float] = {}
        while not self._stopping.wait(0.5):
            with self._lock:
                for i, p in enumerate(self.procs):
                    if self._stopping.is_set() or p is None:
                        continue
                    code = p.poll()
                    if code is None:
                        if time.monotonic() - self.started_at[i] > self.STABLE_S:
                            self.failures[i] = 0
                        continue
                    if i not in due:
                        delay = self.BACKOFF_S[min(self.failures[i], len(self.BACKOFF_S) - 1)]
                        self.last_exit = f"worker {i} (pid {p.pid}) exited with code {code}"
                        log.warning("embedded %s; restarting in %.1f s", self.last_exit, delay)
                        due[i] = time.monotonic() + delay
                    elif time.monotonic() >= due[i]:
                        del due[i]
                        self.failures[i] += 1
                        self.restarts += 1
                        self._spawn(i)
                        log.warning("embedded worker %s restarted (pid %s, restart %s)", i, self.procs[i].pid,
                                    self.restarts)

    def stop(self, timeout: float = 10.0) -> None:
        global CURRENT
        self._stopping.set()
        with self._lock:
            procs, self.procs = self.procs, [None] * len(self.procs)
        for p in procs:
            if p is not None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        for p in procs:
            if p is not None:
                stop_process_group(p, timeout)
        if CURRENT is self:
            CURRENT = None

    @property
    def alive(self) -> bool:
        return any(p is not None and p.poll() is None for p in self.procs)

    def health(self) -> dict:
        procs = [{"pid": p.pid, "alive": p.poll() is None} if p is not None else None for p in self.procs]
        up = sum(1 for p in procs if p and p["alive"])
        return {"kind": "embedded", "processes": len(procs), "alive": up, "restarts": self.restarts,
                "last_exit": self.last_exit, "ok": up == len(procs) and not self._stopping.is_set()}


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
