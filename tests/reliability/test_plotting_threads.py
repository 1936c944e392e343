"""Figures are built with matplotlib's object API only: safe from concurrent handler threads."""
from __future__ import annotations

import io
import re
import threading
from pathlib import Path

from engines.common.figures import colormap, subplots

ROOT = Path(__file__).resolve().parents[2]
# Offline, single-threaded report writers (owned by `make reproduce`), not reachable from the web app.
OFFLINE = {"reproduce.py", "results.py"}


def test_no_pyplot_in_engines_and_app():
    offenders = []
    for base in ("engines", "app"):
        for p in (ROOT / base).rglob("*.py"):
            if p.name in OFFLINE:
                continue
            text = p.read_text()
            if re.search(r"^\s*(import matplotlib\.pyplot|from matplotlib import pyplot)", text, re.M):
                offenders.append(str(p.relative_to(ROOT)))
            # A bare Figure skips figures._serialise_mathtext (the lock around the shared parser).
            if p.name != "figures.py" and re.search(r"^\s*from matplotlib\.figure import", text, re.M):
                offenders.append(str(p.relative_to(ROOT)))
    assert not offenders, f"pyplot or a bare Figure used (use engines.common.figures): {offenders}"


def _figure(i: int) -> bytes:
    fig, (ax, log_ax) = subplots(1, 2, figsize=(3, 1))
    ax.plot(range(5), [x * i for x in range(5)], color=colormap("viridis")((i % 20) / 20))
    ax.set_axis_off()
    ax.set_title(rf"$\eta_{{{i}}} \sqrt{{T}}$", fontsize=6)  # mathtext: pyplot's shared parser broke here
    # Log-axis tick labels are mathtext too ($\mathdefault{10^{0}}$), laid out by tight_layout: the
    # parser object behind them is shared by every figure, pyplot or not (broke worked examples, CI).
    log_ax.set_yscale("log")
    log_ax.plot([1, 10, 100 + i])
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=30)
    return buf.getvalue()


def test_eight_threads_ten_figures_each():
    errors, sizes = [], []

    def work(t: int) -> None:
        for i in range(10):
            try:
                sizes.append(len(_figure(t * 10 + i)))
            except Exception as e:  # noqa: BLE001 - every error counts
                errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == [], errors[:3]
    assert len(sizes) == 80 and min(sizes) > 100
