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
    ok = not torch_imported
    print(f"{'measure':<34} {'value':>8} {'budget':>8}")
    for k, budget in BUDGETS.items():
        within = m[k] <= budget
        ok &= within
        print(f"{k:<34} {m[k]:8.2f} {budget:8.2f}  {'ok' if within else 'OVER BUDGET'}")
    print("torch imported at start-up: " + ("YES (must not)" if torch_imported else "no"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
