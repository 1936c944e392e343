"""Figures of the TailOPT experiments (matplotlib object API only), shared by the tab and ``reproduce``.

Imports only numpy and (lazily) matplotlib, no torch, so the tab can render results in the web process.
"""
from __future__ import annotations

import numpy as np

from engines.common.figures import figure as Figure

from .params import TASK_LABELS

COLORS = {"fedavg": "#1f77b4", "fedavg_clip": "#17becf", "fedadam": "#ff7f0e", "fedyogi": "#bcbd22",
          "fedadagrad": "#8c564b", "local_adam": "#e377c2", "adam2": "#9467bd", "diloco": "#7f7f7f",
          "adam_tailopt": "#2ca02c", "adagrad_tailopt": "#98df8a", "rmsprop_tailopt": "#aec7e8",
          "bi2clip": "#d62728"}


def loss_figure(res: dict, title: str | None = None):
    """Excess loss (or validation loss) against rounds for all methods on one log axis.

    A diverged run is drawn up to its last finite round and marked with ×; it is never drawn flat."""
    fig = Figure(figsize=(9, 4.4))
    ax = fig.subplots()
    floor = np.inf
    for r in res["runs"]:
        t = np.array(r["rounds"], float)
        y = np.array([np.nan if v is None else v for v in r["excess"]], float)
        ok = np.isfinite(y)
        if ok.any():
            floor = min(floor, np.nanmin(np.where(y > 0, y, np.nan)) if (y[ok] > 0).any() else floor)
        lab = r["label"]
        if r["diverged_at"] is not None:
            lab += f" — diverged at round {r['diverged_at']}"
        elif r["final_excess"] is not None:
            lab += f" — final {r['final_excess']:.3g}"
        col = COLORS.get(r["method"], None)
        lw = 2.4 if r["method"] == "bi2clip" else 1.4
        ax.plot(t[ok], np.maximum(y[ok], 1e-12), color=col, lw=lw, label=lab)
        if r["diverged_at"] is not None and ok.any():
            last = np.flatnonzero(ok)[-1]
            ax.plot(t[last], max(y[last], 1e-12), "x", color=col, ms=11, mew=2.5)
    ax.set_yscale("log")
    ax.set_xlabel("communication round t")
    ax.set_ylabel("excess loss F(x_t) − F*" if res.get("has_optimum", True) else "validation loss")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper right")
    noise = res["noise"] if res["noise"] != "student_t" else f"Student-t ν = {res['tail_index']:g}"
    ax.set_title(title or f"{TASK_LABELS.get(res['task'], res['task'])}, {noise} noise, N = {res['workers']}, "
                          f"z = {res['local_steps']}", fontsize=10)
    fig.tight_layout()
    return fig


def table_rows(res: dict) -> list[list]:
    """State / communication table: counted extra optimiser floats per parameter and floats sent per round."""
    d = res["dim"]
    rows = []
    for r in res["runs"]:
        fin = "diverged" if r["final_excess"] is None else float(f"{r['final_excess']:.4g}")
        rows.append([r["label"], fin, r["state_worker"], r["state_server"],
                     f"{r['floats_per_round'] / d:g}·d = {int(r['floats_per_round'])}",
                     int(4 * r["floats_per_round"]), round(100 * r["clip_in"][0], 1), round(100 * r["clip_in"][1], 1),
                     f"η_ℓ {r['hyper']['lr_in']:.2g}, η {r['hyper']['lr_out']:.2g}, u {r['hyper']['u_in']:.2g}, "
                     f"ũ {r['hyper']['u_out']:.2g}"])
    return rows


TABLE_HEADERS = ["method", "final excess loss", "state/param worker", "state/param server", "floats/round/worker",
                 "bytes fp32", "clipped ↓ %", "raised ↑ %", "hyper-parameters"]


def clip_figure(res: dict):
    """The BiClip map (in units of the gradient scale) and the per-round fractions of clipped coordinates."""
    fig = Figure(figsize=(9, 3.4))
    a1, a2 = fig.subplots(1, 2)
    bc = next((r for r in res["runs"] if r["method"] == "bi2clip"), None)
    h = bc["hyper"] if bc else {"d_in": 0.1, "u_in": 10.0}
    d, u = h["d_in"], h["u_in"]
    x = np.linspace(-1.5 * u, 1.5 * u, 2001)
    y = np.sign(x) * np.minimum(np.maximum(np.abs(x), d), u)
    a1.plot(x, x, ":", color="grey", lw=1, label="identity")
    a1.plot(x, y, color=COLORS["bi2clip"], lw=2, label=f"BiClip, d = {d:.3g}, u = {u:.3g}")
    a1.axhline(0, color="k", lw=0.5)
    a1.set_xlabel("gradient coordinate" + (" (× scale)" if h.get("auto_thresholds", True) else ""))
    a1.set_title("BiClip map: shrink above u, raise below d", fontsize=9)
    a1.legend(fontsize=7)
    any_curve = False
    for r in res["runs"]:
        if r["clip_in_curve"] and (np.array(r["clip_in_curve"]).sum() > 0):
            c = np.array(r["clip_in_curve"])
            t = np.array(r["rounds"])[-len(c):]
            col = COLORS.get(r["method"])
            a2.plot(t, 100 * c[:, 0], color=col, lw=1.4, label=f"{r['label']}: down")
            a2.plot(t, 100 * c[:, 1], "--", color=col, lw=1.2, label=f"{r['label']}: up")
            any_curve = True
    a2.set_xlabel("round")
    a2.set_ylabel("% of inner coordinates")
    a2.set_title("clip fractions per round (BiClip / L2 clip)", fontsize=9)
    if any_curve:
        a2.legend(fontsize=6)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def noise_figure(nr: dict):
    """Histogram of |ξ| (stochastic − full gradient, per coordinate) on log-log axes, with a Gaussian of the
    same median for reference and the Hill tail-index estimate."""
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    b = np.array(nr["bins"])
    mid = np.sqrt(b[1:] * b[:-1])
    w = np.diff(b)
    dens = np.array(nr["counts"]) / (w * max(nr["n"], 1))
    gd = np.array(nr["gaussian_counts"]) / (w * max(nr["n"], 1))
    ax.loglog(mid, np.where(dens > 0, dens, np.nan), "o-", ms=3, color="#d62728", label="gradient noise |ξ|")
    ax.loglog(mid, np.where(gd > 0, gd, np.nan), "--", color="grey", label="Gaussian, same median")
    ax.set_xlabel("|ξ| per coordinate")
    ax.set_ylabel("density")
    ax.set_title(f"{nr['noise']} noise: Hill tail index α̂ = {nr['hill_alpha']:.2f} (top {nr['hill_k']})",
                 fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
