"""Fixtures of the reliability tests: a supervised embedded worker on a private filesystem broker."""
from __future__ import annotations

import time

import pytest

from engines.common.settings import get_settings
from workers.celery_app import make_celery


@pytest.fixture
def embedded(tmp_path, monkeypatch):
    """(celery app, EmbeddedWorker): one solo-pool worker process on a throwaway data directory."""
    from workers.embedded import EmbeddedWorker

    data = tmp_path / "data"
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(data))
    monkeypatch.setenv("PAPERLAB_BROKER_URL", "")
    monkeypatch.setenv("PAPERLAB_JOB_STALE_AFTER_S", "4")
    s = get_settings().model_copy(update={"data_dir": data, "broker_url": "", "job_stale_after_s": 4.0,
                                          "job_queue_timeout_s": 60.0, "embedded_concurrency": 1})
    monkeypatch.setattr(get_settings(), "job_stale_after_s", 4.0)
    monkeypatch.setattr(get_settings(), "job_queue_timeout_s", 60.0)
    app = make_celery(s)
    w = EmbeddedWorker(s)
    monkeypatch.setattr(EmbeddedWorker, "BACKOFF_S", (0.5, 1.0, 2.0))
    w.start()
    yield app, w
    w.stop(timeout=5)


def wait_for(pred, timeout, what):
    """Poll ``pred`` every 0.1 s; fail naming ``what`` after ``timeout`` seconds; returns the seconds waited."""
    t0 = time.monotonic()
    while not pred():
        assert time.monotonic() - t0 < timeout, f"{what} within {timeout} s"
        time.sleep(0.1)
    return time.monotonic() - t0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    import os

    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_used(pid: int, seconds: float = 1.0) -> float:
    """CPU seconds ``pid`` used during the next ``seconds`` of wall time."""
    c0 = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - c0
