"""Per-session and global job limits of the web process (app/limits.py), and the tracker's cancellation."""
from __future__ import annotations

import pytest

from app.limits import Busy, JobTracker, Tracked, event_state
from engines.common.settings import get_settings


@pytest.fixture
def tracker(monkeypatch):
    s = get_settings()
    for k, v in dict(session_jobs_per_method=1, session_max_jobs=2, method_max_jobs=3, max_active_jobs=4).items():
        monkeypatch.setattr(s, k, v)
    return JobTracker(watch=False)


def _add(t: JobTracker, job: str, method: str, session: str, cancelled: list | None = None):
    t.check(method, session)
    t.add(Tracked(job, method, session, (cancelled if cancelled is not None else []).append))


def test_limits_refuse_with_busy(tracker):
    _add(tracker, "j1", "a", "s1")
    with pytest.raises(Busy, match="already have 1 job\\(s\\) of this tab"):
        tracker.check("a", "s1")
    _add(tracker, "j2", "b", "s1")
    with pytest.raises(Busy, match="already have 2 jobs running"):
        tracker.check("c", "s1")
    _add(tracker, "j3", "a", "s2")
    _add(tracker, "j4", "a", "s3")
    with pytest.raises(Busy, match="This tab is busy"):  # method cap: 3 jobs of 'a'
        tracker.check("a", "s4")
    with pytest.raises(Busy, match="server is busy \\(4 jobs"):  # global cap
        tracker.check("d", "s4")
    tracker.release("j1")
    tracker.check("d", "s4")  # room again


def test_a_reservation_holds_the_place_until_released(tracker):
    place = tracker.reserve("a", "s1")  # submitting …
    with pytest.raises(Busy, match="already have 1 job"):
        tracker.reserve("a", "s1")  # a simultaneous second request of the same session
    tracker.add(Tracked("j1", "a", "s1", [].append), reservation=place)
    assert [t.job_id for t in tracker.running()] == ["j1"]
    tracker.release("j1")
    tracker.release(tracker.reserve("a", "s1"))  # a failed submission gives the place back
    assert tracker.running() == []


def test_shutdown_refuses_and_cancels(tracker):
    cancelled = []
    _add(tracker, "j1", "a", "s1", cancelled)
    _add(tracker, "j2", "b", "s2", cancelled)
    tracker.stop_accepting()
    with pytest.raises(Busy, match="restarting"):
        tracker.check("c", "s3")
    assert tracker.cancel_all() == 2 and sorted(cancelled) == ["j1", "j2"]
    assert tracker.cancel_all() == 2 and len(cancelled) == 2  # once per job


class _Ev:
    def __init__(self, id_, alive=True):
        self._id, self.alive = id_, alive


class _Queue:
    def __init__(self, *events):
        self.active_jobs = [list(events), None]


class _Blocks:
    def __init__(self, queue):
        self._queue = queue


def test_watcher_cancels_jobs_whose_event_is_gone(tracker):
    ev = _Ev("e1")
    blocks = _Blocks(_Queue(ev))
    assert event_state(blocks, "e1") is True and event_state(blocks, "zz") is False
    assert event_state(None, "e1") is None and event_state(blocks, None) is None
    cancelled = []
    tracker.add(Tracked("j1", "a", "s1", cancelled.append, blocks, "e1"))
    assert tracker.sweep() == 0 and cancelled == []
    ev.alive = False  # the client disconnected (Gradio's clean_events)
    assert tracker.sweep() == 1 and cancelled == ["j1"]
    tracker.add(Tracked("j2", "a", "s2", cancelled.append, blocks, "e2"))  # not among the active events
    assert tracker.sweep() == 1 and cancelled == ["j1", "j2"]
    assert "disconnected" in tracker.running("s2")[0].cancelled_because
