"""Figures from a SLUG result dict (matplotlib only: the tab draws them without torch)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from engines.common.figures import subplots

C_BEFORE, C_AFTER, C_PARETO, C_CHOSEN = "#9aa5b1", "#d9480f", "#1971c2", "#e8590c"


def short(name: str) -> str:
    s = name.replace("visual_projection", "v.proj").replace("text_projection", "t.proj")
    s = s.replace("vision_model.encoder.layers.", "v").replace("text_model.encoder.layers.", "t")
    s = s.replace(".self_attn.", ".").replace(".mlp.", ".").replace(".weight", "").replace("_proj", "")
    return s


def layer_scatter(res: dict):
    """Importance vs alignment, log–log, per tower; Pareto layers labelled, the chosen layer starred."""
    towers = [t for t in ("vision", "text") if any(l["tower"] == t for l in res["layers"])]
    fig, axes = subplots(1, len(towers), figsize=(5.2 * len(towers), 4.0), squeeze=False)
    for ax, tw in zip(axes[0], towers):
        ls = [l for l in res["layers"] if l["tower"] == tw]
        x = np.array([max(l["alignment"], 1e-6) for l in ls])
        y = np.array([max(l["importance"], 1e-9) for l in ls])
        par = np.array([l["pareto"] for l in ls])
        ax.scatter(x[~par], y[~par], marker="x", c="k", s=22, label="dominated")
        ax.scatter(x[par], y[par], c=C_PARETO, s=40, label="Pareto front")
        order = np.argsort(x[par])
        ax.plot(x[par][order], y[par][order], c=C_PARETO, lw=1, alpha=0.5)
        for l, xi, yi in zip(ls, x, y):
            if l["pareto"]:
                ax.annotate(short(l["name"]), (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
            if l["name"] == res.get("chosen"):
                ax.scatter([xi], [yi], marker="*", s=260, c=C_CHOSEN, edgecolors="k", zorder=5, label="chosen")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("gradient alignment |cos(g_f, g_r)|  (lower is better)")
        ax.set_ylabel("layer importance ‖g_f‖/‖θ‖  (higher is better)")
        ax.set_title(f"{tw} tower: {par.sum()} of {len(ls)} layers on the Pareto front", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def search_trace(res: dict):
    """Step-size binary search: relative step r per evaluation and the accuracies it produced."""
    fig, (a1, a2) = subplots(1, 2, figsize=(10.5, 3.6))
    for t in res["searched"]:
        chosen = t["layer"] == res["chosen"]
        it = [r["iter"] for r in t["rows"]]
        kw = dict(lw=2.2, c=C_CHOSEN, zorder=4) if chosen else dict(lw=0.8, c="#adb5bd", alpha=0.8)
        a1.plot(it, [r["rel"] for r in t["rows"]], marker="o", ms=3, label=short(t["layer"]) if chosen else None, **kw)
        if chosen:
            for r in t["rows"]:
                a1.scatter([r["iter"]], [r["rel"]], s=55, facecolors="none" if not r["reached"] else "#2f9e44",
                           edgecolors="#2f9e44" if r["reached"] else "#c92a2a", zorder=5)
            a2.plot(it, [r["forget1"] for r in t["rows"]], marker="o", c="#c92a2a", label="forget acc@1")
            a2.plot(it, [r["retain"] for r in t["rows"]], marker="s", c="#2f9e44", label="retain acc")
            a2.plot(it, [r["utility"] for r in t["rows"]], marker="^", c="#1971c2", label="utility acc")
            if t.get("best") is not None:
                a2.axvline(t["rows"][t["best"]]["iter"], c="k", ls=":", lw=1, label="returned step")
    a2.axhline(res["forget_target"], c="#c92a2a", ls="--", lw=0.8, label="forget target")
    a1.set_yscale("log")
    a1.set_xlabel("search evaluation")
    a1.set_ylabel("relative step r = λ‖g‖/‖θ‖")
    a1.set_title("binary search (filled: forget target reached; grey: other Pareto layers)", fontsize=9)
    a1.legend(fontsize=8)
    a2.set_xlabel("search evaluation")
    a2.set_ylabel("zero-shot accuracy")
    a2.set_ylim(-0.03, 1.03)
    a2.set_title(f"chosen layer {short(res['chosen'])}", fontsize=9)
    a2.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    return fig


def accuracy_bars(res: dict):
    """Forget / retain / utility accuracy before and after (and the baselines), plus per-class accuracy."""
    fig, (a1, a2) = subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 1.4]})
    keys = [("forget1", f"forget\n({res['target']})"), ("retain", "retain\n(other classes)"), ("utility", f"utility\n({res['utility_task']})")]
    rows = [("original", res["before"], C_BEFORE), ("SLUG", res["after"], C_AFTER)]
    colours = ["#495057", "#7048e8", "#12b886", "#f59f00"]
    for i, b in enumerate(res.get("baselines", [])):
        rows.append((b["label"], b, colours[i % len(colours)]))
    w = 0.8 / len(rows)
    for j, (label, m, c) in enumerate(rows):
        vals = [m[k] for k, _ in keys]
        xs = np.arange(len(keys)) + (j - (len(rows) - 1) / 2) * w
        a1.bar(xs, vals, w, color=c, label=label)
        for x, v in zip(xs, vals):
            a1.text(x, v + 0.01, f"{v:.0%}", ha="center", fontsize=6)
    a1.set_xticks(range(len(keys)), [k[1] for k in keys], fontsize=8)
    a1.set_ylim(0, 1.12)
    a1.set_ylabel("zero-shot accuracy")
    a1.legend(fontsize=7, loc="upper right")
    a1.set_title(f"forget target ≤ {res['forget_target']:.0%}", fontsize=9)
    cls = res["classes"]
    x = np.arange(len(cls))
    a2.bar(x - 0.2, res["before"]["per_class"], 0.4, color=C_BEFORE, label="original")
    a2.bar(x + 0.2, res["after"]["per_class"], 0.4, color=C_AFTER, label="after SLUG")
    ti = cls.index(res["target"]) if res["target"] in cls else None
    if ti is not None:
        a2.axvspan(ti - 0.5, ti + 0.5, color="#ffe8cc", zorder=0)
    a2.set_xticks(x, cls, rotation=45, fontsize=8)
    a2.set_ylim(0, 1.05)
    a2.set_title(f"per-class zero-shot accuracy ({res['task']}); forgotten class shaded", fontsize=9)
    a2.legend(fontsize=7)
    fig.tight_layout()
    return fig


def cost_figure(res: dict):
    """Compute (gradient examples, update seconds without evaluations, evaluations) and extra state memory."""
    c = res["cost"]
    names = ["SLUG"]
    ex, secs, evals, mem = [c["grad_examples"]], [c["grad_s"]], [c["chosen_evals"]], [c["state_bytes"]]
    for b in res.get("baselines", []):  # the same cost fields on every baseline (baselines.py)
        names.append(b["label"])
        ex.append(b["grad_examples"]), secs.append(b["train_s"]), mem.append(b["state_bytes"])
        evals.append(b["evals"] / max(1, b.get("n", 1)))
    fig, axes = subplots(1, 4, figsize=(13, 2.2 + 0.3 * len(names)))
    panels = [ex, secs, evals, [m / 2**20 for m in mem]]
    titles = ["gradient examples (fwd+bwd)", "update compute (s, no evaluations)", "accuracy evaluations",
              "extra state memory (MiB)"]
    for k, (ax, vals, title) in enumerate(zip(axes, panels, titles)):
        ax.barh(range(len(names)), vals, color=[C_AFTER] + ["#868e96"] * (len(names) - 1))
        ax.set_yticks(range(len(names)), names if k == 0 else [""] * len(names), fontsize=8)
        ax.set_title(title, fontsize=9)
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.3g}", va="center", fontsize=7)
        ax.invert_yaxis()
    fig.tight_layout()
    return fig


def t2i_bars(res: dict):
    """Judge accuracy on generations: the forgotten concept and unrelated ones, before and after."""
    names = [f"{res['target']}\n(forgotten)"] + list(res["others"]) + ["cross-domain\n(other judge)"]
    b = res["before"]["per_concept"] + [res["before"]["cross"]]
    a = res["after"]["per_concept"] + [res["after"]["cross"]]
    x = np.arange(len(names))
    fig, ax = subplots(figsize=(8, 3.2))
    ax.bar(x - 0.2, b, 0.4, color=C_BEFORE, label="original text encoder")
    ax.bar(x + 0.2, a, 0.4, color=C_AFTER, label="after SLUG")
    ax.set_xticks(x, names, fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("judge accuracy on generations")
    ax.set_title(f"updated {', '.join(short(n) for n in res['chosen_names'])} (r = {res['rel_step']:.3g})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
