"""Figures from result dicts (matplotlib object API only; no torch, so the tab imports this at start-up)."""
from __future__ import annotations

import numpy as np
from engines.common.figures import figure as Figure

COLORS = {"rose_zero": "#c0392b", "rose_few": "#8e44ad", "seasonal_naive": "#7f8c8d", "auto_ets": "#27ae60",
          "auto_arima": "#2980b9", "scratch": "#d35400"}
FAMILY_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


def figure_array(fig: Figure, dpi: int = 90) -> np.ndarray:
    """Render a figure to an RGB array (the tab shows forecasts as images)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    fig.set_dpi(dpi)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def forecast_figure(res: dict, show: list[str] | None = None) -> Figure:
    fig = Figure(figsize=(10, 4.2))
    ax = fig.add_subplot(111)
    hist = np.asarray(res["history"])
    n0 = res["start"]
    t_hist = np.arange(n0, n0 + len(hist))
    ax.plot(t_hist, hist, color="black", lw=1.1, label="history")
    t_f = np.arange(n0 + len(hist), n0 + len(hist) + res["horizon"])
    if res.get("truth"):
        ax.plot(t_f, res["truth"], color="black", lw=1.6, ls="--", label="truth (held out)")
    for f in res["forecasts"]:
        if show is not None and f["key"] not in show:
            continue
        c = COLORS.get(f["key"], None)
        ax.plot(t_f, f["mean"], color=c, lw=1.6, label=f["label"])
        if f.get("lo") is not None and f["key"] in ("rose_zero", "rose_few", "auto_ets", "auto_arima"):
            ax.fill_between(t_f, f["lo"], f["hi"], color=c, alpha=0.12, lw=0)
    ax.axvline(t_f[0] - 0.5, color="grey", lw=0.8, ls=":")
    ax.set_title(f"{res['title']}: horizon {res['horizon']}, context {res['context']}, period m = {res['period']}",
                 fontsize=10)
    ax.set_xlabel("time step")
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


METRIC_HEADERS = ["model", "MSE (std.)", "MAE (std.)", "MASE", "seconds"]


def metrics_rows(res: dict) -> list[list]:
    rows = []
    for f in res["forecasts"]:
        m = f.get("metrics") or {}
        rows.append([f["label"], *(round(m[k], 4) if k in m else "—" for k in ("mse", "mae", "mase")), f["seconds"]])
    return rows


def register_figure(res: dict) -> Figure:
    fig = Figure(figsize=(10, 3.6))
    reg = res.get("register_view")
    if not reg:
        ax = fig.add_subplot(111)
        ax.text(0.5, 0.5, "this model has no register", ha="center", va="center")
        ax.axis("off")
        return fig
    ax1, ax2 = fig.add_subplot(121), fig.add_subplot(122)
    d = np.asarray(reg["distances"])
    colors = ["#c0392b" if i in reg["topk"] else "#bdc3c7" for i in range(len(d))]
    ax1.bar(np.arange(len(d)), d, color=colors)
    ax1.set_xlabel("register code")
    ax1.set_ylabel("squared distance to the query")
    ax1.set_title(f"top-{len(reg['topk'])} codes selected: {reg['topk']}", fontsize=10)
    pca = np.asarray(reg["pca"])
    fams = reg.get("family") or [""] * len(pca)
    names = sorted({f for f in fams if f})
    for j, name in enumerate(names):
        idx = [i for i, f in enumerate(fams) if f == name]
        ax2.scatter(pca[idx, 0], pca[idx, 1], s=28, color=FAMILY_COLORS[j % 6], label=name.replace("_", " "))
    unused = [i for i, f in enumerate(fams) if not f]
    if unused:
        ax2.scatter(pca[unused, 0], pca[unused, 1], s=18, color="#dddddd", label="unused")
    ax2.scatter(pca[reg["topk"], 0], pca[reg["topk"], 1], s=120, facecolors="none", edgecolors="black", lw=1.5)
    ax2.scatter([reg["query"][0]], [reg["query"][1]], marker="*", s=180, color="black", label="this series")
    ax2.set_title("codebook (PCA), coloured by the synthetic domain using each code most", fontsize=9)
    ax2.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def mask_figure(res: dict) -> Figure:
    fig = Figure(figsize=(10, 3.4))
    ax1, ax2 = fig.add_subplot(121), fig.add_subplot(122)
    spec = np.asarray(res["spectrum"])
    kept = np.asarray(res["kept"])
    k = np.arange(len(spec))
    ax1.bar(k[kept], spec[kept], color="#2980b9", width=1.0, label="kept")
    ax1.bar(k[~kept], spec[~kept], color="#e74c3c", width=1.0, alpha=0.5, label="zeroed")
    ax1.set_yscale("log")
    ax1.set_xlabel("rFFT bin")
    ax1.set_title(f"τ = {res['tau']:.2f}: {res['band']} band zeroed (cut at bin {res['cut']})", fontsize=10)
    ax1.legend(fontsize=8)
    ax2.plot(res["x"], color="black", lw=1, label="context (standardised)")
    ax2.plot(res["view"], color="#c0392b", lw=1.2, label="masked view (inverse FFT)")
    ax2.legend(fontsize=8)
    ax2.set_title("the view the encoder sees", fontsize=10)
    fig.tight_layout()
    return fig


def loss_figure(curve: list[dict]) -> Figure:
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot(111)
    if curve:
        steps = [r["step"] for r in curve]
        for key in [k for k in curve[0] if k not in ("step",)]:
            ax.plot(steps, [r[key] for r in curve], label=key, lw=1.5 if key == "total" else 1)
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_title("pre-training losses")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def ablation_figure(res: dict) -> Figure:
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot(111)
    names = list(res["mean_mse"])
    for i, n in enumerate(names):
        vals = res["mean_mse"][n]
        ax.scatter([i] * len(vals), vals, color="grey", s=18)
        ax.bar(i, np.mean(vals), color=["#c0392b", "#2980b9", "#7f8c8d"][i % 3], alpha=0.6)
    ax.set_xticks(range(len(names)), [n.replace("_", " ") for n in names])
    ax.set_ylabel("zero-shot MSE (held-out mean)")
    ax.set_title("ablation: mean over seeds (dots = seeds)", fontsize=10)
    fig.tight_layout()
    return fig
