"""Client side of the job system: submit, look at, and cancel Celery jobs.

Used by the web app's ``CeleryBackend`` and by the batch CLI. Parameters are
validated here, before anything is queued, so a bad value never costs a job.

Every state ends in bounded time (docs/reliability.md):

* ``submit`` writes a job record (entry, queue time, attempt; small parameters) next to the
  results, so an id nobody submitted is reported as ``unknown`` rather than "queued";
* a job no worker picked up within ``job_queue_timeout_s`` fails with "no worker is available";
* a running job whose worker sent no heartbeat for ``job_stale_after_s`` (or never sent one) is
  lost: an ``idempotent`` entry is sent again once (attempt 2; the old delivery, if Redis
  redelivers it, sees it is superseded and does not run), any other entry fails with a message;
* a job reported failed is marked final in its record, so a late redelivery never reruns it.
"""
from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from celery import Celery
from celery.result import AsyncResult

from engines import registry
from engines.common.params import validate
from engines.common.settings import get_settings

from .celery_app import TASK_NAME
from .tasks import CANCELLED, cancel_key, heartbeat_key, read_record, record_key

log = logging.getLogger("paperlab.jobs")

State = Literal["queued", "running", "succeeded", "failed", "cancelled", "unknown"]
NO_WORKER = "no worker is available to run this job (it waited {waited:.0f} s in the queue); try again later"
LOST = "the worker running this job stopped responding (killed or lost); the job failed, run it again"


@dataclass
class Snapshot:
    job_id: str
    state: State
    fraction: float = 0.0
    message: str = ""
    preview: dict | None = None
    result: dict | None = None
    error: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.state in ("succeeded", "failed", "cancelled", "unknown")


def submit(app: Celery, method_id: str, entry: str, params: dict[str, Any], job_id: str | None = None) -> str:
    ent = registry.entry(method_id, entry)
    model = registry.params_model(method_id, entry)
    clean = validate(model, params).model_dump(mode="json")
    job_id = job_id or uuid.uuid4().hex
    rec = {"method": method_id, "entry": entry, "queue": ent.queue, "queued_at": time.time(), "attempt": 1,
           "idempotent": bool(ent.idempotent)}
    payload = json.dumps(clean)
    if len(payload) <= get_settings().job_record_max_bytes:
        rec["params"] = clean  # kept (until result_expires) only to retry a lost idempotent job
    _write_record(app, job_id, rec)
    app.send_task(TASK_NAME, args=[method_id, entry, clean], task_id=job_id, queue=ent.queue)
    return job_id


def _write_record(app: Celery, job_id: str, rec: dict) -> None:
    app.backend.set(record_key(job_id), json.dumps(rec))


def _fail(app: Celery, job_id: str, msg: str, rec: dict | None, fraction: float = 0.0) -> Snapshot:
    """Report a job failed for good: stored as FAILURE, marked final so no delivery runs it later."""
    if rec is not None:
        rec.update(final="failed", error=msg)
        _write_record(app, job_id, rec)
    app.backend.set(cancel_key(job_id), b"1")  # a delivery already running stops at its next check
    app.backend.mark_as_failure(job_id, RuntimeError(msg))
    return Snapshot(job_id, "failed", fraction, error=msg)


def _retry(app: Celery, job_id: str, rec: dict, why: str) -> Snapshot:
    """Send a lost idempotent job again as attempt 2 (same id, same parameters)."""
    rec.update(attempt=int(rec.get("attempt", 1)) + 1, queued_at=time.time(), retried_because=why)
    _write_record(app, job_id, rec)
    for key in (heartbeat_key(job_id), _seen_key(job_id)):
        try:
            app.backend.delete(key)
        except Exception:  # pragma: no cover - best effort
            pass
    app.backend.store_result(job_id, {"fraction": 0.0, "message": "retrying"}, "PENDING")
    app.send_task(TASK_NAME, args=[rec["method"], rec["entry"], rec["params"]], kwargs={"attempt": rec["attempt"]},
                  task_id=job_id, queue=rec.get("queue", "cpu"))
    log.warning("job %s lost (%s): sent again as attempt %s", job_id, why, rec["attempt"])
    return Snapshot(job_id, "queued", message=f"{why}; running it again (attempt {rec['attempt']})")


def requeue_or_fail(app: Celery, job_id: str, why: str) -> Snapshot:
    """A job stopped by a worker's shutdown: sent again (idempotent entries, not already final) or failed."""
    rec = read_record(app.backend, job_id)
    if rec and rec.get("idempotent") and "params" in rec and not rec.get("final"):
        return _retry(app, job_id, rec, why)
    return _fail(app, job_id, f"{why}; run the job again", rec)


def _can_retry(rec: dict | None) -> bool:
    return bool(rec and rec.get("idempotent") and "params" in rec and int(rec.get("attempt", 1)) < 2
                and not rec.get("final"))


def _seen_key(job_id: str) -> bytes:
    return f"paperlab-seen-running-{job_id}".encode()


def _error_text(info: Any) -> str:
    if isinstance(info, BaseException):
        name = type(info).__name__
        if name == "WorkerLostError":
            return LOST
        text = str(info) or name
        return text if name in ("ParamError", "ValueError", "RuntimeError") else f"{name}: {text}"
    if isinstance(info, dict) and "exc_message" in info:
        msg = info["exc_message"]
        return " ".join(map(str, msg)) if isinstance(msg, (list, tuple)) else str(msg)
    return str(info)


