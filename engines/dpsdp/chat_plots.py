"""Figures of the real-model path: one SmolLM2 transcript (answers per turn, vote tally) and the LoRA job's DPO curve."""
from __future__ import annotations

from engines.common.figures import subplots as new_figure

_COLOR = {True: "#27ae60", False: "#c0392b", None: "#7f8c8d"}


def chat_figure(res: dict):
    """Left: each turn's parsed answer coloured by correctness (grey: truth unknown or unparsable); right: the votes."""
    fig, axes = new_figure(1, 2, figsize=(9, 2.8), gridspec_kw={"width_ratios": [3, 2]})
    turns = res["turns"]
    axes[0].bar([t["turn"] for t in turns], [1] * len(turns),
                color=[_COLOR[None if t["final"] is None else t["correct"]] for t in turns])
    for t in turns:
        label = "∅" if t["empty"] else ("?" if t["final"] is None else str(t["final"]))
        axes[0].text(t["turn"], 0.5, label, ha="center", va="center", rotation=90, fontsize=8, color="white")
    axes[0].set_xticks([t["turn"] for t in turns])
    axes[0].set(xlabel="turn", yticks=[], title="actor answers (green right, red wrong, grey unknown/unparsable)")
    axes[0].title.set_fontsize(9)
    votes = res["votes"]
    if votes:
        names = list(votes)
        axes[1].barh(names, [votes[n] for n in names],
                     color=["#27ae60" if res["truth"] is not None and n == str(res["truth"]) else "#95a5a6"
                            for n in names])
    left = f" ({res['unparsable']} left out)" if res["unparsable"] else ""
    axes[1].set(xlabel="votes", title=f"majority: {res['majority']}{left}")
    fig.tight_layout()
    return fig


def lora_figure(rec: dict):
    """The DPO loss and reward margin per step on the actor's LoRA adapter (log 2 = π equals π_ref)."""
    fig, ax = new_figure(1, 1, figsize=(6, 3.2))
    c = rec["dpo"]["curve"]
    steps = [r["step"] for r in c]
    ax.plot(steps, [r["loss"] for r in c], marker="o", color="#c0392b", label="DPO loss (batch)")
    ax.set_xticks(steps if len(steps) <= 12 else steps[::max(1, len(steps) // 10)])
    ax.axhline(rec["dpo"]["log2"], ls=":", color="#7f8c8d", label="log 2 (π = π_ref)")
    ax2 = ax.twinx()
    ax2.plot(steps, [r["margin"] for r in c], marker=".", color="#2c3e50", label="reward margin")
    ax.set(xlabel="DPO step", ylabel="loss", title=f"{rec['dpo']['pairs']} actor pairs; loss on all pairs "
                                                   f"{rec['dpo']['loss_before']:.3f} → {rec['dpo']['loss_after']:.3f}")
    ax.title.set_fontsize(9)
    ax2.set_ylabel("β·(log-ratio⁺ − log-ratio⁻)")
    ax.legend(fontsize=7, loc="upper left")
    ax2.legend(fontsize=7, loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
