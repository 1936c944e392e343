"""Fault tests on the embedded worker (supervised solo-pool processes, filesystem broker).

Kill the worker mid-job and while idle: the job ends in a clear state (how fast: ``make bench``, budget
30 s), the worker comes back (supervisor, with backoff), later jobs succeed, and no job runs twice unasked.
"""
from __future__ import annotations

import os
import signal
import time

from tests.helpers import record_measure
from workers import client

LONG = {"env": "linear", "horizon": 100_000, "seeds": 20}
SMALL = {"horizon": 300, "seeds": 1, "methods": ["kl_ucb"]}


def _wait(pred, timeout, what):
    t0 = time.monotonic()
    while not pred():
        assert time.monotonic() - t0 < timeout, f"{what} within {timeout} s"
        time.sleep(0.2)
    return time.monotonic() - t0


def _run_small(app, timeout=60):
    job = client.submit(app, "kl_bandits", "regret_curves", SMALL)
    return list(client.wait(app, job, timeout=timeout, poll_s=0.2))[-1]


def test_worker_killed_mid_job_and_idle_comes_back(embedded):
    app, w = embedded
    assert _run_small(app).state == "succeeded"  # warm: the worker is up

    # 1. Mid-job: a non-idempotent view of the job (record says so) must fail clearly, once.
    job = client.submit(app, "kl_bandits", "regret_curves", LONG)
    rec = client.read_record(app.backend, job)
    rec["idempotent"] = False
    client._write_record(app, job, rec)
    _wait(lambda: client.snapshot(app, job).state == "running", 60, "the long job started")
    pid = w.proc.pid
    os.killpg(pid, signal.SIGKILL)
    t0 = time.monotonic()
    last = list(client.wait(app, job, timeout=120, poll_s=0.2))[-1]
    assert last.state == "failed" and "stopped responding" in last.error
    record_measure("worker killed mid-job → job failed (s)", time.monotonic() - t0)
    _wait(lambda: w.alive and w.proc.pid != pid, 30, "the supervisor restarted the worker")
    assert w.restarts == 1 and w.health()["ok"]
    assert _run_small(app).state == "succeeded"
    assert client.snapshot(app, job).state == "failed"  # not rerun by anyone

    # 2. While idle.
    pid = w.proc.pid
    os.killpg(pid, signal.SIGKILL)
    _wait(lambda: w.alive and w.proc.pid != pid, 30, "the worker came back after an idle kill")
    assert w.restarts == 2
    assert _run_small(app).state == "succeeded"