def snapshot(app: Celery, job_id: str) -> Snapshot:
    res = AsyncResult(job_id, app=app)
    state = res.state
    info = res.info
    if state == "PENDING":
        rec = read_record(app.backend, job_id)
        if rec is None:
            return Snapshot(job_id, "unknown", error=f"unknown job id {job_id[:40]!r} (never submitted, or expired)")
        waited = time.time() - float(rec.get("queued_at", time.time()))
        if waited > get_settings().job_queue_timeout_s:
            return _fail(app, job_id, NO_WORKER.format(waited=waited), rec)
        return Snapshot(job_id, "queued", message=f"waiting for a worker ({waited:.0f} s)")
    if state == "SUCCESS":
        return Snapshot(job_id, "succeeded", 1.0, "done", result=info)
    if state == "FAILURE":
        err = _error_text(info)
        if err == LOST:
            rec = read_record(app.backend, job_id)
            if _can_retry(rec):
                return _retry(app, job_id, rec, "the worker running this job was lost")
        return Snapshot(job_id, "failed", error=err)
    if state in ("REVOKED", CANCELLED):
        meta = info if isinstance(info, dict) else {}
        return Snapshot(job_id, "cancelled", meta.get("fraction", 0.0), meta.get("message", "cancelled"))
    meta = info if isinstance(info, dict) else {}
    snap = Snapshot(job_id, "running", float(meta.get("fraction", 0.0)), meta.get("message", "started"),
                    preview=meta.get("preview"))
    if _lost(app, job_id):
        rec = read_record(app.backend, job_id)
        if _can_retry(rec):
            return _retry(app, job_id, rec, "the worker running this job stopped responding")
        return _fail(app, job_id, LOST, rec, snap.fraction)
    return snap


def _lost(app: Celery, job_id: str) -> bool:
    """No heartbeat for ``job_stale_after_s`` — counting from when it was first seen running if none came."""
    now = time.time()
    beat = app.backend.get(heartbeat_key(job_id))
    if beat is None:
        seen = app.backend.get(_seen_key(job_id))
        if seen is None:
            app.backend.set(_seen_key(job_id), str(now))
            return False
        beat = seen
    try:
        return now - float(beat) > get_settings().job_stale_after_s
    except ValueError:
        return False


def cancel(app: Celery, job_id: str) -> None:
    """Set the cooperative cancel flag (running job) and revoke (queued job)."""
    app.backend.set(cancel_key(job_id), b"1")
    if AsyncResult(job_id, app=app).state == "PENDING":  # nobody runs it: cancelled now, and for good
        rec = read_record(app.backend, job_id)
        if rec is not None:
            rec.update(final="cancelled")
            _write_record(app, job_id, rec)
            app.backend.store_result(job_id, {"fraction": 0.0, "message": "cancelled before it started"}, CANCELLED)
    try:
        app.control.revoke(job_id)
    except Exception:  # pragma: no cover - revoke is best effort; the flag suffices
        pass


BROKER_DOWN = ("lost contact with the job queue (result backend unreachable for {down:.0f} s); "
               "the job may still finish: look it up later by its id")
STATE_LOST = ("the job's state was lost (the broker restarted without persistence?); run the job again")


def _outage_errors() -> tuple[type[BaseException], ...]:
    from kombu.exceptions import OperationalError

    errors: list[type[BaseException]] = [OSError, OperationalError]
    try:
        import redis.exceptions as rx

        errors += [rx.ConnectionError, rx.TimeoutError, rx.BusyLoadingError]
    except ImportError:  # pragma: no cover - redis is a dependency
        pass
    return tuple(errors)


def wait(app: Celery, job_id: str, timeout: float | None = None, poll_s: float = 0.1):
    """Yield snapshots until the job ends (or ``timeout`` passes).

    A broker / result backend outage (a Redis restart) is ridden out for ``broker_outage_s``: the last
    state is repeated with a "reconnecting" message. A job seen queued or running that becomes
    unknown (its record gone with a restart that lost the data) gets ``job_stale_after_s`` to show up
    again — a worker still running it writes its progress back — before it is reported lost.
    """
    t0 = time.monotonic()
    s = get_settings()
    last: Snapshot | None = None
    down_since: float | None = None
    unknown_since: float | None = None
    while True:
        try:
            snap = snapshot(app, job_id)
            down_since = None
        except _outage_errors() as e:  # broker / backend unreachable (connection refused, reset, timeout …)
            now = time.monotonic()
            down_since = down_since or now
            log.warning("job %s: result backend unreachable (%s)", job_id, type(e).__name__)
            if now - down_since > s.broker_outage_s:
                snap = Snapshot(job_id, "failed", last.fraction if last else 0.0,
                                error=BROKER_DOWN.format(down=now - down_since))
            else:
                base = last or Snapshot(job_id, "queued")
                snap = Snapshot(job_id, base.state, base.fraction, "the job queue is unreachable; reconnecting…")
        if snap.state == "unknown" and last is not None:
            now = time.monotonic()
            unknown_since = unknown_since or now
            if now - unknown_since <= s.job_stale_after_s:
                snap = Snapshot(job_id, last.state, last.fraction, "the job queue restarted; looking for the job…")
            else:
                snap = Snapshot(job_id, "failed", last.fraction, error=STATE_LOST)
        elif snap.state != "unknown":
            unknown_since = None
        if snap.state in ("queued", "running"):
            last = snap
        yield snap
        if snap.done:
            return
        if timeout is not None and time.monotonic() - t0 > timeout:
            raise TimeoutError(f"job {job_id} did not finish within {timeout} s")
        time.sleep(poll_s)
