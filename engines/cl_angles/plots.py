"""Figures of the forgetting-vs-angle experiments (matplotlib only), shared by the tab and ``reproduce``.

Every function takes a result dict (the JSON form of the entry point's result) and returns a figure.
"""
from __future__ import annotations

import math
from engines.common.figures import colormap, subplots

COLORS = {"cl": "#d62728", "replay": "#1f77b4", "ewc": "#2ca02c", "replay_ewc": "#9467bd"}
SEL_COLORS = {"random": "#7f7f7f", "mid": "#ff7f0e", "small": "#1f77b4", "big": "#2ca02c", "herding": "#9467bd"}
CLASS_COLORS = ("#1f77b4", "#d62728")  # j = −1, j = +1



def _timeline(ax, epochs: list[int], e1: int) -> list[float]:
    """x positions on a log scale per task: task 1 on log₁₀(1 + e), task 2 after it on log₁₀(1 + e − E₁);
    sets ticks at 0, 1, 10, 100, … epochs of each task and marks the switch."""
    off = math.log10(1 + e1)
    xs = [math.log10(1 + e) if e <= e1 else off + math.log10(1 + e - e1) for e in epochs]
    ticks, labels = [], []
    for base, end in ((0.0, e1), (off, max(epochs[-1] - e1, 0))):
        k = 0
        while 10 ** k <= max(end, 1):
            ticks.append(base + math.log10(1 + 10 ** k))
            labels.append(f"{10 ** k:g}")
            k += 1
    ax.set_xticks(ticks, labels, fontsize=7)
    ax.axvline(off, color="k", lw=0.8, ls=":")
    ax.set_xlabel("epoch of task 1 | epoch of task 2 (log scale)")
    return xs


def curves_figure(res: dict):
    """Task-1 and task-2 test error over both tasks for every variant, and the final errors."""
    fig, (ax, bx) = subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [2.2, 1]})
    ep = _timeline(ax, res["epochs"], res["epochs1"])
    for v, lab in zip(res["variants"], res["labels"]):
        ax.plot(ep, res["task1_error"][v], color=COLORS[v], lw=2, label=f"{lab}: task 1")
        ax.plot(ep, res["task2_error"][v], color=COLORS[v], lw=1, ls="--", alpha=0.7)
    ax.set_ylim(-0.03, 1.05)
    ax.set_ylabel("test error")
    ax.set_title(f"θ = {res['angle']:g}° (cos θ = {res['cos_theta']:.2f}); solid: task 1, dashed: task 2", fontsize=10)
    ax.legend(fontsize=8, loc="center left")
    ax.grid(alpha=0.3)
    vs = res["variants"]
    x = range(len(vs))
    bx.bar([i - 0.2 for i in x], [res["forgetting"][v] for v in vs], 0.4, color=[COLORS[v] for v in vs],
           label="task 1 (forgetting)")
    bx.bar([i + 0.2 for i in x], [res["task2_final"][v] for v in vs], 0.4, color=[COLORS[v] for v in vs],
           alpha=0.35, hatch="//", label="task 2")
    bx.set_xticks(list(x), res["labels"], fontsize=8)
    bx.set_ylim(0, 1.05)
    bx.axhline(0.5, color="k", lw=0.6, ls=":")
    bx.set_ylabel("test error after task 2")
    bx.set_title(f"{res['regime']} forgetting", fontsize=10)
    bx.legend(fontsize=7)
    fig.tight_layout()
    return fig


