"""Figures of the EMLoC tab and results page (matplotlib only: no torch)."""
from __future__ import annotations

import numpy as np

from engines.common.figures import subplots

COLORS = {"emloc": "#1f77b4", "full": "#7f7f7f", "truncation": "#d62728", "uniform": "#ff7f0e",
          "random": "#9467bd", "pyramid": "#2ca02c", "one_shot": "#17becf",
          "snapkv": "#8c564b", "streamingllm": "#e377c2", "knorm": "#bcbd22"}


def memory_figure(res: dict):
    """Retained fraction per layer × chunk (left) and kept tokens per layer (right)."""
    heat = np.array(res["heatmap"])
    fig, (a, b) = subplots(1, 2, figsize=(10, 3.2), gridspec_kw={"width_ratios": [3, 1.4]})
    im = a.imshow(heat, aspect="auto", cmap="viridis", vmin=0, vmax=1, origin="lower")
    a.set_xlabel("chunk")
    a.set_ylabel("layer")
    a.set_title(f"retained fraction per layer and chunk (δ = {res['delta']:g})")
    fig.colorbar(im, ax=a, fraction=0.04)
    v = res["variants"]
    per = v["emloc"]["per_layer"]
    b.barh(range(len(per)), per, color=COLORS["emloc"], label="EMLoC")
    b.axvline(res["context_tokens"], color=COLORS["full"], ls="--", label="full context")
    b.set_yticks(range(len(per)))
    b.set_xlabel("kept tokens")
    b.set_title("memory per layer")
    b.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def compare_figure(res: dict):
    """Accuracy on the episode's queries, KV memory and per-query latency of each variant."""
    v = res["variants"]
    names = list(v)
    fig, axes = subplots(1, 3, figsize=(10, 3))
    cols = [COLORS.get(n, "#333") for n in names]
    axes[0].bar(names, [100 * v[n]["correct"] / v[n]["n"] for n in names], color=cols)
    axes[0].set_title(f"accuracy on {v['emloc']['n']} queries (%)")
    axes[1].bar(names, [v[n]["kv_bytes"] / 1024 for n in names], color=cols)
    axes[1].set_title("KV memory (KiB)")
    lat = res.get("latency_s") or {}
    axes[2].bar(list(lat), [1000 * x for x in lat.values()], color=[COLORS[n] for n in lat])
    axes[2].set_title("per-query latency (ms, median)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30, labelsize=8)
    fig.tight_layout()
    return fig


def trace_figure(res: dict):
    """Every JS test of the top-down search, per chunk: accepted (filled) or refused (open), against δ."""
    fig, ax = subplots(figsize=(10, 2.8))
    x = 0
    ticks = []
    for c in res["chunks"]:
        for t in c["trace"]:
            ax.scatter(x, max(t["js"], 1e-8), marker="o", s=22, color=f"C{t['layer']}",
                       facecolors=f"C{t['layer']}" if t["accepted"] else "none")
            x += 1
        ticks.append(x)
        ax.axvline(x - 0.5, color="#ddd", lw=0.5)
    ax.axhline(res["delta"], color="k", ls="--", lw=1, label="δ")
    ax.set_yscale("log")
    ax.set_xlabel("JS tests in search order (chunk by chunk; colour = layer; filled = accepted)")
    ax.set_ylabel("JS to the unpruned chunk")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def benchmark_figure(res: dict):
    """Accuracy against retained fraction, per shot count, for every variant."""
    rows = res["rows"]
    fig, axes = subplots(1, len(rows), figsize=(5 * len(rows), 3.4), squeeze=False)
    for ax, (n, r) in zip(axes[0], rows.items()):
        for v, x in r.items():
            ax.scatter(100 * x["retained"], 100 * x["accuracy"], s=60, color=COLORS.get(v, "#333"),
                       marker="^" if v in ("snapkv", "streamingllm", "knorm") else "o",
                       label=res["labels"].get(v, v))
        ax.set_xlabel("retained demonstration KV tokens (%)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{n} shots")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig
