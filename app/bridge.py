"""Gradio side of the job bridge: stream a job into ``gr.Progress``, map errors to ``gr.Error``.

A tab handler that runs a job is a generator:

    def run(..., progress=gr.Progress()):
        job = JobRun("kl_bandits", "regret_curves", params)
        yield job.id, *placeholders            # the Stop button reads this id
        for ev in job.stream(progress):        # previews, if any
            ...
        yield job.id, *render(job.result)

If Gradio cancels the generator (Stop), ``stream`` cancels the job too. Every job is tracked
(app/limits.py): per-session and global limits are checked before it is submitted ("busy, try
again"), and a job whose Gradio event was cancelled (``/gradio_api/cancel``) or whose client went
away (closed tab) is cancelled by the tracker's watcher, since Gradio cannot interrupt a handler
thread that is waiting for the job.
"""
from __future__ import annotations

import time
import weakref
from typing import Any, Iterator

import gradio as gr

from engines.common.params import ParamError

from .jobs import JobEvent, get_backend
from .limits import TRACKER, Busy, Tracked, event_state, gradio_event, session_of


class JobRun:
    def __init__(self, method_id: str, entry: str, params: dict[str, Any]):
        from engines.common.settings import get_settings

        self.backend = get_backend()
        blocks, event_id, request = gradio_event()
        session = session_of(request)
        if event_state(blocks, event_id) is not True:  # not a queued Gradio event: nothing to watch
            blocks, event_id = None, None
        try:
            place = TRACKER.reserve(method_id, session)
        except Busy as e:
            raise gr.Error(str(e), title="Busy, try again") from None
        try:
            self.id = self.backend.submit(method_id, entry, params)
        except ParamError as e:
            TRACKER.release(place)
            raise gr.Error(str(e), title="Invalid parameters") from None
        except BaseException:
            TRACKER.release(place)
            raise
        s = get_settings()
        self.tracked = Tracked(self.id, method_id, session, self.backend.cancel, blocks, event_id,
                               deadline=time.monotonic() + s.job_queue_timeout_s + s.hard_time_limit_s + 120)
        TRACKER.add(self.tracked, reservation=place)
        weakref.finalize(self, TRACKER.release, self.id)  # a handler that never streams the job
        self.result: dict | None = None

    def stream(self, progress: gr.Progress | None = None, timeout: float | None = None) -> Iterator[JobEvent]:
        """Yield progress events; store the result; raise gr.Error on failure or cancellation.

        The wait is bounded: by default the queue timeout plus the hard time limit (a job stuck in
        the queue fails earlier, with "no worker is available", from the backend).
        """
        if timeout is None:
            from engines.common.settings import get_settings

            s = get_settings()
            timeout = s.job_queue_timeout_s + s.hard_time_limit_s + 60
        finished = False
        try:
            for ev in self.backend.events(self.id, timeout=timeout):
                if ev.kind == "progress":
                    if progress is not None:
                        progress(ev.fraction, desc=ev.message or "working")
                    yield ev
                elif ev.kind == "result":
                    finished = True
                    self.result = ev.result
                    if progress is not None:
                        progress(1.0, desc="done")
                    return
                elif ev.kind == "cancelled":
                    finished = True
                    why = self.tracked.cancelled_because
                    raise gr.Error(f"The job was stopped ({why})." if why else "The job was stopped.",
                                   title="Stopped")
                else:
                    finished = True
                    raise gr.Error(ev.error or "the job failed", title="Job failed")
        finally:
            if not finished:  # generator closed by Gradio (Stop, page closed) or timeout
                self.backend.cancel(self.id)
            TRACKER.release(self.id)

    def wait(self, progress: gr.Progress | None = None, timeout: float | None = None) -> dict:
        for _ in self.stream(progress, timeout):
            pass
        assert self.result is not None
        return self.result


def cancel_job(job_id: str | None) -> str:
    """Handler of a Stop button: cancel the job whose id the tab keeps in a gr.State."""
    if job_id:
        get_backend().cancel(job_id)
        return f"stop requested for job {job_id[:8]}"
    return "nothing is running"


def whole(v: Any) -> Any:
    """int() for a whole float from a slider or number box; anything else goes to the parameter model as is
    (it names the field in its message)."""
    import math

    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    return v
