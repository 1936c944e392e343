"""Figures: graph drawings coloured by group, ΔSP/ΔEO bars, the Pareto scatter, feature histograms."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from engines.common.figures import subplots

GROUP_COLORS = ("#3b7dd8", "#e4572e")  # s = 0, s = 1
VARIANT_COLORS = {"real": "#555555", "vanilla": "#9e9e9e", "struct_only": "#f2a541", "feat_only": "#6cc0a5",
                  "fdgen": "#7b3fa0"}
MAX_DRAWN = 400


def draw_graph(ax, g, title: str = "", seed: int = 0, max_nodes: int = MAX_DRAWN) -> None:
    """Spring layout; colour = sensitive group, marker = label (● y=1, ▲ y=0). Large graphs: a random
    induced subgraph of ``max_nodes`` nodes is drawn."""
    import networkx as nx

    if g.n > max_nodes:
        nodes = np.sort(np.random.default_rng(seed).choice(g.n, max_nodes, replace=False))
        g = g.subgraph(nodes)
        title += f" ({max_nodes}-node sample drawn)"
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(map(tuple, g.edges.tolist()))
    pos = nx.spring_layout(G, seed=seed, iterations=40, k=1.5 / np.sqrt(max(g.n, 1)))
    xy = np.array([pos[i] for i in range(g.n)])
    if g.m:
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(xy[g.edges], colors="#bbbbbb", linewidths=0.3, alpha=0.5, zorder=1))
    for sv in (0, 1):
        for yv, marker in ((1, "o"), (0, "^")):
            m = (g.s == sv) & (g.y == yv)
            ax.scatter(xy[m, 0], xy[m, 1], s=9, c=GROUP_COLORS[sv], marker=marker, linewidths=0, zorder=2)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.autoscale()


def inspect_figure(g, bias: dict, biased_feature: int | None = None):
    """Drawing of the real graph and the group-conditional histogram of its most biased feature."""
    from .metrics import most_biased_feature

    fig, (a, b) = subplots(1, 2, figsize=(10, 4.4), gridspec_kw={"width_ratios": [1.4, 1]})
    draw_graph(a, g, f"{g.name}: {g.n} nodes, {g.m} edges — h_s = {bias['h_s']:.2f} "
                     f"(random mixing {bias['h_s_random']:.2f})")
    k = most_biased_feature(g.X, g.s) if biased_feature is None else biased_feature
    bins = np.linspace(*np.percentile(g.X[:, k], [0.5, 99.5]), 31)
    for sv in (0, 1):
        b.hist(g.X[g.s == sv, k], bins=bins, density=True, alpha=0.55, color=GROUP_COLORS[sv], label=f"s = {sv}")
    b.set_title(f"most group-biased feature: {g.feature_names[k]}\nprobe AUC (s from all X) = {bias['probe_auc']:.2f}",
                fontsize=9)
    b.legend(fontsize=8)
    _legend(fig, g)
    fig.tight_layout()
    return fig


def _legend(fig, g) -> None:
    from matplotlib.lines import Line2D

    h = [Line2D([], [], ls="", marker="o", color=GROUP_COLORS[0], label="s = 0"),
         Line2D([], [], ls="", marker="o", color=GROUP_COLORS[1], label=f"s = 1 ({g.s_name})"),
         Line2D([], [], ls="", marker="o", color="k", label="y = 1"),
         Line2D([], [], ls="", marker="^", color="k", label="y = 0")]
    fig.legend(handles=h, loc="lower center", ncol=4, fontsize=8, frameon=False, bbox_to_anchor=(0.5, -0.02))


def drawings_figure(real, samples: dict):
    """Real training graph next to the first sample of every variant."""
    from .metrics import sensitive_homophily
    from .params import VARIANT_LABELS

    items = [("real", real)] + list(samples.items())
    fig, axes = subplots(1, len(items), figsize=(3.3 * len(items), 3.6))
    axes = np.atleast_1d(axes)
    for ax, (name, g) in zip(axes, items):
        h, _ = sensitive_homophily(g.edges, g.s)
        label = "real (training nodes)" if name == "real" else VARIANT_LABELS[name]
        draw_graph(ax, g, f"{label}\nh_s = {h:.2f}, {g.m} edges")
    _legend(fig, real)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def fairness_bars(res: dict, ax=None):
    """ΔSP and ΔEO (mean ± std over seeds × samples) per row, with accuracy annotated."""
    rows = res["rows"]
    fig = None
    if ax is None:
        fig, ax = subplots(figsize=(7.5, 3.6))
    x = np.arange(len(rows))
    w = 0.38
    for k, (key, hatch) in enumerate((("delta_sp", ""), ("delta_eo", "//"))):
        m = [r["mean"][key] for r in rows]
        s = [r["std"][key] for r in rows]
        ax.bar(x + (k - 0.5) * w, m, w, yerr=s, capsize=3, hatch=hatch, edgecolor="white",
               color=[VARIANT_COLORS.get(r["variant"], "#888") for r in rows], label="ΔSP" if k == 0 else "ΔEO (hatched)")
    for i, r in enumerate(rows):
        ax.text(i, 0.002, f"acc {r['mean']['accuracy']:.2f}", ha="center", va="bottom", fontsize=7, color="white",
                rotation=90)
    ax.set_xticks(x, [r["label"].split(" (")[0] for r in rows], fontsize=8, rotation=20)
    ax.set_ylabel("gap on real test nodes (lower is fairer)", fontsize=8)
    ax.set_title(f"Downstream GCN fairness — {res.get('dataset_label', res.get('dataset', ''))}", fontsize=9)
    ax.legend(fontsize=7)
    if fig is not None:
        fig.tight_layout()
    return fig


def pareto_figure(res: dict, key: str = "delta_sp"):
    """Accuracy against ΔSP (or ΔEO) for each λ, the real-graph GCN as a reference, the Pareto front joined."""
    rows = res["rows"]
    fig, ax = subplots(figsize=(6, 4))
    xs = np.array([r["mean"][key] for r in rows])
    ys = np.array([r["mean"]["accuracy"] for r in rows])
    ax.errorbar(xs, ys, xerr=[r["std"][key] for r in rows], yerr=[r["std"]["accuracy"] for r in rows], fmt="none",
                ecolor="#cccccc", zorder=1)
    sc = ax.scatter(xs, ys, c=np.log10(np.array([r["lambda_f"] for r in rows]) + 0.1), cmap="viridis", s=50, zorder=2)
    for r, x, y in zip(rows, xs, ys):
        ax.annotate(r["label"], (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    order = np.argsort(xs)
    front, best = [], -np.inf
    for i in order:
        if ys[i] > best:
            front.append(i)
            best = ys[i]
    ax.plot(xs[front], ys[front], "--", color="#7b3fa0", lw=1, label="Pareto front")
    real = res["real"]
    ax.scatter([real["mean"][key]], [real["mean"]["accuracy"]], marker="*", s=140, c="k", label="GCN on real graph")
    ax.set_xlabel(("ΔSP" if key == "delta_sp" else "ΔEO") + " on real test nodes (lower is fairer)")
    ax.set_ylabel("accuracy on real test nodes")
    ax.set_title(f"Fairness–accuracy trade-off over λ_f = λ_s = λ ({res['dataset']}, {res['backbone']})", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.colorbar(sc, ax=ax, label="log₁₀(λ + 0.1)")
    fig.tight_layout()
    return fig


def histogram_figure(res: dict):
    """Group-conditional histograms of the most biased feature: real graph, then each generated graph."""
    h = res["histogram"]
    bins = np.array(h["bins"])
    names = list(h["density"])
    fig, axes = subplots(1, len(names), figsize=(2.8 * len(names), 2.8), sharey=True)
    axes = np.atleast_1d(axes)
    from .params import VARIANT_LABELS

    for ax, name in zip(axes, names):
        for sv in (0, 1):
            d = np.array(h["density"][name][f"s={sv}"])
            ax.stairs(d, bins, fill=True, alpha=0.5, color=GROUP_COLORS[sv], label=f"s = {sv}")
        ax.set_title("real" if name == "real" else VARIANT_LABELS.get(name, name), fontsize=8)
        ax.set_xlabel(h["feature"], fontsize=8)
    axes[0].legend(fontsize=7)
    fig.suptitle("Group-conditional distribution of the most biased feature, before and after", fontsize=9)
    fig.tight_layout()
    return fig


def metrics_table(res: dict, keys: list[str] | None = None) -> tuple[list[str], list[list]]:
    """(headers, rows) of mean ± std for the tab's table and the results page."""
    from .experiment import METRICS

    keys = keys or ["accuracy", "delta_sp", "delta_eo", "h_s", "degree_gap", "probe_auc", "feature_mmd_s",
                    "degree_mmd", "clustering_mmd", "feature_mmd_real"]
    headers = ["graph"] + [METRICS[k][0] for k in keys]
    out = []
    for r in res["rows"]:
        cells = [r["label"]]
        for k in keys:
            m, s = r["mean"].get(k), r["std"].get(k)
            if m is None or m != m:
                cells.append("–")
            else:
                cells.append(f"{m:.3f} ± {s:.3f}" if s and s == s and s > 0 else f"{m:.3f}")
        out.append(cells)
    return headers, out


