"""Figures (matplotlib only), shared by the tab and ``reproduce``."""
from __future__ import annotations

import numpy as np
from engines.common.figures import colormap, subplots

COLORS = {"scg": "#d62728", "greedy": "#1f77b4", "residual_random_greedy": "#17becf",
          "distorted_local_search": "#2ca02c", "continuous_greedy": "#9467bd", "random": "#7f7f7f",
          "brute_force": "black"}



def smooth(y, w: int) -> np.ndarray:
    y = np.asarray(y, float)
    if w <= 1 or y.size < 3:
        return y
    c = np.cumsum(np.insert(y, 0, 0.0))
    out = np.empty_like(y)
    for i in range(y.size):
        lo = max(0, i - w + 1)
        out[i] = (c[i + 1] - c[lo]) / (i + 1 - lo)
    return out


def value_figure(res: dict):
    """Objective value against the number of f-evaluations (log-x): whole runs (left), final values (right)."""
    fig, (ax, az) = subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.25, 1]})
    for r in res["runs"]:
        m, col = r["method"], COLORS[r["method"]]
        x = np.maximum(np.array(r["curve_evals"], float), 1.0)
        y = np.array(r["curve_values"], float)
        lab = f"{r['label']}: {r['value']:.4g} ({r['evals']:,} evals)"
        if m == "brute_force":
            for a in (ax, az):
                a.axhline(r["value"], color=col, ls=":", lw=1.2)
            az.plot(x[-1], r["value"], "D", color=col, ms=7, label=f"OPT = {r['value']:.4g} ({r['evals']:,} evals)")
            continue
        if m in ("scg", "continuous_greedy"):  # relaxed value along the run, then the rounded set
            ys = smooth(y[:-1], max(1, y.size // 10))
            ax.plot(x[:-1], ys, "-", color=col, lw=1.6, label=f"{r['label']} (relaxed E f(S) during the run)")
            ax.plot([x[-2], x[-1]], [ys[-1], y[-1]], ":", color=col, lw=1)
        elif m != "random":
            ax.step(x, y, where="post", color=col, lw=1.5, label=r["label"])
        mark = {"scg": "*", "continuous_greedy": "P", "random": "x"}.get(m, "o")
        for a in (ax, az):
            a.plot(x[-1], y[-1], mark, color=col, ms=13 if mark == "*" else 8, mec="k" if mark != "x" else None,
                   label=lab if a is az else None)
    for a in (ax, az):
        a.set_xscale("log")
        a.set_xlabel("set-function evaluations (log scale)")
        a.grid(alpha=0.3, which="both")
    ax.set_ylabel("objective value f(S)")
    ax.set_title("value during each run", fontsize=10)
    ys = [r["value"] for r in res["runs"] if r["method"] != "random"] or [0.0]
    lo, hi = min(ys), max(ys)
    pad = max(hi - lo, 0.01 * abs(hi), 1e-9)
    az.set_ylim(lo - 0.6 * pad, hi + 0.3 * pad)
    az.set_title("final values (zoom; the random base may lie below)", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    az.legend(fontsize=7, loc="best")
    fig.suptitle(res["instance"]["title"], fontsize=10)
    fig.tight_layout()
    return fig


def priors_figure(res: dict):
    """Final multinoulli priors per block, and how concentrated each block's prior is over iterations."""
    scg = res.get("scg")
    fig, axes = subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.6, 1]})
    if not scg:
        for ax in axes:
            ax.axis("off")
        axes[0].text(0.5, 0.5, "run Multinoulli-SCG to see its priors", ha="center")
        return fig
    P = scg["priors"]
    K, m = len(P), max(len(p) for p in P)
    M = np.full((K, m), np.nan)
    for k, p in enumerate(P):
        M[k, : len(p)] = p
    im = axes[0].imshow(M, aspect="auto", cmap="magma_r", vmin=0, interpolation="nearest")
    axes[0].set_xlabel("element index within its block")
    axes[0].set_ylabel("block")
    axes[0].set_yticks(range(K))
    axes[0].set_yticklabels([str(k + 1) for k in range(K)], fontsize=7)
    axes[0].set_title(f"final priors q^T ({scg['draws']} draws, T = {scg['T']})", fontsize=10)
    fig.colorbar(im, ax=axes[0], fraction=0.04, label="prior mass")
    budgets = res["instance"]["budgets"]
    snaps = scg["snapshots"]
    C = np.zeros((K, len(snaps)))
    for j, s in enumerate(snaps):
        for k, q in enumerate(s):
            q = np.asarray(q)
            tot = q.sum()
            C[k, j] = np.sort(q)[::-1][: budgets[k]].sum() / tot if tot > 0 else np.nan
    im2 = axes[1].imshow(C, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    axes[1].set_xticks(range(len(snaps)))
    axes[1].set_xticklabels(scg["snapshot_t"], fontsize=7)
    axes[1].set_xlabel("iteration t")
    axes[1].set_yticks(range(K))
    axes[1].set_yticklabels([str(k + 1) for k in range(K)], fontsize=7)
    axes[1].set_title("share of each block's mass on its top-B_k elements", fontsize=10)
    fig.colorbar(im2, ax=axes[1], fraction=0.05)
    fig.tight_layout()
    return fig


def selection_figure(inst, selection: list[int], label: str, other: list[int] | None = None):
    """Task-specific view of a chosen set (None if the task has no view)."""
    if inst.task == "video":
        return storyboard(inst, selection, label)
    if inst.task == "coverage":
        return graph_view(inst, selection, label)
    if inst.task == "design":
        return design_view(inst, selection, label, other)
    return None


def storyboard(inst, selection: list[int], label: str):
    part = inst.partition
    thumbs, times = inst.view["thumbs"], inst.view["times"]
    B = int(part.budgets.max())
    K = part.K
    cols = min(K, 10)
    rows_of_segments = int(np.ceil(K / cols))
    aspect = thumbs.shape[1] / thumbs.shape[2]
    fig, axes = subplots(B * rows_of_segments, cols, squeeze=False,
                             figsize=(1.45 * cols, (1.45 * aspect + 0.3) * B * rows_of_segments + 0.4))
    for ax in axes.ravel():
        ax.axis("off")
    sel = set(selection)
    for k, blk in enumerate(part.blocks):
        chosen = [v for v in blk if v in sel]
        r0, c = (k // cols) * B, k % cols
        for j, v in enumerate(chosen):
            ax = axes[r0 + j, c]
            ax.imshow(thumbs[v])
            ax.set_title(f"seg {k + 1} · {times[v]:.1f}s", fontsize=6.5)
    fig.suptitle(f"{label}: chosen frames per segment ({inst.title})", fontsize=9)
    fig.tight_layout()
    return fig


def graph_view(inst, selection: list[int], label: str):
    import networkx as nx

    G = inst.view["graph"]
    part = inst.partition
    pos = nx.spring_layout(G, seed=1)
    sel = np.zeros(G.number_of_nodes(), bool)
    sel[selection] = True
    covered = inst.objective.A[selection].any(0)
    fig, ax = subplots(figsize=(7, 5.2))
    nx.draw_networkx_edges(G, pos, ax=ax, alpha=0.15, width=0.6)
    cmap = colormap("tab20")
    colors = [cmap(part.block_of[v] % 20) for v in G.nodes()]
    sizes = [140 if sel[v] else (30 if covered[v] else 12) for v in G.nodes()]
    edge = ["black" if sel[v] else "none" for v in G.nodes()]
    nx.draw_networkx_nodes(G, pos, ax=ax, node_color=colors, node_size=sizes, edgecolors=edge, linewidths=1.5,
                           alpha=[1.0 if covered[v] else 0.35 for v in G.nodes()])
    ax.set_title(f"{label}: {sel.sum()} chosen nodes (outlined) cover {covered.sum()}/{len(covered)}; "
                 "colour = community", fontsize=9)
    ax.axis("off")
    fig.tight_layout()
    return fig


def design_view(inst, selection: list[int], label: str, other: list[int] | None):
    X = inst.view["X"]
    Xc = X - X.mean(0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    Z = Xc @ Vt[:2].T
    part = inst.partition
    fig, ax = subplots(figsize=(7, 5))
    ax.scatter(Z[:, 0], Z[:, 1], c=part.block_of[: len(Z)] % 10, cmap="tab10", s=14, alpha=0.45)
    ax.scatter(Z[selection, 0], Z[selection, 1], s=130, facecolors="none", edgecolors="#d62728", linewidths=2,
               label=label)
    if other is not None:
        ax.scatter(Z[other, 0], Z[other, 1], s=40, marker="x", c="#1f77b4", label="Greedy")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.legend(fontsize=8)
    ax.set_title("candidate rows on their first two principal components (colour = group)", fontsize=9)
    fig.tight_layout()
    return fig


def sweep_figure(res: dict):
    fig, ax = subplots(figsize=(6.5, 4))
    T = np.array(res["Ts"])
    ax.errorbar(T, res["mean"], yerr=res["std"], fmt="o-", color=COLORS["scg"], capsize=3,
                label="Multinoulli-SCG (rounded)")
    ax.plot(T, res["relaxed_mean"], "s--", color=COLORS["scg"], alpha=0.5, label="relaxed ME(q^T) (estimate)")
    ax.axhline(res["greedy"], color=COLORS["greedy"], ls=":", label=f"greedy ({res['greedy_evals']:,} evals)")
    ax.set_xscale("log")
    ax.set_xlabel("iterations T")
    ax.set_ylabel("objective value")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.set_title(res["instance"]["title"], fontsize=9)
    fig.tight_layout()
    return fig
