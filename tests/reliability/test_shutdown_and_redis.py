"""Fault injection with real processes (make faults): SIGTERM to the app with a job running, and Redis
restarted while a job runs on a separate worker.

* SIGTERM: the app stops taking jobs, gives running ones ``shutdown_grace_s``, cancels the rest (the
  client is told), stops its embedded worker and exits with code 0 — within 10 s of the grace.
* Redis restart (append-only persistence, as a production Redis runs): the waiting client rides out
  the outage, the worker keeps computing, and the job ends ``succeeded`` — not lost, not run twice.
* A worker's SIGTERM (warm shutdown) with an idempotent job running: requeued as attempt 2 after the
  grace and finished by another worker.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from engines.common.settings import get_settings
from tests.helpers import free_port, require, spawn, stop
from tests.reliability.conftest import wait_for
from workers import client
from workers.celery_app import make_celery

pytestmark = pytest.mark.fault

LONG_TAB = ["linear", 5, 50000, 8, 20, 0.1, 1.0, 10, "uniform", ["kl_ucb", "kl_greedy", "ucb"]]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigterm_cancels_running_jobs_and_stops_the_worker(app_server, tmp_path):
    from gradio_client import Client
    from gradio_client.utils import Status

    grace = 2.0
    url, proc, _ = app_server({"PAPERLAB_DATA_DIR": str(tmp_path / "data"), "PAPERLAB_SHUTDOWN_GRACE_S": str(grace)},
                               timeout=240)
    log = tmp_path / f"app-{url.rsplit(':', 1)[1].strip('/')}.log"
    pids = [int(p) for p in re.search(r"embedded worker started \(pids \[([\d, ]+)\]", log.read_text())
            .group(1).split(",")]
    c = Client(url, verbose=False)
    job = c.submit(*LONG_TAB, api_name="/kl_bandits_run")
    wait_for(lambda: (st := job.status()).code == Status.PROGRESS and st.progress_data, 120,
             "the job runs on the embedded worker")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=grace + 20)
    took = time.monotonic() - t0
    text = log.read_text()
    assert code == 0, text[-2000:]
    assert took < grace + 10, f"shutdown took {took:.1f} s"
    assert "1 job(s) cancelled" in text, text[-2000:]
    assert not any(_alive(p) for p in pids), "the embedded worker outlived the app"
    with pytest.raises(Exception):  # the client is told (stopped / server stopped), it does not hang
        job.result(timeout=30)
    print(f"SIGTERM → exit 0 after {took:.1f} s (grace {grace:.0f} s)")


@pytest.fixture
def restartable_redis(tmp_path):
    exe = shutil.which("redis-server")
    require(exe is not None, "redis-server")
    port = free_port()
    d = tmp_path / "redis"
    d.mkdir()
    args = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
            "--appendfsync", "always", "--dir", str(d)]
    procs = []

    def start():
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                      start_new_session=True))
        import redis

        wait_for(lambda: _ping(redis, port), 10, "redis answers")
        return procs[-1]

    start()
    yield f"redis://127.0.0.1:{port}/0", procs, start
    for p in procs:
        stop(p)


def _ping(redis, port) -> bool:
    try:
        return redis.Redis(port=port).ping()
    except Exception:
        return False


def test_redis_restart_mid_job_is_ridden_out(restartable_redis, tmp_path, monkeypatch):
    url, procs, start = restartable_redis
    data = tmp_path / "data"
    env = {"PAPERLAB_BROKER_URL": url, "PAPERLAB_DATA_DIR": str(data), "PAPERLAB_PROFILE": "test"}
    worker = spawn([sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "-Q", "cpu,gpu",
                    "--pool=solo", "--loglevel=INFO", "--without-gossip", "--without-mingle",
                    "-n", f"redis-restart-{os.getpid()}@%h"], env, tmp_path / "worker.log")
    try:
        s = get_settings()
        monkeypatch.setattr(s, "job_stale_after_s", 15.0)
        monkeypatch.setattr(s, "broker_outage_s", 30.0)
        app = make_celery(s.model_copy(update={"broker_url": url, "data_dir": data}))
        job = client.submit(app, "kl_bandits", "regret_curves",
                            {"env": "linear", "horizon": 20_000, "seeds": 2, "methods": ["kl_ucb"]})
        snaps = client.wait(app, job, timeout=300, poll_s=0.2)
        for snap in snaps:
            if snap.state == "running" and snap.fraction > 0.05:
                break
            assert not snap.done, snap

        times = {}

        def restart():
            times["down"] = time.monotonic()
            stop(procs[-1])  # SIGTERM: Redis writes its append-only file and exits
            time.sleep(3.0)
            start()
            times["up"] = time.monotonic()

        import threading

        restarter = threading.Thread(target=restart)
        restarter.start()  # the client keeps polling through the outage
        seen = []
        for snap in snaps:
            seen.append(snap.message)
        restarter.join()
        times["done"] = time.monotonic()
        assert snap.state == "succeeded", (snap, (tmp_path / "worker.log").read_text()[-3000:])
        # The job was running when Redis went down and ended after it came back (the client's reads of the
        # result backend are retried through the outage: result_backend_always_retry).
        assert not seen or times["done"] > times["up"] > times["down"], times
        assert snap.result["curves"][0]["horizons"][-1] == 20_000
        log = (tmp_path / "worker.log").read_text()
        assert len(re.findall(rf"Task paperlab.run_entry\[{job}\] succeeded", log)) == 1, log[-3000:]
    finally:
        stop(worker)


def test_worker_sigterm_requeues_a_running_idempotent_job(restartable_redis, tmp_path, monkeypatch):
    url, _procs, _start = restartable_redis
    data = tmp_path / "data"
    env = {"PAPERLAB_BROKER_URL": url, "PAPERLAB_DATA_DIR": str(data), "PAPERLAB_PROFILE": "test",
           "PAPERLAB_SHUTDOWN_GRACE_S": "1"}

    def worker(n: int):
        return spawn([sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "-Q", "cpu,gpu",
                      "--pool=solo", "--loglevel=INFO", "--without-gossip", "--without-mingle",
                      "-n", f"sigterm-{n}-{os.getpid()}@%h"], env, tmp_path / f"worker{n}.log")

    w1 = worker(1)
    w2 = None
    try:
        s = get_settings()
        monkeypatch.setattr(s, "job_queue_timeout_s", 120.0)
        app = make_celery(s.model_copy(update={"broker_url": url, "data_dir": data}))
        job = client.submit(app, "kl_bandits", "regret_curves",
                            {"env": "linear", "horizon": 20_000, "seeds": 2, "methods": ["kl_ucb"]})
        snaps = client.wait(app, job, timeout=300, poll_s=0.2)
        for snap in snaps:
            if snap.state == "running" and snap.fraction > 0.02:
                break
            assert not snap.done, snap
        t0 = time.monotonic()
        w1.send_signal(signal.SIGTERM)  # warm shutdown: 1 s of grace, then the job is stopped and requeued
        assert w1.wait(timeout=30) == 0, (tmp_path / "worker1.log").read_text()[-3000:]
        took = time.monotonic() - t0
        rec = client.read_record(app.backend, job)
        assert rec["attempt"] == 2 and "shut down" in rec["retried_because"], rec
        w2 = worker(2)
        for snap in snaps:
            pass
        assert snap.state == "succeeded", (snap, (tmp_path / "worker2.log").read_text()[-3000:])
        log1 = (tmp_path / "worker1.log").read_text()
        assert "stopped by the worker's shutdown" in log1, log1[-3000:]
        print(f"worker SIGTERM → exited after {took:.1f} s, job requeued (attempt 2) and finished by another worker")
    finally:
        for w in (w1, w2):
            if w is not None:
                stop(w)