def validation_figure(panels: list[tuple[str, dict]]):
    """Held-out-pair validation loss against training iterations, one panel per dataset, one line per variant,
    the chosen length E* marked (the stopping rule of ``selection``)."""
    from .params import VARIANT_LABELS

    labels = dict(VARIANT_LABELS, vanilla_unaware="vanilla, not conditioned on s")
    colors = dict(VARIANT_COLORS, vanilla_unaware="#222222")
    fig, axes = subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6))
    axes = np.atleast_1d(axes)
    for ax, (title, curves) in zip(axes, panels):
        for name, c in curves.items():
            ep, lo = np.array(c["epochs"]), np.array(c["val_loss"])
            col = colors.get(name, "#888")
            ax.plot(ep, lo, marker="o", ms=3, lw=1.2, color=col, ls="--" if name == "vanilla_unaware" else "-",
                    label=labels.get(name, name))
            k = int(np.flatnonzero(ep == c["chosen"])[0])
            ax.scatter([ep[k]], [lo[k]], marker="*", s=150, color=col, edgecolor="k", linewidths=0.6, zorder=3)
        ax.set_xscale("log")
        ticks = sorted({e for c in curves.values() for e in c["epochs"]})
        ax.set_xticks(ticks, [str(e) for e in ticks])
        ax.minorticks_off()
        ax.set_xlabel("training iterations (complete cosine schedule)", fontsize=8)
        ax.set_title(title, fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("edge BCE per expected edge\non held-out node pairs", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.suptitle("Validation loss on held-out training pairs (★ = chosen E*, lowest on the grid, which doubles while its longest fit is best)", fontsize=9)
    fig.tight_layout()
    return fig
