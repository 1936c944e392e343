"""``make bench``: start-up budgets of the UI, measured in a fresh process and reported against budgets.

CPU seconds (all threads of the process) rather than wall time, so another job on the machine inflates the
figure less; still, run it on an idle machine. Exit code 1 when a budget is exceeded.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = {"gradio import (CPU s)": 5.0, "our imports + all tabs (CPU s)": 4.0, "total to a built UI (wall s)": 10.0}

CODE = """
import json, sys, time
w0, t0 = time.perf_counter(), time.process_time()
import gradio
t1 = time.process_time()
from app.ui import build_demo
build_demo()
t2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"gradio import (CPU s)": t1 - t0, "our imports + all tabs (CPU s)": t2 - t1,
                  "total to a built UI (wall s)": w2 - w0, "torch imported": "torch" in sys.modules}))
"""


def main() -> int:
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode:
        print(out.stderr, file=sys.stderr)
        return 1
    m = json.loads(out.stdout.strip().splitlines()[-1])
    torch_imported = m.pop("torch imported")
    ok = report(m, BUDGETS)
    print("torch imported at start-up: " + ("YES (must not)" if torch_imported else "no"))
    return 0 if ok and not torch_imported else 1


def report(measures: dict[str, float], budgets: dict[str, float], at_least: frozenset[str] = frozenset()) -> bool:
    """Print every budgeted measure against its budget (an upper bound; a lower one for names in ``at_least``);
    False when one is over budget or was not measured. Shared with benchmarks/timed_tests.py."""
    ok = True
    width = max(map(len, budgets)) + 2
    print(f"{'measure':<{width}} {'value':>8} {'budget':>10}")
    for k, budget in budgets.items():
        bound = f"{'≥' if k in at_least else '≤'} {budget:.2f}"
        if k not in measures:
            ok = False
            print(f"{k:<{width}} {'—':>8} {bound:>10}  NOT MEASURED")
            continue
        within = measures[k] >= budget if k in at_least else measures[k] <= budget
        ok &= within
        verdict = "ok" if within else "BELOW BUDGET" if k in at_least else "OVER BUDGET"
        print(f"{k:<{width}} {measures[k]:8.2f} {bound:>10}  {verdict}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
