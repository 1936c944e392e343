"""Figures: accuracy per turn (p1@t_k, m1@t_k) per variant, flip rates, the vote tally, training curves."""
from __future__ import annotations

from engines.common.figures import subplots as new_figure

COLORS = {"dpsdp": "#c0392b", "reference": "#2c3e50", "single_agent": "#8e44ad", "naive_dpo": "#d68910",
          "oracle_critic": "#7f8c8d", "history": "#16a085", "sc_reference": "#2c3e50", "sc_dpsdp": "#c0392b"}
LABELS = {"dpsdp": "DPSDP", "reference": "π_ref (SFT)", "single_agent": "single agent", "naive_dpo": "naive DPO",
          "oracle_critic": "π_ref + oracle critic", "history": "DPSDP, full history",
          "sc_reference": "self-consistency π_ref", "sc_dpsdp": "self-consistency DPSDP actor"}


def turn_figure(curves: dict, variants: list[str], title: str = ""):
    """Left: p1@t_k (the k-th answer alone); right: m1@t_k (majority over the first k answers)."""
    fig, axes = new_figure(1, 2, figsize=(10, 3.8))
    for v in [*variants, "sc_reference", "sc_dpsdp", "history"]:
        if v not in curves:
            continue
        c = curves[v]
        ks = list(range(1, c["turns"] + 1))
        ls = ":" if v.startswith("sc_") else ("--" if v == "history" else "-")
        if not v.startswith("sc_"):
            axes[0].plot(ks, [100 * x for x in c["p1"]], ls, marker="o", color=COLORS[v], label=LABELS[v])
        axes[1].plot(ks, [100 * x for x in c["m1"]], ls, marker="o", color=COLORS[v], label=LABELS[v])
    axes[0].set(xlabel="turn k", ylabel="accuracy of the k-th answer (%)", title="p1@t_k")
    axes[1].set(xlabel="answers voted (k)", ylabel="majority-vote accuracy (%)", title="m1@t_k")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def flip_figure(curves: dict, variants: list[str]):
    """Per variant: correct→incorrect and incorrect→correct rates summed over turns."""
    fig, ax = new_figure(1, 1, figsize=(6, 3.4))
    vs = [v for v in variants if v in curves]
    x = range(len(vs))
    c2i = [100 * sum(curves[v]["c2i"]) for v in vs]
    i2c = [100 * sum(curves[v]["i2c"]) for v in vs]
    ax.bar([i - 0.2 for i in x], i2c, 0.4, color="#27ae60", label="incorrect → correct")
    ax.bar([i + 0.2 for i in x], c2i, 0.4, color="#c0392b", label="correct → incorrect")
    ax.set_xticks(list(x), [LABELS[v] for v in vs], rotation=15, fontsize=8)
    ax.set(ylabel="% of problems (all turns)", title="What refinement changes")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def transcript_figure(res: dict):
    """Turn-by-turn correctness and the vote tally of one transcript."""
    fig, axes = new_figure(1, 2, figsize=(9, 2.8), gridspec_kw={"width_ratios": [3, 2]})
    turns = res["turns"]
    ks = [t["turn"] for t in turns]
    axes[0].bar(ks, [1] * len(ks), color=["#27ae60" if t["correct"] else "#c0392b" for t in turns])
    for t in turns:
        axes[0].text(t["turn"], 0.5, t["answer"] or "∅", ha="center", va="center", rotation=90, fontsize=8, color="white")
    axes[0].set(xlabel="turn", yticks=[], title="actor answers (green = right)")
    votes = res["votes"]
    if votes:
        names = list(votes)
        axes[1].barh(names, [votes[n] for n in names],
                     color=["#27ae60" if n == str(res["truth_final"]) else "#95a5a6" for n in names])
    axes[1].set(xlabel="votes", title=f"majority: {res['majority']}")
    fig.tight_layout()
    return fig


def training_figure(record: dict):
    """Pretraining/SFT losses and the DPO loss and reward margin of the actor and critic."""
    fig, axes = new_figure(1, 2, figsize=(10, 3.4))
    for key, lab in (("pretrain", "pretrain actor"), ("sft_actor", "SFT actor"), ("sft_critic", "SFT critic")):
        c = record.get(key, {}).get("curve", [])
        if c:
            axes[0].plot([r["step"] for r in c], [r["loss"] for r in c], marker=".", label=lab)
    axes[0].set(xlabel="step", ylabel="cross-entropy per token", title="supervised stages", yscale="log")
    for key, lab in (("dpo_actor", "actor"), ("dpo_critic", "critic"), ("dpo_single", "single agent")):
        c = record.get(key, {}).get("curve", [])
        if c:
            axes[1].plot([r["step"] for r in c], [r["margin"] for r in c], marker=".", label=f"{lab}: reward margin")
    axes[1].set(xlabel="DPO step", ylabel="β·(log-ratio⁺ − log-ratio⁻)", title="DPO")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
