"""The job bridge: a ``JobBackend`` protocol the UI talks to, never Celery directly.

``submit(method_id, entry, params) -> job_id`` validates the parameters first
(``ParamError`` names the bad field; nothing is queued); ``events(job_id)``
yields ``JobEvent``s whose fraction never goes backwards and that end with one
``result``, ``error`` or ``cancelled`` event; ``cancel(job_id)`` stops a job.

* ``CeleryBackend`` (default): jobs run on Celery workers (embedded or remote).
* ``InlineBackend``: jobs run in a thread of this process (development, unit tests).
"""
from __future__ import annotations

import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal, Protocol

from engines import registry
from engines.common.context import JobCancelled, LocalContext
from engines.common.params import validate

EventKind = Literal["progress", "result", "error", "cancelled"]


@dataclass
class JobEvent:
    kind: EventKind
    fraction: float = 0.0
    message: str = ""
    preview: dict | None = None
    result: dict | None = None
    error: str | None = None

    @property
    def final(self) -> bool:
        return self.kind != "progress"


class JobBackend(Protocol):
    def submit(self, method_id: str, entry: str, params: dict[str, Any]) -> str: ...

    def events(self, job_id: str, timeout: float | None = None) -> Iterator[JobEvent]: ...

    def cancel(self, job_id: str) -> None: ...


class _Monotone:
    """Filters a stream of events so progress never goes backwards and repeats are dropped."""

    def __init__(self):
        self.fraction = 0.0
        self.last: tuple | None = None

    def __call__(self, ev: JobEvent) -> JobEvent | None:
        ev.fraction = max(self.fraction, min(1.0, ev.fraction))
        self.fraction = ev.fraction
        key = (ev.kind, round(ev.fraction, 3), ev.message, ev.preview is not None)
        if ev.kind == "progress" and key == self.last and ev.preview is None:
            return None
        self.last = key
        return ev


# ---------------------------------------------------------------- inline backend


@dataclass
class _InlineJob:
    ctx: LocalContext
    events: "queue.Queue[JobEvent]" = field(default_factory=queue.Queue)
    thread: threading.Thread | None = None


class InlineBackend:
    """Runs each job in a thread of this process, with the same validation and events."""

    def __init__(self):
        self._jobs: dict[str, _InlineJob] = {}

    def submit(self, method_id: str, entry: str, params: dict[str, Any]) -> str:
        model = registry.params_model(method_id, entry)
        clean = validate(model, params).model_dump(mode="json")
        job_id = uuid.uuid4().hex
        job = _InlineJob(ctx=LocalContext(job_id=job_id))

        def sink(fraction: float, message: str, preview: dict | None) -> None:
            job.events.put(JobEvent("progress", fraction, message, preview=preview))

        job.ctx._on_progress = sink

        def work() -> None:
            try:
                res = registry.run(method_id, entry, clean, job.ctx)
                job.events.put(JobEvent("result", 1.0, "done", result=res))
            except JobCancelled:
                job.events.put(JobEvent("cancelled", job.ctx.fraction, "cancelled by the user"))
            except Exception as e:  # the UI shows the message; the app keeps serving
                job.events.put(JobEvent("error", job.ctx.fraction, error=str(e) or type(e).__name__))

        job.thread = threading.Thread(target=work, daemon=True, name=f"job-{job_id}")
        self._jobs[job_id] = job
        job.thread.start()
        return job_id

    def events(self, job_id: str, timeout: float | None = None) -> Iterator[JobEvent]:
        job = self._jobs.get(job_id)
        if job is None:
            yield JobEvent("error", error=f"unknown job id {job_id[:40]!r}")
            return
        mono = _Monotone()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                ev = job.events.get(timeout=wait)
            except queue.Empty:
                raise TimeoutError(f"job {job_id} did not finish within {timeout} s") from None
            ev = mono(ev)
            if ev is not None:
                yield ev
                if ev.final:
                    self._jobs.pop(job_id, None)
                    return

    def cancel(self, job_id: str) -> None:
        job = self._jobs.get(job_id)
        if job is not None:
            job.ctx.cancel()


# ---------------------------------------------------------------- celery backend


class CeleryBackend:
    """Jobs on Celery workers; progress is polled from the result backend."""

    def __init__(self, celery_app=None, poll_s: float = 0.1):
        if celery_app is None:
            from workers.celery_app import app as celery_app
        self.app = celery_app
        self.poll_s = poll_s

    def submit(self, method_id: str, entry: str, params: dict[str, Any]) -> str:
        from workers import client

        return client.submit(self.app, method_id, entry, params)

    def events(self, job_id: str, timeout: float | None = None) -> Iterator[JobEvent]:
        from workers import client

        mono = _Monotone()
        for snap in client.wait(self.app, job_id, timeout=timeout, poll_s=self.poll_s):
            if snap.state == "succeeded":
                ev = JobEvent("result", 1.0, "done", result=snap.result)
            elif snap.state in ("failed", "unknown"):
                ev = JobEvent("error", snap.fraction, error=snap.error)
            elif snap.state == "cancelled":
                ev = JobEvent("cancelled", snap.fraction, snap.message)
            else:
                ev = JobEvent("progress", snap.fraction, snap.message, preview=snap.preview)
            ev = mono(ev)
            if ev is not None:
                yield ev

    def cancel(self, job_id: str) -> None:
        from workers import client

        client.cancel(self.app, job_id)


_backend: JobBackend | None = None


def get_backend() -> JobBackend:
    """The process-wide backend chosen by settings (``PAPERLAB_INLINE_JOBS``)."""
    global _backend
    if _backend is None:
        from engines.common.settings import get_settings

        _backend = InlineBackend() if get_settings().inline_jobs else CeleryBackend()
    return _backend


def set_backend(backend: JobBackend | None) -> None:
    global _backend
    _backend = backend
