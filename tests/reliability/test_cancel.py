"""Cancellation end to end and per-session limits, with a real worker process.

The app (one tab, the kl_bandits one, on GuardedBlocks with Gradio's queue) runs in this process with
the Celery backend; the job runs in a supervised solo-pool worker process. A job is cancelled by
``gradio_client``'s ``job.cancel()`` (``/gradio_api/cancel``) and by a client that drops its
connection (a closed tab); in both cases the worker stops using CPU within a few seconds. While a job
runs, the same session cannot start a second one of the same tab ("busy"), and a global cap refuses
new jobs of other sessions.
"""
from __future__ import annotations

import json
import time

import httpx
import pytest
from gradio_client import Client

from app import limits
from engines.common.settings import get_settings
from tests.helpers import free_port
from tests.reliability.conftest import cpu_used, wait_for
from workers import client

# The tab's inputs: env, η, horizon, d, K, σ, β, seeds, π₀, methods — the slowest run the sliders allow.
LONG = ["linear", 5, 50000, 8, 20, 0.1, 1.0, 10, "uniform", ["kl_ucb", "kl_greedy", "ucb"]]
CANCEL_BOUND_S = 10.0  # the bound for "cancelled"
IDLE_CPU_S = 0.25      # CPU seconds an idle worker may use in two seconds (a busy one uses ~2 on an idle machine)


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
    wait_for(lambda: client.snapshot(celery_app, job_id).state == "running", 120, "the worker started the job")
    assert cpu_used(worker.proc.pid, 2.0) > 0.3, "the worker is not computing the job"


def _stopped(celery_app, worker, job_id: str, t0: float) -> float:
    """Seconds from ``t0`` until the job is cancelled; then the worker must be idle."""
    wait_for(lambda: client.snapshot(celery_app, job_id).state == "cancelled", CANCEL_BOUND_S,
             "the job was cancelled")
    t = time.monotonic() - t0
    assert t < CANCEL_BOUND_S
    assert cpu_used(worker.proc.pid, 2.0) < IDLE_CPU_S, "the worker still computes the cancelled job"
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
    t_api = _stopped(celery_app, worker, jid, t0)
    wait_for(lambda: not limits.TRACKER.running(), 10, "the handler let go of the cancelled job")

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
    t_tab = _stopped(celery_app, worker, jid2, t0)
    wait_for(lambda: not limits.TRACKER.running(), 10, "the handler let go of the abandoned job")
    print(f"cancelled after: api cancel {t_api:.1f} s, closed connection {t_tab:.1f} s")
