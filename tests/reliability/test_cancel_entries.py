"""Every long-running entry point stops within 10 s of its cancel flag (issue 18: "test each entry").

Each registry entry is started through the job machinery (``registry.run`` with a ``LocalContext``, as the
inline backend and, with a ``CeleryContext``, the worker run it), cancelled once it is inside its loop, and
timed; ``tests/reliability/cancel_entries.py`` holds the cases and the runner. A new entry without a case
fails ``test_every_entry_has_a_case``. ``make test`` runs the entries that start quickly; ``make cancel``
runs all of them and writes ``docs/reliability-cancel.tsv``.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.reliability.cancel_entries import CASES, TSV_HEAD, check, registry_entries, run_case, tsv_row

REPORT = os.environ.get("PAPERLAB_CANCEL_REPORT", "")
_ROWS: list[str] = []


def test_every_entry_has_a_case():
    keys = registry_entries()
    missing = [k for k in keys if k not in CASES]
    assert not missing, (f"no cancellation case for {', '.join(missing)}: add one to CASES in "
                         "tests/reliability/cancel_entries.py (parameters that run longer than 10 s, or bounded=...)")
    stale = [k for k in CASES if k not in keys]
    assert not stale, f"cases for entries the registry no longer has: {', '.join(stale)}"


def _entries():
    for key in registry_entries():
        case = CASES.get(key)
        marks = [] if case is not None and case.quick else [pytest.mark.cancel_full]
        if case is not None and case.known_miss:
            marks.append(pytest.mark.xfail(reason=case.known_miss, strict=False))
        yield pytest.param(key, marks=marks, id=key)


@pytest.fixture(scope="module")
def report():
    yield _ROWS.append
    if REPORT and _ROWS:
        Path(REPORT).parent.mkdir(parents=True, exist_ok=True)
        Path(REPORT).write_text(TSV_HEAD + "".join(sorted(_ROWS)))


@pytest.mark.parametrize("key", list(_entries()))
def test_entry_stops_within_10_s_of_its_cancel_flag(key, report):
    case = CASES.get(key)
    assert case is not None, f"no cancellation case for {key} (see test_every_entry_has_a_case)"
    if case.skip:
        pytest.skip(case.skip)
    out = run_case(key, case)
    report(tsv_row(out))
    print(f"{key}: {out.outcome}; first progress {out.started_s:.1f} s, flag at {out.cancel_at_s:.1f} s "
          f"({out.fraction:.0%}), stopped {out.stop_s:.2f} s later")
    why = check(out, case)
    assert why is None, why
