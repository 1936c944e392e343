"""End to end: a real broker, a real worker subprocess, the app as a subprocess, gradio_client."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from gradio_client import Client

from engines.common.settings import get_settings
from tests.helpers import ROOT, record_measure, start_worker, stop

KL_ARGS = ("linear", 5, 3000, 8, 20, 0.1, 1.0, 2, "uniform", ["kl_ucb", "ucb"])
LONG = {"env": "linear", "horizon": 100_000, "seeds": 20}


def celery_for(broker: str, backend: str = ""):
    from workers.celery_app import make_celery

    s = get_settings().model_copy(update={"broker_url": broker, "result_backend": backend, "job_stale_after_s": 4})
    return make_celery(s)


def first_progress_latency(app) -> float:
    """Seconds from submit to the first progress event of a small job."""
    from app.jobs import CeleryBackend

    b = CeleryBackend(app, poll_s=0.01)
    t0 = time.perf_counter()
    job = b.submit("kl_bandits", "regret_curves", {"horizon": 2000, "seeds": 1})
    for ev in b.events(job, timeout=60):
        if ev.kind == "progress" and ev.message != "waiting for a worker":
            dt = time.perf_counter() - t0
            break
    for _ in b.events(job, timeout=60):
        pass
    return dt


@pytest.fixture
def redis_stack(redis_url, tmp_path):
    env = {"PAPERLAB_BROKER_URL": redis_url, "PAPERLAB_JOB_STALE_AFTER_S": "4"}
    worker = start_worker(env, tmp_path / "worker.log")
    yield redis_url, env, worker
    stop(worker)


def test_redis_worker_app_roundtrip(redis_stack, app_server):
    redis_url, env, worker = redis_stack
    url, _, start_s = app_server(env, args=("--no-worker",))
    c = Client(url, verbose=False)
    regret_plot, _, summary, status = c.predict(*KL_ARGS, api_name="/kl_bandits_run")
    assert regret_plot["plot"].startswith("data:image")
    assert {r[0] for r in summary["data"]} == {"KL-UCB (Alg. 1)", "UCB / LinUCB"}
    lat = first_progress_latency(celery_for(redis_url))
    print(f"\nUI start {start_s:.2f} s; Redis submit->first progress {lat * 1000:.0f} ms")
    record_measure("redis: submit → first progress (s)", lat)


def test_killed_worker_fails_the_job_with_a_message(redis_stack, tmp_path):
    redis_url, env, worker = redis_stack
    from workers import client

    app = celery_for(redis_url)
    job = client.submit(app, "kl_bandits", "regret_curves", LONG)
    t0 = time.monotonic()
    while client.snapshot(app, job).state != "running":
        assert time.monotonic() - t0 < 60, "job never started"
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(worker.pid, signal.SIGKILL)  # the whole worker, parent and child
    worker.wait()
    # regret_curves is idempotent (registry): the lost job is sent again once, as attempt 2.
    for snap in client.wait(app, job, timeout=30, poll_s=0.2):
        if snap.state == "queued" and "attempt 2" in snap.message:
            break
    assert snap.state == "queued" and "stopped responding" in snap.message, snap
    client.cancel(app, job)  # nobody needs the retry here: cancelled at once, for good
    assert client.snapshot(app, job).state == "cancelled"
    # A fresh worker serves the next job: nothing hangs, and the cancelled retry never runs.
    w2 = start_worker(env, tmp_path / "worker2.log")
    try:
        job2 = client.submit(app, "kl_bandits", "regret_curves", {"horizon": 500, "seeds": 1})
        assert list(client.wait(app, job2, timeout=60))[-1].state == "succeeded"
    finally:
        stop(w2)


def test_rabbitmq_roundtrip(redis_url, tmp_path):
    amqp = os.environ.get("PAPERLAB_TEST_AMQP_URL")
    if not amqp:
        pytest.skip("PAPERLAB_TEST_AMQP_URL is not set (e.g. amqp://guest:guest@127.0.0.1:5672//)")
    env = {"PAPERLAB_BROKER_URL": amqp, "PAPERLAB_RESULT_BACKEND": redis_url}
    worker = start_worker(env, tmp_path / "amqp-worker.log")
    try:
        app = celery_for(amqp, redis_url)
        from workers import client

        job = client.submit(app, "kl_bandits", "regret_curves", {"horizon": 1000, "seeds": 1})
        snaps = list(client.wait(app, job, timeout=90))
        assert snaps[-1].state == "succeeded"
        assert snaps[-1].result["curves"][0]["method"] == "kl_ucb"
        print(f"\nRabbitMQ submit->first progress {first_progress_latency(app) * 1000:.0f} ms")
    finally:
        stop(worker)


def batch(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "workers.batch", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})))


def test_batch_cli_embedded_worker(tmp_path):
    """The batch CLI against the embedded filesystem broker, starting its own worker."""
    env = {"PAPERLAB_DATA_DIR": str(tmp_path / "data"), "PAPERLAB_BROKER_URL": ""}
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"horizon": 1000, "seeds": 1, "methods": ["kl_ucb"]}))
    out = batch("submit", "kl_bandits.regret_curves", "--params", str(p), "--wait", "--start-worker",
                "--timeout", "90", env=env)
    assert out.returncode == 0, out.stderr
    job = out.stdout.splitlines()[0].strip()
    res = json.loads(out.stdout.splitlines()[-1])
    assert res["curves"][0]["method"] == "kl_ucb"
    st = batch("status", job, env=env)
    assert json.loads(st.stdout)["state"] == "succeeded"
    r = batch("result", job, env=env)
    assert json.loads(r.stdout)["eta"] == 5.0


def test_batch_cli_bad_input(tmp_path):
    env = {"PAPERLAB_DATA_DIR": str(tmp_path / "data")}
    p = tmp_path / "bad.json"
    p.write_text('{"horizon": 5')
    out = batch("submit", "kl_bandits.regret_curves", "--params", str(p), env=env)
    assert out.returncode == 2 and "not valid JSON" in out.stderr
    p.write_text('{"eta": -1}')
    out = batch("submit", "kl_bandits.regret_curves", "--params", str(p), env=env)
    assert out.returncode == 2 and "eta" in out.stderr
    out = batch("submit", "nomethod.run", env=env)
    assert out.returncode == 2 and "unknown method" in out.stderr


def test_batch_cli_against_redis(redis_stack, tmp_path):
    redis_url, env, _ = redis_stack
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"horizon": 800, "seeds": 1}))
    out = batch("submit", "kl_bandits.regret_curves", "--params", str(p), "--wait", "--timeout", "90", env=env)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout.splitlines()[-1])["curves"]) == 3


def _children_of(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if int(line.split()[1]) == pid and "workers.embedded" in line]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    st = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    return bool(st) and not st.startswith("Z")


def test_embedded_worker_dies_with_the_app(app_server, tmp_path):
    """The embedded worker stops with the app: on SIGTERM (finally) and even on SIGKILL (parent watch)."""
    for sig, within in ((signal.SIGTERM, 20), (signal.SIGKILL, 30)):
        _, proc, _ = app_server({"PAPERLAB_DATA_DIR": str(tmp_path / f"d{sig}")})
        t0 = time.monotonic()
        while not (workers := _children_of(proc.pid)):
            assert time.monotonic() - t0 < 30, "no embedded worker started"
            time.sleep(0.2)
        os.kill(proc.pid, sig)
        proc.wait(30)
        t0 = time.monotonic()
        while _alive(workers[0]):
            assert time.monotonic() - t0 < within, f"embedded worker outlived the app after {sig!r}"
            time.sleep(0.5)
