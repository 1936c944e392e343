"""The generic task on a real Celery worker thread over the in-memory broker."""
from __future__ import annotations

import time

import pytest
from celery.contrib.testing.worker import start_worker

from app.jobs import CeleryBackend
from engines import registry
from engines.common.params import ParamError
from engines.common.settings import get_settings
from tests.helpers import record_measure
from workers import client
from workers.celery_app import make_celery

LONG = {"env": "linear", "horizon": 100_000, "seeds": 20, "methods": ["kl_ucb", "kl_greedy", "ucb"]}


@pytest.fixture(scope="module")
def celery_app():
    s = get_settings().model_copy(update={"broker_url": "memory://", "result_backend": "cache+memory://"})
    app = make_celery(s)
    import workers.tasks  # noqa: F401  registers the task

    with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30,
                      loglevel="WARNING"):
        yield app


@pytest.fixture
def boom_method(monkeypatch):
    """A registered method whose entry point raises, to test failure reporting."""
    spec = registry.MethodSpec(
        id="boom", title="boom", paper=registry.Paper("t", "a"), summary="s", try_it="t", status="available",
        entries={"run": registry.Entry("tests.workers.entries:boom", "tests.workers.entries:BoomParams")},
    )
    monkeypatch.setitem(registry._BY_ID, "boom", spec)
    return spec


def wait_state(app, job, states, timeout=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        s = client.snapshot(app, job)
        if s.state in states:
            return s
        time.sleep(0.05)
    raise TimeoutError(f"job {job} never reached {states}; last {s}")


def test_success_and_monotone_progress(celery_app):
    backend = CeleryBackend(celery_app, poll_s=0.02)
    job = backend.submit("kl_bandits", "regret_curves", {"horizon": 20000, "seeds": 4})
    events = list(backend.events(job, timeout=60))
    fr = [e.fraction for e in events]
    assert fr == sorted(fr), "progress went backwards"
    assert any(0 < f < 1 for f in fr), "no intermediate progress was reported"
    assert events[-1].kind == "result"
    curves = {c["method"]: c for c in events[-1].result["curves"]}
    assert set(curves) == {"kl_ucb", "kl_greedy", "ucb"}
    assert curves["kl_ucb"]["horizons"][-1] == 20000


def test_cancel_running_job(celery_app):
    backend = CeleryBackend(celery_app, poll_s=0.02)
    job = backend.submit("kl_bandits", "regret_curves", LONG)
    wait_state(celery_app, job, {"running"})
    t0 = time.monotonic()
    backend.cancel(job)
    s = wait_state(celery_app, job, {"cancelled", "failed", "succeeded"}, timeout=120)
    assert s.state == "cancelled"
    record_measure("celery: running job cancel → cancelled (s)", time.monotonic() - t0)


def test_bad_params_are_rejected_before_queueing(celery_app):
    backend = CeleryBackend(celery_app)
    with pytest.raises(ParamError, match="horizon"):
        backend.submit("kl_bandits", "regret_curves", {"horizon": -5})
    with pytest.raises(KeyError, match="no entry"):
        backend.submit("kl_bandits", "nope", {})


def test_failing_entry_reports_message(celery_app, boom_method):
    backend = CeleryBackend(celery_app, poll_s=0.02)
    job = backend.submit("boom", "run", {"message": "disk on fire"})
    events = list(backend.events(job, timeout=30))
    assert events[-1].kind == "error"
    assert "disk on fire" in events[-1].error


def test_lost_worker_is_detected(celery_app):
    """A running job whose heartbeat stopped is declared failed with a clear message."""
    from workers.tasks import heartbeat_key

    job = "lost-job-test"
    celery_app.backend.store_result(job, {"fraction": 0.3, "message": "working"}, "PROGRESS")
    celery_app.backend.set(heartbeat_key(job), str(time.time() - 3600))
    s = client.snapshot(celery_app, job)
    assert s.state == "failed" and "stopped responding" in s.error
    assert client.snapshot(celery_app, job).state == "failed"  # stored, not recomputed


def test_rerun_says_why_in_every_progress_message(celery_app):
    """A lost idempotent job's second attempt carries the reason in all its progress, not in one passing event."""
    why = "the worker running this job stopped responding"
    rec = {"method": "kl_bandits", "entry": "regret_curves", "queue": "cpu", "queued_at": time.time(), "attempt": 1,
           "idempotent": True, "params": {"env": "linear", "horizon": 20000, "seeds": 2}}
    job = "rerun-note-test"
    client._retry(celery_app, job, rec, why)  # as the web process does when attempt 1's heartbeat stops
    events = list(CeleryBackend(celery_app, poll_s=0.02).events(job, timeout=60))
    running = [e.message for e in events if e.kind == "progress" and e.message not in ("retrying", "")
               and not e.message.startswith("waiting for a worker")]
    assert events[-1].kind == "result" and running, [e.message for e in events]
    assert all(m.endswith(f"(attempt 2: {why})") for m in running), running
