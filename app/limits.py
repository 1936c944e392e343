"""Which jobs this web process is waiting for: per-session limits, busy caps, and cancellation of abandoned jobs.

Every ``JobRun`` (app/bridge.py) is admitted here before its job is submitted and released when its
stream ends. That gives three guarantees (docs/reliability.md):

* **Limits.** At most ``session_jobs_per_method`` jobs per browser session (or API client) per
  method, ``session_max_jobs`` per session in all, ``method_max_jobs`` per method and
  ``max_active_jobs`` in all (queued or running). Past a limit the request is refused at once with
  a "busy, try again" message instead of joining an unbounded queue.
* **Cancellation end to end.** A handler that waits for a job blocks inside one ``next()`` call of
  its generator, in a worker thread: Gradio can neither close that generator nor interrupt the
  thread when the event is cancelled. So a watcher thread looks at the Gradio event of every
  tracked job twice a second; once the event is no longer running — cancelled through
  ``/gradio_api/cancel`` (a Stop button's ``cancels=``, ``gradio_client``'s ``job.cancel()``) or
  marked dead because its client disconnected (a closed tab, a dropped connection) — the job's
  cancel flag is set, and the worker stops at its next ``ctx.cancelled()`` check.
* **Shutdown.** ``stop_accepting()`` refuses new jobs ("the server is restarting") and
  ``cancel_all()`` stops the ones still running (graceful SIGTERM in app/__main__.py).
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger("paperlab.jobs")

CHECK_S = 0.5


class Busy(Exception):
    """A limit is reached; the message tells the user what to do."""


@dataclass
class Tracked:
    job_id: str
    method_id: str
    session: str
    cancel: Callable[[str], None]
    blocks: Any = None
    event_id: str | None = None
    deadline: float = 0.0
    cancelled_because: str | None = None
    started: float = field(default_factory=time.monotonic)


def gradio_event() -> tuple[Any, str | None, Any]:
    """(Blocks, event id, gr.Request) of the Gradio event this thread is handling, or Nones."""
    try:
        from gradio.context import LocalContext
    except ImportError:  # pragma: no cover
        return None, None, None
    return LocalContext.blocks.get(None), LocalContext.event_id.get(None), LocalContext.request.get(None)


def session_of(request: Any) -> str:
    """The browser session (or gradio_client instance) a request belongs to; its client address otherwise."""
    if request is None:
        return "local"
    sh = getattr(request, "session_hash", None)
    if sh:
        return f"session:{sh}"
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    return f"client:{host}" if host else "local"


def event_state(blocks: Any, event_id: str | None) -> bool | None:
    """True while Gradio is running the event, False once it was cancelled or its client went away,
    None when it cannot be told (no queue: a direct call)."""
    queue = getattr(blocks, "_queue", None)
    if queue is None or not event_id:
        return None
    for job in list(getattr(queue, "active_jobs", None) or ()):
        for ev in job or ():
            if getattr(ev, "_id", None) == event_id:
                return bool(getattr(ev, "alive", True))
    return False


class JobTracker:
    def __init__(self, watch: bool = True):
        self.watch = watch  # False: no watcher thread (tests call ``sweep`` themselves)
        self._lock = threading.Lock()
        self._admit_lock = threading.Lock()
        self.jobs: dict[str, Tracked] = {}
        self.accepting = True
        self._watcher: threading.Thread | None = None
        self.cancelled_abandoned = 0  # jobs stopped because their event was cancelled or the client left

    # ------------------------------------------------------------------ admission
    def check(self, method_id: str, session: str) -> None:
        """Raise ``Busy`` when one more job of ``method_id`` for ``session`` would pass a limit."""
        from engines.common.settings import get_settings

        s = get_settings()
        if not self.accepting:
            raise Busy("The server is restarting and takes no new jobs; try again in a minute.")
        now = time.monotonic()
        with self._lock:
            for jid in [j for j, t in self.jobs.items() if t.deadline and now > t.deadline]:
                self.jobs.pop(jid)  # a stream nobody consumed; the backend's own bounds ended the job
            jobs = list(self.jobs.values())
        mine = [t for t in jobs if t.session == session]
        same = [t for t in mine if t.method_id == method_id]
        if len(same) >= s.session_jobs_per_method:
            raise Busy(f"You already have {len(same)} job(s) of this tab running (job {same[0].job_id[:8]}); "
                       "wait for it to finish or press Stop, then try again.")
        if len(mine) >= s.session_max_jobs:
            raise Busy(f"You already have {len(mine)} jobs running; wait for one to finish or stop one, "
                       "then try again.")
        if sum(t.method_id == method_id for t in jobs) >= s.method_max_jobs:
            raise Busy("This tab is busy: too many jobs of it are waiting or running on the server. "
                       "Try again in a few minutes.")
        if len(jobs) >= s.max_active_jobs:
            raise Busy(f"The server is busy ({len(jobs)} jobs waiting or running). Try again in a few minutes.")

    def reserve(self, method_id: str, session: str) -> str:
        """``check`` and hold a place in one step (two simultaneous requests cannot both take the last place);
        returns a reservation to ``add`` the job under, or to ``release`` if the submission fails."""
        import uuid

        with self._admit_lock:
            self.check(method_id, session)
            key = f"reserved-{uuid.uuid4().hex}"
            with self._lock:
                self.jobs[key] = Tracked(key, method_id, session, lambda _job_id: None,
                                         deadline=time.monotonic() + 120)
        return key

    def add(self, t: Tracked, reservation: str | None = None) -> None:
        if reservation is not None:
            self.release(reservation)
        with self._lock:
            self.jobs[t.job_id] = t
            if self.watch and t.event_id is not None and (self._watcher is None or not self._watcher.is_alive()):
                self._watcher = threading.Thread(target=self._watch, daemon=True, name="job-event-watcher")
                self._watcher.start()

    def release(self, job_id: str) -> None:
        with self._lock:
            self.jobs.pop(job_id, None)

    def running(self, session: str | None = None) -> list[Tracked]:
        with self._lock:
            return [t for t in self.jobs.values() if session is None or t.session == session]

    # ------------------------------------------------------------------ cancellation
    def _cancel(self, t: Tracked, why: str) -> None:
        if t.cancelled_because is not None:
            return
        t.cancelled_because = why
        log.info("job %s: %s; cancelling it", t.job_id, why)
        try:
            t.cancel(t.job_id)
        except Exception:  # the backend is unreachable: the job's own bounds end it
            log.warning("could not cancel job %s", t.job_id, exc_info=True)

    def sweep(self) -> int:
        """Cancel the jobs whose Gradio event is gone; returns how many were cancelled."""
        n = 0
        for t in self.running():
            if t.event_id is None or t.cancelled_because is not None:
                continue
            if event_state(t.blocks, t.event_id) is False:
                self._cancel(t, "its request was cancelled or its client disconnected")
                self.cancelled_abandoned += 1
                n += 1
        return n

    def _watch(self) -> None:
        while True:
            time.sleep(CHECK_S)
            try:
                self.sweep()
            except Exception:  # pragma: no cover - never let the watcher die
                log.exception("job watcher")

    def cancel_session(self, session: str, why: str = "the browser session ended") -> int:
        ts = self.running(session)
        for t in ts:
            self._cancel(t, why)
        return len(ts)

    def stop_accepting(self) -> None:
        self.accepting = False

    def cancel_all(self, why: str = "the server is shutting down") -> int:
        ts = self.running()
        for t in ts:
            self._cancel(t, why)
        return len(ts)


TRACKER = JobTracker()
