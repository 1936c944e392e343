"""Housekeeping: old or oversized job artifacts and expired result files are deleted, recent ones kept."""
from __future__ import annotations

import os
import time

from app import housekeeping


def _job(root, name, mb: float, age_s: float, now: float):
    d = root / name
    d.mkdir(parents=True)
    f = d / "out.bin"
    f.write_bytes(b"x" * int(mb * 2**20))
    for p in (f, d):
        os.utime(p, (now - age_s, now - age_s))
    return d


def test_artifacts_by_age_then_size_oldest_first(tmp_path):
    now = time.time()
    root = tmp_path / "artifacts"
    old = _job(root, "old", 0.1, 8 * 86400, now)           # past the age limit
    a = _job(root, "a", 1.0, 3 * 3600, now)                  # oldest of the rest: goes for the size cap
    b = _job(root, "b", 1.0, 2 * 3600, now)
    recent = _job(root, "recent", 1.5, 60, now)              # a running job: never deleted for size
    rep = housekeeping.sweep_artifacts(root, max_age_s=7 * 86400, max_bytes=2.6 * 2**20, now=now)
    assert sorted(rep.removed_dirs) == ["a", "old"]
    assert not old.exists() and not a.exists() and b.exists() and recent.exists()
    assert rep.kept_bytes == int(2.5 * 2**20)
    # dry run: nothing removed
    rep = housekeeping.sweep_artifacts(root, max_age_s=1, max_bytes=1, now=now + 10 * 86400, dry_run=True)
    assert sorted(rep.removed_dirs) == ["b", "recent"] and b.exists() and recent.exists()


def test_sweep_removes_expired_result_files(tmp_path):
    from engines.common.settings import get_settings

    s = get_settings().model_copy(update={"data_dir": tmp_path, "result_expires_s": 3600})
    results = tmp_path / "broker" / "results"
    results.mkdir(parents=True)
    now = time.time()
    stale, fresh = results / "celery-task-meta-1", results / "celery-task-meta-2"
    for f, age in ((stale, 7200), (fresh, 60)):
        f.write_text("{}")
        os.utime(f, (now - age, now - age))
    rep = housekeeping.sweep(s, now=now)
    assert rep.removed_files == 1 and not stale.exists() and fresh.exists()
