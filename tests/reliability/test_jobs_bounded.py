"""Bounded waits and lost jobs on a real Celery worker thread over the in-memory broker.

Every job ends in a clear state: unknown ids are unknown, a job nobody picks up fails with
"no worker is available", a job that never sent a heartbeat is lost, an idempotent lost job runs
again once (and only once), and a delivery of a job already reported failed never runs.
"""
from __future__ import annotations

import time

import pytest
from celery.contrib.testing.worker import start_worker

from app.jobs import CeleryBackend
from engines import registry
from engines.common.settings import get_settings
from tests.helpers import record_measure
from workers import client
from workers.celery_app import make_celery
from workers.tasks import heartbeat_key

SMALL = {"horizon": 500, "seeds": 1, "methods": ["kl_ucb"]}


@pytest.fixture
def celery_app(monkeypatch):
    s = get_settings()
    monkeypatch.setattr(s, "job_queue_timeout_s", 1.0)
    monkeypatch.setattr(s, "job_stale_after_s", 6.0)  # > the 2 s heartbeat
    app = make_celery(s.model_copy(update={"broker_url": "memory://", "result_backend": "cache+memory://"}))
    import workers.tasks  # noqa: F401  registers the task

    _purge(app)  # the in-memory broker is shared by every app of this process
    yield app
    _purge(app)


def _purge(app):
    with app.connection_for_write() as conn:
        for q in ("cpu", "gpu"):
            try:
                conn.default_channel.queue_purge(q)
            except Exception:
                pass


@pytest.fixture
def runs(monkeypatch):
    """Counts executions of entry points (the worker runs in this process)."""
    calls = []
    real = registry.run

    def counting(method_id, name, params, ctx=None):
        calls.append((method_id, name, getattr(ctx, "job_id", None)))
        return real(method_id, name, params, ctx)

    monkeypatch.setattr(registry, "run", counting)
    return calls


def worker(app):
    return start_worker(app, pool="threads", concurrency=1, perform_ping_check=False, shutdown_timeout=20,
                        loglevel="WARNING")


def wait_done(app, job, timeout=30):
    return list(client.wait(app, job, timeout=timeout, poll_s=0.05))[-1]


def test_unknown_job_is_unknown(celery_app):
    s = client.snapshot(celery_app, "0123456789abcdef")
    assert s.state == "unknown" and s.done and "unknown job id" in s.error
    events = list(CeleryBackend(celery_app).events("0123456789abcdef", timeout=5))
    assert [e.kind for e in events] == ["error"] and "unknown" in events[0].error


def test_job_nobody_picks_up_fails_with_no_worker(celery_app, runs):
    job = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)
    assert client.snapshot(celery_app, job).state == "queued"
    t0 = time.monotonic()
    last = wait_done(celery_app, job, timeout=60)
    assert last.state == "failed" and "no worker is available" in last.error
    record_measure("no worker: queued job → failed with 'no worker' (s)", time.monotonic() - t0)
    # A worker that shows up later must not run the job the UI already reported as failed.
    get_settings().job_queue_timeout_s = 60  # (restored by monkeypatch)
    with worker(celery_app):
        job2 = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)
        last2 = wait_done(celery_app, job2)
        assert last2.state == "succeeded", last2
        assert client.snapshot(celery_app, job).state == "failed"
    assert [r[2] for r in runs] == [job2], "the failed job ran after all"


def test_started_job_without_heartbeat_is_lost(celery_app):
    job = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)  # no worker: its message stays queued
    celery_app.backend.store_result(job, {"fraction": 0.1, "message": "loading"}, "PROGRESS")
    rec = client.read_record(celery_app.backend, job)
    rec["idempotent"] = False
    client._write_record(celery_app, job, rec)
    get_settings().job_stale_after_s = 0.5
    assert client.snapshot(celery_app, job).state == "running"  # first seen: the clock starts
    time.sleep(0.7)
    s = client.snapshot(celery_app, job)
    assert s.state == "failed" and "stopped responding" in s.error


def test_lost_idempotent_job_runs_again_once(celery_app, runs):
    job = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)
    # As if a worker had started it and died: progress stored, heartbeat long stale.
    celery_app.backend.store_result(job, {"fraction": 0.3, "message": "working"}, "PROGRESS")
    celery_app.backend.set(heartbeat_key(job), str(time.time() - 3600))
    s = client.snapshot(celery_app, job)
    assert s.state == "queued" and "attempt 2" in s.message
    get_settings().job_queue_timeout_s = 60
    get_settings().job_stale_after_s = 20
    with worker(celery_app):  # gets attempt 1 (the original message: superseded) and attempt 2
        last = wait_done(celery_app, job)
    assert last.state == "succeeded"
    assert [r[2] for r in runs] == [job], f"ran {len(runs)} times"
    # A second loss is not retried again.
    assert not client._can_retry(client.read_record(celery_app.backend, job))


def test_cancel_of_a_queued_job_is_immediate_and_final(celery_app, runs):
    job = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)
    client.cancel(celery_app, job)
    assert client.snapshot(celery_app, job).state == "cancelled"
    get_settings().job_queue_timeout_s = 60  # (restored by monkeypatch)
    with worker(celery_app):
        job2 = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)
        last2 = wait_done(celery_app, job2)
        assert last2.state == "succeeded", last2
    assert client.snapshot(celery_app, job).state == "cancelled"
    assert [r[2] for r in runs] == [job2]
