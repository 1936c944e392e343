"""``make bench``: the time budgets the tests do not assert, measured by running those tests.

``make test`` checks behaviour only (a cancelled job is reported cancelled and its worker runs the next job; a
bad schema is refused with an error naming the problem; a runaway sandboxed test is killed ...): a time bound
in a test fails on a loaded machine without a bug. Those tests record what they measured through
``tests.helpers.record_measure``; this script runs them with ``PAPERLAB_BENCH_MEASURES`` set and reports each
measure (the worst over the runs that recorded it) against its budget. Run it on an idle machine. Exit code 1
when a budget is exceeded, a measure is missing or one of the tests fails. The end-to-end test needs
``redis-server`` (README, system packages).

    python benchmarks/timed_tests.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from startup import report

ROOT = Path(__file__).resolve().parents[1]

# measure -> (budget, the test that records it)
BUDGETS: dict[str, tuple[float, str]] = {
    "cancel: API job.cancel() → cancelled (s)": (10.0, "tests/reliability/test_cancel.py"),
    "cancel: closed connection → cancelled (s)": (10.0, "tests/reliability/test_cancel.py"),
    "cancel: worker CPU in 2 s after a cancel (CPU s)": (0.25, "tests/reliability/test_cancel.py"),
    "cancel: worker CPU in 2 s while computing (CPU s)": (0.3, "tests/reliability/test_cancel.py"),
    "celery: running job cancel → cancelled (s)": (
        10.0, "tests/workers/test_celery_jobs.py::test_cancel_running_job"),
    "no worker: queued job → failed with 'no worker' (s)": (
        5.0, "tests/reliability/test_jobs_bounded.py::test_job_nobody_picks_up_fails_with_no_worker"),
    "worker killed mid-job → job failed (s)": (
        30.0, "tests/reliability/test_faults.py::test_worker_killed_mid_job_and_idle_comes_back"),
    "redis: submit → first progress (s)": (5.0, "tests/e2e/test_jobs_e2e.py::test_redis_worker_app_roundtrip"),
    "syncmind sandbox: runaway test killed (s)": (
        10.0, "tests/engines/syncmind/test_syncmind.py::test_sandbox_kills_runaway_and_blocks_network"),
    "zapformat: slowest bad schema rejected (s)": (
        10.0, "tests/engines/zapformat/test_json_schema_coverage.py::test_bad_schemas_fail_fast_with_a_clear_error"),
    "zapformat: warm pass without / with the state cache (×)": (
        3.0, "tests/engines/zapformat/test_zapformat.py::test_state_cache_warm_pass"),
}
# budgets that are lower bounds (a busy worker, a speed-up); the others are upper bounds
AT_LEAST = frozenset({"cancel: worker CPU in 2 s while computing (CPU s)",
                      "zapformat: warm pass without / with the state cache (×)"})


def main() -> int:
    tests = list(dict.fromkeys(t for _, t in BUDGETS.values()))
    with tempfile.TemporaryDirectory(prefix="paperlab-bench-") as tmp:
        out = Path(tmp) / "measures.jsonl"
        env = {**os.environ, "PAPERLAB_PROFILE": "test", "PAPERLAB_BENCH_MEASURES": str(out)}
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                            cwd=ROOT, env=env).returncode
        records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    worst: dict[str, float] = {}
    for r in records:
        pick = min if r["name"] in AT_LEAST else max
        worst[r["name"]] = pick(worst.get(r["name"], r["value"]), r["value"])
    print()
    ok = report(worst, {k: b for k, (b, _) in BUDGETS.items()}, AT_LEAST)
    if rc:
        print(f"the timed tests failed (pytest exit code {rc}): their measures may be missing")
    return 0 if ok and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
