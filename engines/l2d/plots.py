"""Figures (matplotlib object API: handlers run in threads)."""
from __future__ import annotations

import numpy as np
from engines.common.figures import figure as Figure

COLORS = {"midpoint": "#1f77b4", "euler": "#ff7f0e", "heun2": "#2ca02c", "rk4": "#9467bd",
          "dopri5": "#d62728", "bosh3": "#8c564b", "adaptive_heun": "#e377c2", "fehlberg2": "#7f7f7f"}


def scaling_figure(bench: dict) -> Figure:
    """Accuracy against diffusion steps N and against velocity evaluations per token."""
    fig = Figure(figsize=(11, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    for solver, c in bench["curves"].items():
        acc = np.array(c["acc"]) * 100
        ax1.errorbar(c["steps"], acc, yerr=np.array(c["std"]) * 100, marker="o", capsize=3,
                     color=COLORS.get(solver), label=f"L2D {solver}")
        ax2.plot(c["nfe_per_token"], acc, marker="o", color=COLORS.get(solver), label=f"L2D {solver}")
    for solver, rows in bench.get("adaptive", {}).items():
        ax2.scatter([r["nfe_per_token"] for r in rows], [r["acc"] * 100 for r in rows], marker="*", s=120,
                    color=COLORS.get(solver), label=f"{solver} (tol " + ", ".join(f"{r['tolerance']:g}" for r in rows) + ")",
                    zorder=3)
    b = bench["baselines"]
    lines = [("base LM", b["base"], "k", "--")]
    if "lora" in b:
        lines.append((f"LoRA ({b.get('lora_params') or '?'} params)", b["lora"], "#17becf", ":"))
    if "self_consistency" in b:
        k = max(b["self_consistency"], key=int)
        lines.append((f"self-consistency@{k}", b["self_consistency"][k], "#bcbd22", "-."))
    for ax in (ax1, ax2):
        for label, v, col, ls in lines:
            ax.axhline(v * 100, color=col, ls=ls, lw=1.2, label=label)
        ax.set_ylabel("exact match (%)")
        ax.grid(alpha=0.3)
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("ODE grid points N per token (N = 1: base LM)")
    ax1.set_title(f"Accuracy vs diffusion steps ({bench['n_problems']} held-out problems)")
    ax2.set_xlabel("velocity evaluations per token (NFE)")
    ax2.set_title("Accuracy vs compute")
    ax2.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def adaptive_figure(bench: dict) -> Figure:
    fig = Figure(figsize=(10, 3.8))
    ax1, ax2 = fig.subplots(1, 2)
    for solver, rows in bench.get("adaptive", {}).items():
        tol = [r["tolerance"] for r in rows]
        ax1.plot(tol, [r["nfe_per_token"] for r in rows], marker="o", color=COLORS.get(solver), label=solver)
        last = rows[-1]
        ks = sorted(last["nfe_by_carries"], key=int)
        ax2.plot([int(k) for k in ks], [last["nfe_by_carries"][k] for k in ks], marker="s",
                 color=COLORS.get(solver), label=f"{solver}, tol {last['tolerance']:g}")
    ax1.set_xscale("log")
    ax1.invert_xaxis()
    ax1.set_xlabel("tolerance (rtol = atol), tighter →")
    ax1.set_ylabel("NFE per token")
    ax1.set_title("Adaptive solvers choose their compute")
    ax2.set_xlabel("carries in the problem")
    ax2.set_ylabel("NFE per token")
    ax2.set_title("NFE by difficulty")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def guidance_figure(bench: dict) -> Figure:
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    g = bench["guidance"]
    ax.plot([r["w"] for r in g], [r["acc"] * 100 for r in g], marker="o")
    ax.axhline(bench["guidance_no_label_acc"] * 100, color="gray", ls="--", label="null class only")
    ax.set_xlabel("guidance weight w")
    ax.set_ylabel("exact match (%) at N = 8")
    ax.set_title("Classifier-free guidance on the task label")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def trajectory_figure(res: dict) -> Figure:
    """Per answer token: top-5 probabilities across ODE time (heat-map), and the latent path in 2-D PCA."""
    digits = res["digits"]
    vocab = res["vocab"]
    n = len(digits)
    fig = Figure(figsize=(2.6 * n, 5.4))
    axes = fig.subplots(2, n, squeeze=False)
    for k, d in enumerate(digits):
        ax = axes[0][k]
        if d["top5"]:
            mat = np.zeros((len(vocab), len(d["top5"])))
            for j, ev in enumerate(d["top5"]):
                for tok, p in ev:
                    mat[vocab.index(tok), j] = p
            ax.imshow(mat, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ticks = list(range(len(d["times"])))
            step = max(1, len(ticks) // 4)
            ax.set_xticks(ticks[::step], [f"{d['times'][i]:.2f}" for i in ticks[::step]], fontsize=7)
        else:
            ax.text(0.5, 0.5, "base LM\n(no ODE)", ha="center", va="center", transform=ax.transAxes)
        ax.set_yticks(range(len(vocab)), vocab, fontsize=7)
        ax.set_title(f"token {k + 1}: '{d['token']}' (truth '{d['truth']}')\nNFE {d['nfe']}", fontsize=9)
        ax.set_xlabel("ODE time t", fontsize=8)
        ax2 = axes[1][k]
        an = np.array(d["anchors"])
        ax2.scatter(an[:, 0], an[:, 1], c="lightgray", s=30)
        for i, (x, y) in enumerate(an):
            ax2.annotate(vocab[i], (x, y), fontsize=7, color="gray")
        path = np.array(d["path"])
        if len(path):
            ax2.plot(path[:, 0], path[:, 1], "-o", ms=3, color="#d62728", lw=1)
            ax2.scatter(path[-1:, 0], path[-1:, 1], marker="*", s=120, color="#d62728", zorder=3)
        ax2.set_title("latent x_t (PCA of φ)", fontsize=8)
        ax2.tick_params(labelsize=6)
    fig.tight_layout()
    return fig


def training_figure(manifest: dict) -> Figure:
    tr = manifest.get("training", {})
    fig = Figure(figsize=(11, 3.6))
    ax1, ax2 = fig.subplots(1, 2)
    if "base" in tr:
        c = tr["base"]["curve"]
        ax1.plot([r["step"] for r in c], [r["val_acc"] * 100 for r in c], label="base LM (greedy)")
    if "l2d" in tr:
        c = tr["l2d"]["curve"]
        ax1.plot([r["step"] for r in c], [r["val_acc_n8"] * 100 for r in c], label="L2D, N = 8 midpoint")
        bins = tr["l2d"]["t_bins"]
        for r in c[:: max(1, len(c) // 5)] + [c[-1]]:
            ax2.plot([(a + b) / 2 for a, b in zip(bins[:-1], bins[1:])], r["loss_by_t"], marker="o",
                     label=f"step {r['step']}")
    if "lora" in tr:
        c = tr["lora"]["curve"]
        ax1.plot([r["step"] for r in c], [r["val_acc"] * 100 for r in c], label=f"LoRA r = {tr['lora']['rank']}")
    ax1.set_xlabel("optimizer step")
    ax1.set_ylabel("validation exact match (%)")
    ax1.set_title("Training (validation split)")
    ax2.set_xlabel("t (noise level of the target latent)")
    ax2.set_ylabel("L2D cross-entropy")
    ax2.set_title("L2D loss by t-bin")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
