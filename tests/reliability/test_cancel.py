"""Cancellation end to end and per-session limits, with a real worker process.

The app (one tab, the kl_bandits one, on GuardedBlocks with Gradio's queue) runs in this process with
the Celery backend; the job runs in a supervised solo-pool worker process. A job is cancelled by
``gradio_client``'s ``job.cancel()`` (``/gradio_api/cancel``) and by a client that drops its
connection (a closed tab); in both cases the worker reports the job cancelled (it writes that state once the
entry has left its loop) and is free: the next job runs on it. While a job runs, the same session cannot start
a second one of the same tab ("busy"), and a global cap refuses new jobs of other sessions.

No time is asserted here: the seconds to "cancelled" (budget 10 s) and the worker's CPU after a cancel are
recorded for ``make bench`` (benchmarks/timed_tests.py), which reports them against their budgets.
"""
from __future__ import annotations

import json
import time

import httpx
import pytest
from gradio_client import Client

from app import limits
from engines.common.settings import get_settings
from tests.helpers import free_port, measuring, record_measure
from tests.reliability.conftest import cpu_used, wait_for
from workers import client

# The tab's inputs: env, η, horizon, d, K, σ, β, seeds, π₀, methods — the slowest run the sliders allow.
LONG = ["linear", 5, 50000, 8, 20, 0.1, 1.0, 10, "uniform", ["kl_ucb", "kl_greedy", "ucb"]]
SMALL = {"horizon": 200, "seeds": 1, "methods": ["kl_ucb"]}  # a job that takes a free worker a moment
GIVE_UP_S = 120  # a hang guard on a loaded machine, not a budget (make bench reports the times)


@pytest.fixture
def served(embedded):
    import gradio as gr

    from app.guard import GuardedBlocks, guard_all
    from app.jobs import CeleryBackend, set_backend
    from app.tabs import kl_bandits

    celery_app, worker = embedded
    # On a loaded machine the worker may take a minute to import: wait for it, then queue nothing in vain.
    wait_for(lambda: worker.log_path.exists() and " ready." in worker.log_path.read_text(errors="ignore"), 240,
             "the embedded worker is ready")
    from app import jobs

    prev = jobs._backend  # the session's inline app shares the module-level backend: put it back
    set_backend(CeleryBackend(celery_app, poll_s=0.1))
    with GuardedBlocks() as demo:
        kl_bandits.build()
    guard_all(demo)
    demo.queue(default_concurrency_limit=8)
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/", demo, celery_app, worker
    demo.close()
    set_backend(prev)
    assert gr  # imported for the Blocks context


def _jobs() -> list[str]:
    return [t.job_id for t in limits.TRACKER.running() if not t.job_id.startswith("reserved-")]


def _tracked_job() -> str:
    wait_for(_jobs, 60, "the job was submitted")
    return _jobs()[0]


def _running_on_worker(celery_app, worker, job_id: str) -> None:
    """The worker runs the job and is inside its loop (its progress moved past 0)."""
    wait_for(lambda: (s := client.snapshot(celery_app, job_id)).state == "running" and s.fraction > 0, GIVE_UP_S,
             "the worker computes the job")
    if measuring():
        record_measure("cancel: worker CPU in 2 s while computing (CPU s)", cpu_used(worker.proc.pid, 2.0))


def _stopped(celery_app, worker, job_id: str, t0: float, what: str) -> float:
    """The job is reported cancelled and the worker is free (one solo-pool process: a small job submitted next
    runs to completion). Returns the seconds from ``t0`` to "cancelled", recorded for ``make bench``."""
    wait_for(lambda: client.snapshot(celery_app, job_id).state == "cancelled", GIVE_UP_S, "the job was cancelled")
    t = time.monotonic() - t0
    record_measure(f"cancel: {what} → cancelled (s)", t)
    if measuring():
        record_measure("cancel: worker CPU in 2 s after a cancel (CPU s)", cpu_used(worker.proc.pid, 2.0))
    nxt = client.submit(celery_app, "kl_bandits", "regret_curves", SMALL)
    last = list(client.wait(celery_app, nxt, timeout=GIVE_UP_S, poll_s=0.1))[-1]
    assert last.state == "succeeded", f"the worker did not run the next job after the cancel: {last}"
    return t


def test_api_cancel_and_closed_connection_stop_the_job(served, monkeypatch):
    url, demo, celery_app, worker = served
    c = Client(url, verbose=False)

    # 1. gradio_client's job.cancel() → /gradio_api/cancel → the tracker cancels the Celery job.
    job = c.submit(*LONG, api_name="/kl_bandits_run")
    jid = _tracked_job()
    _running_on_worker(celery_app, worker, jid)
    # The same session may not start a second run of this tab meanwhile.
    with pytest.raises(Exception, match="already have 1 job"):
        c.predict(*LONG, api_name="/kl_bandits_run")
    t0 = time.monotonic()
    job.cancel()  # returns once Gradio could close the handler's generator, i.e. after the job stopped
    t_api = _stopped(celery_app, worker, jid, t0, "API job.cancel()")
    wait_for(lambda: not limits.TRACKER.running(), GIVE_UP_S, "the handler let go of the cancelled job")

    # 2. A client that drops its connection mid-job (what closing the tab does).
    fn_index = next(i for i, f in demo.fns.items() if f.api_name == "kl_bandits_run")
    session = "closedtab0001"
    with httpx.Client(base_url=url, timeout=30) as http:
        r = http.post("gradio_api/queue/join", json={"data": LONG, "fn_index": fn_index, "session_hash": session,
                                                      "event_data": None, "trigger_id": None})
        assert r.status_code == 200, r.text
        with http.stream("GET", "gradio_api/queue/data", params={"session_hash": session}) as sse:
            lines = sse.iter_lines()  # kept referenced: a dropped line iterator closes the connection
            for line in lines:
                msg = json.loads(line[5:]) if line.startswith("data:") else {}
                assert msg.get("msg") != "process_completed", msg
                if msg.get("msg") == "progress":  # the handler submitted the job and streams its progress
                    break
            jid2 = _tracked_job()
            _running_on_worker(celery_app, worker, jid2)
            # 3. A global cap: with one job running, another session is refused at once.
            monkeypatch.setattr(get_settings(), "max_active_jobs", 1)
            with pytest.raises(Exception, match="server is busy"):
                Client(url, verbose=False).predict(*LONG, api_name="/kl_bandits_run")
            t0 = time.monotonic()
        # leaving the block closes the connection
    t_tab = _stopped(celery_app, worker, jid2, t0, "closed connection")
    wait_for(lambda: not limits.TRACKER.running(), GIVE_UP_S, "the handler let go of the abandoned job")
    print(f"cancelled after: api cancel {t_api:.1f} s, closed connection {t_tab:.1f} s")
