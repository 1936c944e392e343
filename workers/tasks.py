"""The one generic task: run any registered engine entry point by name.

Progress goes to the result backend as ``update_state(state="PROGRESS", meta=…)``
with small JSON meta (fraction, message, preview); a heartbeat key tells the
web process the worker is alive; the cooperative cancel flag is a key in the
result backend that ``ctx.cancelled()`` reads.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from celery import shared_task
from celery.exceptions import Ignore, SoftTimeLimitExceeded
from celery.signals import worker_init, worker_shutting_down
from celery.utils.log import get_task_logger

from engines import registry
from engines.common.context import JobCancelled, LocalContext
from engines.common.settings import get_settings

from .celery_app import TASK_NAME

logger = get_task_logger(__name__)

HEARTBEAT_S = 2.0
#: Custom state of a job stopped through the cooperative flag (REVOKED would need exception info).
CANCELLED = "CANCELLED"


def cancel_key(job_id: str) -> bytes:
    return f"paperlab-cancel-{job_id}".encode()


def heartbeat_key(job_id: str) -> bytes:
    return f"paperlab-heartbeat-{job_id}".encode()


def record_key(job_id: str) -> bytes:
    """The job record the client writes at submission: entry, queue time, attempt (see client.py)."""
    return f"paperlab-job-{job_id}".encode()


FINAL_STATES = ("SUCCESS", "FAILURE", "REVOKED", CANCELLED)

#: When this worker process was asked to stop (SIGTERM / warm shutdown), as time.monotonic().
_SHUTDOWN: dict[str, float | None] = {"at": None}


@worker_init.connect
def _lower_priority(**_kw) -> None:
    """Jobs yield the CPU to the web process (``PAPERLAB_WORKER_NICE``): under load the interactive
    endpoints stay fast while jobs take a little longer. Threads and pool children inherit it."""
    import os

    n = get_settings().worker_nice
    if n > 0:
        try:
            os.nice(n)
        except OSError as e:  # pragma: no cover - not permitted here: run at the normal priority
            logger.warning("worker priority unchanged (%s)", e)


@worker_shutting_down.connect
def _on_worker_shutting_down(**_kw) -> None:
    """Warm shutdown: a running job gets ``shutdown_grace_s`` to finish, then stops at its next
    ``ctx.cancelled()`` check and is requeued (idempotent entries) or failed with a message."""
    _SHUTDOWN["at"] = time.monotonic()
    logger.warning("worker shutting down: running jobs get %.0f s to finish", get_settings().shutdown_grace_s)


def shutdown_due() -> bool:
    at = _SHUTDOWN["at"]
    return at is not None and time.monotonic() - at >= get_settings().shutdown_grace_s


def read_record(backend, job_id: str) -> dict | None:
    import json

    raw = backend.get(record_key(job_id))
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def stale_delivery(backend, job_id: str, attempt: int) -> str | None:
    """Why this delivery must not run (already finished or reported, or superseded by a retry), or None.

    With ``acks_late`` a message whose worker died is redelivered (Redis: after the visibility
    timeout). By then the web process has reported the job failed, or retried it as attempt 2:
    the old delivery must not run it again.
    """
    state = backend.get_task_meta(job_id, cache=False).get("status")
    if state in FINAL_STATES:
        return f"already {state}"
    rec = read_record(backend, job_id)
    if rec is not None and rec.get("final"):
        return f"already reported {rec['final']}"
    if rec is not None and int(rec.get("attempt", 1)) != attempt:
        return f"superseded by attempt {rec.get('attempt')}"
    return None


def retry_note(backend, job_id: str, attempt: int) -> str:
    """"attempt 2: <why the first one was lost>" for a rerun, "" for a first attempt."""
    if attempt <= 1:
        return ""
    why = (read_record(backend, job_id) or {}).get("retried_because", "the first attempt was lost")
    return f"attempt {attempt}: {why}"


class CeleryContext(LocalContext):
    """JobContext backed by the Celery result backend."""

    MIN_INTERVAL_S = 0.2

    def __init__(self, task, job_id: str, retry_note: str = ""):
        super().__init__(job_id=job_id, artifacts_root=get_settings().artifacts_dir)
        self.task = task
        self.backend = task.backend
        # A rerun (attempt 2) says so in every progress message: the one "running it again" event
        # the web process emits is gone within a poll, and a visitor must still see why the job restarted.
        self.retry_note = retry_note
        self._last_sent = 0.0
        self._last_check = 0.0
        self._is_cancelled = False

    def progress(self, fraction: float, message: str = "", preview: dict | None = None) -> None:
        super().progress(fraction, message, preview)
        now = time.monotonic()
        # Rate-limit, but never drop a preview or the final 100 %.
        if preview is None and self.fraction < 1.0 and now - self._last_sent < self.MIN_INTERVAL_S:
            return
        self._last_sent = now
        meta = {"fraction": self.fraction, "message": message or (self.messages[-1] if self.messages else "")}
        if self.retry_note:
            meta["message"] = f"{meta['message']} ({self.retry_note})"
        if preview is not None:
            meta["preview"] = preview
        try:
            self.task.update_state(state="PROGRESS", meta=meta)
        except Exception as e:  # a broker outage (Redis restart) must not fail the job: progress is best effort
            logger.warning("job %s: progress not stored (%s)", self.job_id, type(e).__name__)

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._is_cancelled and now - self._last_check > 0.25:
            self._last_check = now
            try:
                self._is_cancelled = self.backend.get(cancel_key(self.job_id)) is not None
            except Exception as e:  # backend unreachable: keep going, look again at the next check
                logger.warning("job %s: cancel flag not readable (%s)", self.job_id, type(e).__name__)
        return self._is_cancelled or shutdown_due() or super().cancelled()


class _Heartbeat(threading.Thread):
    def __init__(self, backend, job_id: str):
        super().__init__(daemon=True, name=f"heartbeat-{job_id}")
        self.backend, self.job_id = backend, job_id
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.backend.set(heartbeat_key(self.job_id), str(time.time()))
            except Exception:  # pragma: no cover - a flaky backend must not kill the job
                logger.warning("heartbeat for %s failed", self.job_id)
            self.stop.wait(HEARTBEAT_S)


# track_started=False for this task only: Celery would store STARTED before the body runs, over a
# state the web process already reported (redelivery); the body reports "started" itself once it
# has checked that this delivery should run.
@shared_task(bind=True, name=TASK_NAME, track_started=False)
def run_entry(self, method_id: str, entry: str, params: dict[str, Any], attempt: int = 1) -> dict[str, Any]:
    job_id = self.request.id
    why = stale_delivery(self.backend, job_id, attempt)
    if why is not None:
        logger.warning("job %s (attempt %s) not run: %s", job_id, attempt, why)
        raise Ignore()
    ctx = CeleryContext(self, job_id, retry_note(self.backend, job_id, attempt))
    if ctx.cancelled():
        self.update_state(state=CANCELLED, meta={"fraction": 0.0, "message": "cancelled before it started"})
        raise Ignore()
    beat = _Heartbeat(self.backend, job_id)
    beat.start()
    try:
        ctx.progress(0.0, "started")
        return registry.run(method_id, entry, params, ctx)
    except JobCancelled:
        if shutdown_due() and self.backend.get(cancel_key(job_id)) is None:  # stopped by the shutdown, not a user
            from .client import requeue_or_fail

            snap = requeue_or_fail(self.app, job_id, "the worker running this job was shut down")
            logger.warning("job %s stopped by the worker's shutdown: %s", job_id, snap.state)
            raise Ignore()
        self.update_state(state=CANCELLED, meta={"fraction": ctx.fraction, "message": "cancelled by the user"})
        raise Ignore()
    except SoftTimeLimitExceeded:
        raise RuntimeError(
            f"the job exceeded the time limit of {get_settings().soft_time_limit_s} s (PAPERLAB_SOFT_TIME_LIMIT_S)"
        ) from None
    finally:
        beat.stop.set()
