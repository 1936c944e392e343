"""Figures (matplotlib object API only: handlers run in threads)."""
from __future__ import annotations

from engines.common.figures import figure as Figure

from .params import AGENT_LABELS

COLORS = {"env": "#4C72B0", "propose": "#DD8452", "ask": "#55A868", "other": "#C44E52"}


def _label(row: dict) -> str:
    short = {"heuristic": "heuristic", "gold": "gold", "noop": "no-op", "smollm2": "SmolLM2", "openai": "LLM API"}
    return f"{short.get(row['agent'], row['agent'])}\n{row['mode'][:5]}."


def batch_figure(rows: list[dict]) -> Figure:
    """SR / LA_file / LA_func / ASR per agent × mode; LA_func caller vs callee; time allocation (paper Fig. 3)."""
    fig = Figure(figsize=(13, 3.8))
    axs = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.3, 1, 1]})
    alls = [r for r in rows if r["instance_type"] == "all"]
    labels = [_label(r) for r in alls]
    x = list(range(len(alls)))
    w = 0.2
    for k, (metric, color) in enumerate([("SR", "#4C72B0"), ("LA_file", "#8172B3"), ("LA_func", "#DD8452"),
                                         ("ASR", "#55A868")]):
        axs[0].bar([i + (k - 1.5) * w for i in x], [r[metric] for r in alls], w, label=metric, color=color)
    axs[0].set_xticks(x, labels, fontsize=8)
    axs[0].set_ylim(0, 105)
    axs[0].set_ylabel("%")
    axs[0].set_title("Success, localisation, assistance seeking")
    axs[0].legend(fontsize=7, ncol=4, loc="upper center")
    for j, kind in enumerate(("caller", "callee")):
        sel = {(r["agent"], r["mode"]): r for r in rows if r["instance_type"] == kind}
        vals = [sel.get((r["agent"], r["mode"]), {}).get("LA_func", 0.0) for r in alls]
        axs[1].bar([i + (j - 0.5) * 0.35 for i in x], vals, 0.35, label=kind, color=["#4C72B0", "#C44E52"][j])
    axs[1].set_xticks(x, labels, fontsize=8)
    axs[1].set_ylim(0, 105)
    axs[1].set_title("LA_func: caller vs callee")
    axs[1].legend(fontsize=7)
    bottom = [0.0] * len(alls)
    for part in ("env", "propose", "ask", "other"):
        vals = [r[f"time_{part}"] for r in alls]
        axs[2].bar(x, vals, 0.6, bottom=bottom, label=part, color=COLORS[part])
        bottom = [b + v for b, v in zip(bottom, vals)]
    axs[2].set_xticks(x, labels, fontsize=8)
    axs[2].set_ylim(0, 100)
    axs[2].set_title("Time allocation (% of turns)")
    axs[2].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def episode_figure(result: dict) -> Figure:
    """Balance after each turn, coloured by the action kind."""
    fig = Figure(figsize=(6, 2.6))
    ax = fig.subplots()
    log = result["log"]
    turns = [0] + [t["turn"] for t in log]
    bal = [log[0]["balance"] + log[0]["cost"] if log else 0] + [t["balance"] for t in log]
    ax.step(turns, bal, where="post", color="#888")
    for t in log:
        kind = t["kind"] if t["kind"] in COLORS else "other"
        ax.scatter([t["turn"]], [t["balance"]], color=COLORS[kind], s=30, zorder=3,
                   marker="*" if t.get("success") else "o")
    for kind, c in COLORS.items():
        ax.scatter([], [], color=c, label=kind)
    ax.set_xlabel("turn")
    ax.set_ylabel("balance ($)")
    ax.set_title(f"{AGENT_LABELS.get(result['agent'], result['agent'])} · {result['mode']}", fontsize=9)
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    return fig
