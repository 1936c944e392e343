"""Figures (matplotlib object API only: handlers run in threads)."""
from __future__ import annotations

import numpy as np
from engines.common.figures import figure as Figure

from .params import VARIANT_LABELS

COLOURS = {"pe_b": "#9aa5b1", "pe_s": "#7048e8", "pe_c": "#d9480f"}


def cosine_trace(res: dict) -> Figure:
    """cos(e(i₀+δ, t_p), e*) per sign-gradient step, with the quantised result."""
    fig = Figure(figsize=(5.2, 3.0))
    ax = fig.add_subplot()
    tr = res["trace"]
    ax.plot(np.arange(len(tr)), tr, color=COLOURS.get(res["variant"], "k"), lw=1.5, label="during optimisation")
    ax.axhline(res["cos_final"], color="k", ls="--", lw=1, label=f"after 8-bit quantisation ({res['cos_final']:.3f})")
    if res["before"]["distances"]:
        best = 1 - res["before"]["distances"][0] / 2
        ax.axhline(best, color="#2b8a3e", ls=":", lw=1, label=f"query's best clean neighbour ({best:.3f})")
    ax.set_xlabel("step")
    ax.set_ylabel("fused cosine to target e*")
    ax.set_title(f"{VARIANT_LABELS.get(res['variant'], res['variant'])}: ε = {res['epsilon']:g}/255", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def benchmark_bars(res: dict) -> Figure:
    """Top-1 / top-k retrieval and ASR per variant (and under the defence when measured)."""
    rows = [(VARIANT_LABELS[v["variant"]], v) for v in res["variants"]]
    rows += [(VARIANT_LABELS[v["variant"]] + "\n+ defence", v) for v in res.get("defended") or []]
    metrics = [("top-1 retrieval", "top1", "#74c0fc"), (f"top-{res['k']} retrieval", "topk", "#1c7ed6"),
               ("attack success", "asr", "#d9480f"), ("clean accuracy", "acc", "#2b8a3e")]
    fig = Figure(figsize=(max(6.0, 1.4 * len(rows)), 3.4))
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    w = 0.8 / len(metrics)
    for j, (lab, key, col) in enumerate(metrics):
        vals = [r[key] if r.get(key) is not None else np.nan for _, r in rows]
        ax.bar(x + (j - (len(metrics) - 1) / 2) * w, vals, w, label=lab, color=col)
    ax.set_xticks(x, [r[0] for r in rows], fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of held-out queries")
    ax.set_title(f"class-wise: {len(res['classes'])} classes × {res['eval_number']} held-out queries "
                 f"(template: {res['template']})", fontsize=9)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    return fig


def benchmark_table(res: dict) -> list[list]:
    out = []
    for tag, rows in (("", res["variants"]), (" + defence", res.get("defended") or [])):
        for v in rows:
            out.append([VARIANT_LABELS[v["variant"]] + tag, round(v["top1"], 3), round(v["topk"], 3),
                        None if v.get("asr") is None else round(v["asr"], 3),
                        None if v.get("acc") is None else round(v["acc"], 3), v["median_rank"], v.get("refused", 0),
                        bool(v["removed_exact"])])
    return out


TABLE_HEADERS = ["variant", "top-1 retrieval", "top-k retrieval", "attack success (ASR)", "clean accuracy",
                 "median poison rank", "poisons refused", "removal exact"]
