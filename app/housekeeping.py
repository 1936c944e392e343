"""Housekeeping of the data directory: job artifacts and stored results do not grow without bound.

* **Job artifacts** (``<data>/artifacts/<job id>/``): a job's folder older than ``artifacts_max_age_s``
  (by its newest file) is deleted; if the folder is still over ``artifacts_max_mb`` the oldest folders
  go first, sparing anything written in the last ``RECENT_S`` (a job still running).
* **Stored results and job records** of the embedded file backend (``<data>/broker/results``,
  ``<data>/results``) older than ``result_expires_s`` (Redis expires its own keys).
* **Gradio's upload and output cache** is cleared by Gradio itself: the app is built with
  ``delete_cache=(housekeeping_interval_s, gradio_cache_max_age_s)`` (app/ui.py).

The app sweeps 30 s after start-up and then every ``housekeeping_interval_s`` (a daemon thread);
``python -m app.housekeeping [--dry-run]`` sweeps once and prints what it removed.
"""
from __future__ import annotations

import logging
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from engines.common.settings import Settings, get_settings

log = logging.getLogger("paperlab.housekeeping")

RECENT_S = 600.0  # never delete a folder written this recently to meet the size cap


@dataclass
class Report:
    removed_dirs: list[str] = field(default_factory=list)
    removed_files: int = 0
    freed_bytes: int = 0
    kept_bytes: int = 0

    def line(self) -> str:
        return (f"removed {len(self.removed_dirs)} artifact folder(s) and {self.removed_files} result file(s), "
                f"freed {self.freed_bytes / 2**20:.1f} MB; artifacts now {self.kept_bytes / 2**20:.1f} MB")


def _usage(d: Path) -> tuple[float, int]:
    """(newest modification time, total bytes) of a folder tree."""
    newest, size = d.stat().st_mtime, 0
    for p in d.rglob("*"):
        try:
            st = p.stat()
        except FileNotFoundError:  # removed meanwhile
            continue
        newest = max(newest, st.st_mtime)
        if p.is_file():
            size += st.st_size
    return newest, size


def sweep_artifacts(root: Path, max_age_s: float, max_bytes: float, now: float | None = None,
                    dry_run: bool = False) -> Report:
    now = time.time() if now is None else now
    rep = Report()
    if not root.is_dir():
        return rep
    dirs = []
    for d in root.iterdir():
        if d.is_dir() and not d.is_symlink():
            newest, size = _usage(d)
            dirs.append((newest, size, d))
    dirs.sort()  # oldest first
    total = sum(size for _, size, _ in dirs)
    for newest, size, d in dirs:
        too_old = now - newest > max_age_s
        too_big = total > max_bytes and now - newest > RECENT_S
        if not (too_old or too_big):
            continue
        if not dry_run:
            shutil.rmtree(d, ignore_errors=True)
        rep.removed_dirs.append(d.name)
        rep.freed_bytes += size
        total -= size
    rep.kept_bytes = total
    return rep


def sweep_results(folders: list[Path], max_age_s: float, now: float | None = None, dry_run: bool = False,
                  rep: Report | None = None) -> Report:
    now = time.time() if now is None else now
    rep = rep or Report()
    for folder in folders:
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            if p.is_file() and now - st.st_mtime > max_age_s:
                if not dry_run:
                    p.unlink(missing_ok=True)
                rep.removed_files += 1
                rep.freed_bytes += st.st_size
    return rep


def sweep(s: Settings | None = None, dry_run: bool = False, now: float | None = None) -> Report:
    """One pass over the data directory with the limits of ``s``."""
    s = s or get_settings()
    rep = sweep_artifacts(s.artifacts_dir, s.artifacts_max_age_s, s.artifacts_max_mb * 2**20, now, dry_run)
    sweep_results([s.data_dir / "broker" / "results", s.data_dir / "results"], s.result_expires_s, now, dry_run,
                  rep)
    if rep.removed_dirs or rep.removed_files:
        log.info("housekeeping: %s", rep.line())
    return rep


def start(s: Settings | None = None) -> threading.Thread:
    """Sweep soon after start-up and every ``housekeeping_interval_s`` in a daemon thread."""
    s = s or get_settings()

    def loop() -> None:
        time.sleep(min(30.0, s.housekeeping_interval_s))  # not while the app starts
        while True:
            try:
                sweep(s)
            except Exception:  # never let housekeeping take the app down
                log.exception("housekeeping failed")
            time.sleep(s.housekeeping_interval_s)

    t = threading.Thread(target=loop, daemon=True, name="housekeeping")
    t.start()
    return t


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m app.housekeeping",
                                 description="delete old job artifacts and results under the data directory")
    ap.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    args = ap.parse_args(argv)
    rep = sweep(dry_run=args.dry_run)
    print(("would have " if args.dry_run else "") + rep.line())


if __name__ == "__main__":
    main()