def neurons_figure(res: dict, variant: str = "cl"):
    """The filters in the (μ₁, μ₂) plane and their signal/noise coefficients γ, ρ over training."""
    variant = variant if variant in res["traces"] else res["variants"][0]
    tr = res["traces"][variant]
    m = res["m"]
    fig, (ax, bx, cx) = subplots(1, 3, figsize=(13, 4.0), gridspec_kw={"width_ratios": [1, 1.3, 1.3]})
    mu1, mu2 = res["mu1"], res["mu2"]
    lim = 1.15 * max(1e-9, max(abs(c) for xy in tr["xy_final"] + tr["xy_task1"] for c in xy))
    for mu, name in ((mu1, "μ₁"), (mu2, "μ₂")):
        s = 0.9 * lim / max(1e-9, math.hypot(*mu))
        ax.annotate("", (mu[0] * s, mu[1] * s), (0, 0), arrowprops=dict(arrowstyle="->", lw=2, color="k"))
        ax.text(mu[0] * s * 1.05, mu[1] * s * 1.05, name, fontsize=11)
    for f, (a, b) in enumerate(zip(tr["xy_task1"], tr["xy_final"])):
        c = CLASS_COLORS[f // m]
        ax.annotate("", b, a, arrowprops=dict(arrowstyle="->", lw=0.8, color=c, alpha=0.6))
        ax.plot(*a, "o", mfc="none", mec=c, ms=5)
        ax.plot(*b, "o", color=c, ms=5)
        if f in tr["mu2_group"]:
            ax.plot(*b, "s", mfc="none", mec="k", ms=9)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.axhline(0, color="#ccc", lw=0.6)
    ax.axvline(0, color="#ccc", lw=0.6)
    ax.set_aspect("equal")
    ax.set_xlabel("⟨w, e₁⟩")
    ax.set_ylabel("⟨w, e₂⟩")
    ax.set_title("filters: ○ after task 1 → ● after task 2\nblue j = −1, red j = +1, □ μ₂-learners", fontsize=9)
    ep = _timeline(bx, res["epochs"], res["epochs1"])
    _timeline(cx, res["epochs"], res["epochs1"])
    for f in range(2 * m):
        c = CLASS_COLORS[f // m]
        lw = 2.0 if (f in tr["mu1_group"] or f in tr["mu2_group"]) else 0.7
        bx.plot(ep, tr["gamma1"][f], color=c, lw=lw, alpha=0.9)
        bx.plot(ep, tr["gamma2"][f], color=c, lw=lw, ls="--", alpha=0.9)
        cx.plot(ep, tr["rho_max"][f], color=c, lw=0.8, alpha=0.8)
    for x in (bx, cx):
        x.grid(alpha=0.3)
    bx.set_ylabel("signal coefficient")
    bx.set_title(f"{dict(zip(res['variants'], res['labels']))[variant]}: γ_(j,r,1) solid, γ_(j,r,2) dashed "
                 "(thick: μ₁ / μ₂ groups)", fontsize=9)
    cx.set_ylabel("max_i ρ_(j,r,i)")
    cx.set_title("noise memorised (largest ρ per filter)", fontsize=9)
    fig.tight_layout()
    return fig


def sweep_figure(res: dict):
    """Task-1 error after task 2 against θ, seed bands, the knees θ_c, benign / harmful regions."""
    import numpy as np

    fig, ax = subplots(figsize=(8.5, 4.4))
    a = np.array(res["angles"])
    by = {c["variant"]: c for c in res["curves"]}
    k_cl = by["cl"]["knee"] if "cl" in by else None
    if k_cl is not None:
        ax.axvspan(a.min(), k_cl, color="#2ca02c", alpha=0.08, lw=0)
        ax.axvspan(k_cl, a.max(), color="#d62728", alpha=0.08, lw=0)
        ax.text(a.min() + 2, 0.92, "benign (CL)", color="#2ca02c", fontsize=9)
        ax.text(k_cl + 2, 0.92, "harmful (CL)", color="#d62728", fontsize=9)
    if res.get("replay_bound") is not None:
        ax.axvline(res["replay_bound"], color="#1f77b4", ls="--", lw=1)
        ax.text(res["replay_bound"], 0.6, " theory: replay benign\n up to cos θ = −(C₂+1)/2", fontsize=7,
                color="#1f77b4", rotation=90, va="center")
    for c in res["curves"]:
        m, s = np.array(c["mean"]), np.array(c["std"])
        col = COLORS[c["variant"]]
        knee = "" if c["knee"] is None else f", θ_c = {c['knee']:g}°"
        ax.plot(a, m, "o-", ms=3, color=col, lw=2, label=c["label"] + knee)
        ax.fill_between(a, np.clip(m - s, 0, 1), np.clip(m + s, 0, 1), color=col, alpha=0.15)
        if c["knee"] is not None:
            ax.axvline(c["knee"], color=col, lw=0.8, ls=":")
    ax.axhline(0.5, color="k", lw=0.5, ls=":")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("angle θ between μ₁ and μ₂ (degrees)")
    ax.set_ylabel("task-1 test error after task 2 (forgetting)")
    e1, e2 = res["epochs"]
    ax.set_title(f"{res['seeds']} seed(s), {e1} + {e2} epochs, replay {100 * res['buffer_frac']:.0f} % of task 1",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.88))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def bins_figure(res: dict):
    """Task-1 accuracy after task 2 against the replay-buffer size, one curve per task angle
    (the layout of the paper's MNIST figure), and the mean forgetting per angle."""
    import numpy as np

    fig, (ax, bx) = subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.6, 1]})
    cmap = colormap("viridis")
    bins = sorted(res["bins"], key=lambda b: b["angle"])
    for i, b in enumerate(bins):
        col = cmap(i / max(1, len(bins) - 1))
        acc = 1 - np.array(b["forgetting"])
        ax.errorbar(res["buffer_sizes"], acc, yerr=b["std"], fmt="o-", ms=3, capsize=2, color=col,
                    label=f"{b['angle']:.1f}°: {b['task1']} → {b['task2']}")
    ax.set_xlabel("replay buffer size (task-1 samples added to task 2)")
    ax.set_ylabel("task-1 test accuracy after task 2")
    ax.set_title(f"{res['dataset']}: polarity tasks, {res['seeds']} seeds", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    bx.plot([b["angle"] for b in bins], [b["mean_forgetting"] for b in bins], "o-", color="k")
    for b in bins:
        bx.annotate(f"{b['mean_forgetting']:.2f}", (b["angle"], b["mean_forgetting"]), fontsize=7,
                    textcoords="offset points", xytext=(3, 3))
    bx.set_xlim(0, 180)
    bx.set_ylim(-0.03, 1.03)
    bx.set_xlabel("task angle θ (degrees)")
    bx.set_ylabel("mean task-1 error over buffer sizes")
    bx.set_title("forgetting " + ("rises" if res["increasing"] else "does not rise monotonically") + " with θ",
                 fontsize=10)
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def selection_figure(res: dict):
    """Cosine to the class prototype of every task-1 sample with each selector's picks, and the
    forgetting each buffer leaves."""
    import numpy as np

    outs = res["outcomes"]
    fig, (ax, bx) = subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.4, 1]})
    cos = np.array(res["cosines"])
    ax.hist(cos, bins=30, color="#ccc", label="all task-1 samples")
    top = ax.get_ylim()[1]
    for i, o in enumerate(outs):
        y = top * (1.02 + 0.07 * i)
        ax.plot(o["picked_cos"], [y] * len(o["picked_cos"]), "|", ms=9, mew=2, color=SEL_COLORS[o["selector"]],
                label=o["label"])
    ax.set_ylim(0, top * (1.1 + 0.07 * len(outs)))
    ax.set_xlabel(f"cosine to the class prototype ({res['feature_space']} space)")
    ax.set_ylabel("samples")
    ax.set_title(f"seed 0: {res['k_per_class']} picks per class out of {res['n_task1']} task-1 samples", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    x = np.arange(len(outs))
    bx.bar(x, [o["forgetting"] for o in outs], yerr=[o["std"] for o in outs], capsize=3,
           color=[SEL_COLORS[o["selector"]] for o in outs])
    for i, o in enumerate(outs):
        bx.plot([i] * len(o["per_seed"]), o["per_seed"], ".", color="k", ms=4)
    bx.axhline(res["no_replay"], color="#d62728", ls="--", lw=1, label=f"no replay ({res['no_replay']:.2f})")
    bx.set_xticks(x, [o["label"] for o in outs], fontsize=8, rotation=20)
    bx.set_ylabel("task-1 test error after task 2")
    bx.set_title(f"{' vs '.join(res['task1'])} → {' vs '.join(res['task2'])} ({res['dataset']}, {res['seeds']} seeds)",
                 fontsize=10)
    bx.legend(fontsize=7)
    bx.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def selection_gallery(res: dict):
    """The replayed task-1 images of seed 0, one row per selector (class 0 picks, then class 1)."""
    import numpy as np

    outs = res["outcomes"]
    imgs = np.array(res["images"], dtype=np.uint8)
    h, w = res["image_shape"]
    labels = np.array(res["labels"])
    cols = max(len(o["picked"]) for o in outs)
    fig, axes = subplots(len(outs), cols, figsize=(0.75 * cols + 1.2, 0.8 * len(outs) + 0.3), squeeze=False)
    for r, o in enumerate(outs):
        picks = sorted(o["picked"], key=lambda i: (labels[i], i))
        for c in range(cols):
            a = axes[r][c]
            a.set_xticks([])
            a.set_yticks([])
            for s in a.spines.values():
                s.set_visible(False)
            if c < len(picks):
                a.imshow(imgs[picks[c]].reshape(h, w), cmap="gray_r", vmin=0, vmax=255)
            if c == 0:
                a.set_ylabel(o["label"], fontsize=8, rotation=0, ha="right", va="center")
    fig.suptitle(f"replay buffer per selector (seed 0): {res['task1'][0]} then {res['task1'][1]}", fontsize=9)
    fig.tight_layout()
    return fig
