"""Figures: per-step mask time and live Earley items; benchmark bars; pruning curves."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from .peers import ENGINES, LABELS  # noqa: E402
from engines.common.figures import subplots

COLORS = dict(zip(ENGINES, ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]))


def step_figure(res: dict):
    fig, (a, b) = subplots(1, 2, figsize=(11, 3.6))
    for k, rows in enumerate(res["passes"]):
        if not rows:
            continue
        x = [r["step"] for r in rows]
        a.plot(x, [max(r["mask_us"], 0.1) for r in rows], marker=".", lw=1,
               label=f"pass {k + 1} (mean {res['mean_us'][k]:.0f} µs, hits {100 * res['hit_rate'][k]:.0f}%)")
    a.set_yscale("log")
    a.set_xlabel("decoding step")
    a.set_ylabel("mask time (µs)")
    a.set_title("Mask time per step")
    a.legend(fontsize=8)
    rows = res["passes"][0]
    if rows:
        x = [r["step"] for r in rows]
        b.plot(x, [r["items_before"] for r in rows], color="0.6", lw=1, label="items before pruning")
        b.plot(x, [r["items_after"] for r in rows], color="#d62728", lw=1.5, label="items after pruning")
        b2 = b.twinx()
        b2.step(x, [r["sets_after"] for r in rows], color="#1f77b4", lw=1, where="post")
        b2.set_ylabel("Earley sets kept", color="#1f77b4")
    b.set_xlabel("decoding step")
    b.set_ylabel("live Earley items")
    b.set_title("Dynamic pruning")
    b.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def benchmark_figure(rows: list[dict], vocab: str):
    ok = [r for r in rows if r.get("status") == "ok" and r.get("cold_mean_ms") is not None]
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    engines = [e for e in ENGINES if any(r["engine"] == e for r in rows)]
    fig, axes = subplots(1, 3, figsize=(14, 3.8))
    metrics = [("compile_s", "compile (s)"), ("cold_mean_ms", "cold mean mask (ms)"), ("warm_mean_ms", "warm mean mask (ms)")]
    width = 0.8 / max(len(engines), 1)
    for ax, (key, title) in zip(axes, metrics):
        for j, e in enumerate(engines):
            vals = []
            for w in workloads:
                hit = [r for r in ok if r["engine"] == e and r["workload"] == w]
                vals.append(hit[0][key] if hit and hit[0].get(key) else np.nan)
            ax.bar(np.arange(len(workloads)) + j * width, vals, width, color=COLORS.get(e), label=LABELS.get(e, e))
        ax.set_xticks(np.arange(len(workloads)) + width * (len(engines) - 1) / 2, workloads, rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Teacher-forced replay, vocabulary {vocab} (missing bar: unsupported or rejected)", fontsize=10)
    fig.tight_layout()
    return fig


def pruning_figure(trace_on: list[int], trace_off: list[int], depth: list[int]):
    fig, ax = subplots(figsize=(7, 3.4))
    ax.plot(trace_off, color="0.5", label="pruning off")
    ax.plot(trace_on, color="#d62728", label="pruning on (ZapFormat)")
    ax2 = ax.twinx()
    ax2.step(range(len(depth)), depth, color="#1f77b4", alpha=0.4, where="post")
    ax2.set_ylabel("open nesting depth", color="#1f77b4")
    ax.set_xlabel("byte")
    ax.set_ylabel("live Earley items")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("Depth-6 nested JSON: live items per byte")
    fig.tight_layout()
    return fig
