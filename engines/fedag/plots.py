"""Figures of a federation (matplotlib object API only: handlers run in threads)."""
from __future__ import annotations

from engines.common.figures import subplots

from .params import DOMAIN_LABELS, METHOD_LABELS

COLOURS = {"fedag": "tab:red", "fedclip": "tab:blue", "fedavg": "tab:green", "zeroshot": "grey"}
TABLE_HEADERS = ["method", "in-domain (one2all)", "in-domain one2one", "out-of-domain", "val in", "val out"]


def curves(res: dict):
    """Per-round accuracy, in-domain and on the held-out domain, for FedAG and the baselines."""
    fig, axes = subplots(1, 2, figsize=(9, 3.2), layout="constrained")
    for m, h in res["curves"].items():
        rounds = [r["round"] for r in h]
        for ax, key in zip(axes, ("in", "ood")):
            if len(h) == 1:
                ax.axhline(h[0][key], color=COLOURS[m], ls=":", label=METHOD_LABELS[m])
            else:
                ax.plot(rounds, [r[key] for r in h], color=COLOURS[m], marker=".", label=METHOD_LABELS[m])
    axes[0].set_title("in-domain test accuracy")
    axes[1].set_title(f"held-out domain: {DOMAIN_LABELS[res['held_out']]}")
    for ax in axes:
        ax.set_xlabel("communication round")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    return fig


def quality_hist(res: dict):
    q = res["quality"]
    fig, ax = subplots(figsize=(4.5, 3), layout="constrained")
    ax.hist(q["clean"], bins=20, alpha=0.6, label="clean renders", color="tab:green")
    ax.hist(q["corrupted"], bins=20, alpha=0.6, label="corrupted renders", color="tab:red")
    ax.set_xlabel("quality score q = cos(h(x̂), prototype)")
    ax.set_title(f"quality scores (AUROC {q['auroc']:.2f})")
    ax.legend(fontsize=7)
    return fig


def attention_bars(res: dict, example: dict):
    fig, ax = subplots(figsize=(4.5, 2.8), layout="constrained")
    names = [DOMAIN_LABELS[d] for d in res["in_domains"]]
    bars = ax.bar(range(len(names)), example["alpha"], color="tab:purple")
    for b, pred in zip(bars, example["adapter_pred"]):
        ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"says {pred}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names, fontsize=7, rotation=15)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("attention α")
    ax.set_title(f"{DOMAIN_LABELS[example['domain']]} test image: label {example['label']}, FedAG says {example['pred']}",
                 fontsize=9)
    return fig


def table_rows(res: dict) -> list[list]:
    def pct(v):
        return "—" if v is None else f"{100 * v:.1f}%"
    return [[r["method"], pct(r["in"]), pct(r["in_one2one"]), pct(r["ood"]), pct(r["val_in"]), pct(r["val_ood"])]
            for r in res["table"]]


def alpha_heatmap(res: dict):
    """Mean attention α per test domain (rows) and adapter (columns): the regulariser pushes the diagonal up."""
    import numpy as np

    doms = list(res["alpha_mean"])
    m = np.array([res["alpha_mean"][d] for d in doms])
    fig, ax = subplots(figsize=(4.5, 3), layout="constrained")
    im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis")
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", color="w" if m[i, j] < 0.6 else "k", fontsize=8)
    ax.set_xticks(range(m.shape[1]), [DOMAIN_LABELS[d].split()[0] for d in res["in_domains"]], fontsize=7)
    ax.set_yticks(range(len(doms)), [DOMAIN_LABELS[d].split()[0] + (" (held out)" if d == res["held_out"] else "")
                                     for d in doms], fontsize=7)
    ax.set_xlabel("adapter")
    ax.set_title("mean attention α per test domain", fontsize=9)
    fig.colorbar(im, ax=ax, shrink=0.8)
    return fig
