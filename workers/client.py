"""Client side of the job system: submit, look at, and cancel Celery jobs.

Used by the web app's ``CeleryBackend`` and by the batch CLI. Parameters are
validated here, before anything is queued, so a bad value never costs a job.
"""
from __future__ import annotations

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
from .tasks import CANCELLED, cancel_key, heartbeat_key

State = Literal["queued", "running", "succeeded", "failed", "cancelled"]


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
        return self.state in ("succeeded", "failed", "cancelled")


def submit(app: Celery, method_id: str, entry: str, params: dict[str, Any], job_id: str | None = None) -> str:
    ent = registry.entry(method_id, entry)
    model = registry.params_model(method_id, entry)
    clean = validate(model, params).model_dump(mode="json")
    job_id = job_id or uuid.uuid4().hex
    app.send_task(TASK_NAME, args=[method_id, entry, clean], task_id=job_id, queue=ent.queue)
    return job_id


def _error_text(info: Any) -> str:
    if isinstance(info, BaseException):
        name = type(info).__name__
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
        return Snapshot(job_id, "queued", message="waiting for a worker")
    if state == "SUCCESS":
        return Snapshot(job_id, "succeeded", 1.0, "done", result=info)
    if state == "FAILURE":
        return Snapshot(job_id, "failed", error=_error_text(info))
    if state in ("REVOKED", CANCELLED):
        meta = info if isinstance(info, dict) else {}
        return Snapshot(job_id, "cancelled", meta.get("fraction", 0.0), meta.get("message", "cancelled"))
    meta = info if isinstance(info, dict) else {}
    snap = Snapshot(job_id, "running", float(meta.get("fraction", 0.0)), meta.get("message", "started"),
                    preview=meta.get("preview"))
    if _lost(app, job_id):
        msg = ("the worker running this job stopped responding (killed or lost); "
               "the job failed, run it again")
        app.backend.mark_as_failure(job_id, RuntimeError(msg))
        return Snapshot(job_id, "failed", snap.fraction, error=msg)
    return snap


def _lost(app: Celery, job_id: str) -> bool:
    beat = app.backend.get(heartbeat_key(job_id))
    if beat is None:
        return False  # started but no heartbeat yet
    try:
        return time.time() - float(beat) > get_settings().job_stale_after_s
    except ValueError:
        return False


def cancel(app: Celery, job_id: str) -> None:
    """Set the cooperative cancel flag (running job) and revoke (queued job)."""
    app.backend.set(cancel_key(job_id), b"1")
    try:
        app.control.revoke(job_id)
    except Exception:  # pragma: no cover - revoke is best effort; the flag suffices
        pass


def wait(app: Celery, job_id: str, timeout: float | None = None, poll_s: float = 0.1):
    """Yield snapshots until the job ends (or ``timeout`` passes)."""
    t0 = time.monotonic()
    while True:
        snap = snapshot(app, job_id)
        yield snap
        if snap.done:
            return
        if timeout is not None and time.monotonic() - t0 > timeout:
            raise TimeoutError(f"job {job_id} did not finish within {timeout} s")
        time.sleep(poll_s)
