"""Figures of the KL-bandit experiments (matplotlib only), shared by the tab and ``reproduce``."""
from __future__ import annotations

from .params import METHOD_LABELS
from engines.common.figures import colormap, subplots

COLORS = {"kl_ucb": "#d62728", "kl_greedy": "#ff7f0e", "ucb": "#1f77b4", "vw_softmax": "#2ca02c"}


def regret_figure(res: dict):
    """Cumulative regret against T on linear and log-x axes, with a + b·log T and c·√T fits."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    fig, axes = subplots(1, 2, figsize=(11, 4.2))
    for ax, logx in zip(axes, (False, True)):
        for c in res["curves"]:
            T = np.array(c["horizons"], float)
            m, s = np.array(c["mean"]), np.array(c["std"])
            col = COLORS[c["method"]]
            tag = "unregularised regret" if c["objective"] == "unregularised" else "KL regret"
            ax.plot(T, m, "o-", color=col, ms=3, label=f"{c['label']} ({tag}), slope {c['loglog_slope']:.2f}")
            ax.fill_between(T, m - s, m + s, color=col, alpha=0.15)
            f = c["log_fit"]
            Tg = np.geomspace(T.min(), T.max(), 100)
            ax.plot(Tg, f["a"] + f["b"] * np.log(Tg), "--", color=col, lw=1, alpha=0.8)
            ax.plot(Tg, c["sqrt_coef"] * np.sqrt(Tg), ":", color=col, lw=1, alpha=0.8)
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel("horizon T" + (" (log scale)" if logx else ""))
        ax.set_ylabel("cumulative regret")
        ax.grid(alpha=0.3)
    axes[0].set_title("dashed: a + b·log T fit   dotted: c·√T fit", fontsize=9)
    axes[1].legend(fontsize=7, loc="upper left")
    env = "linear contextual bandit" if res["env"] == "linear" else "hard K-armed family (gap √(K/T))"
    fig.suptitle(f"Regret on the {env}, η = {res['eta']:g}")
    fig.tight_layout()
    return fig


def policy_figure(res: dict):
    """π₀, π* and the played KL-UCB policy on context 0, plus KL(π_t ‖ π*) over rounds."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    snap = res.get("snapshot")
    fig, axes = subplots(1, 2, figsize=(11, 3.6))
    if not snap:
        for ax in axes:
            ax.axis("off")
        axes[0].text(0.5, 0.5, "policy view: linear bandit only (one context)", ha="center")
        return fig
    K = len(snap["pi0"])
    x = np.arange(K)
    method = "kl_ucb" if "kl_ucb" in snap["policies"] else next(iter(snap["policies"]))
    pols = snap["policies"][method]
    picks = sorted({1, len(pols) // 2, len(pols) - 1})
    w = 0.8 / (2 + len(picks))
    axes[0].bar(x - 0.4 + w / 2, snap["pi0"], w, label="π₀ (reference)", color="#999")
    axes[0].bar(x - 0.4 + 1.5 * w, snap["pistar"], w, label="π* (optimal Gibbs)", color="black")
    for i, k in enumerate(picks):
        axes[0].bar(x - 0.4 + (2.5 + i) * w, pols[k], w, label=f"π_t, t = {snap['rounds'][k]}",
                    color=colormap("Reds")(0.35 + 0.6 * i / max(1, len(picks) - 1)))
    axes[0].set_xlabel("arm")
    axes[0].set_ylabel("probability")
    axes[0].set_title(f"{METHOD_LABELS[method]} on context 0 converges to π*", fontsize=10)
    axes[0].legend(fontsize=7)
    for m, kls in snap["kl_to_optimal"].items():
        if m == "ucb":  # a deterministic argmax policy has no Gibbs form to compare
            continue
        axes[1].loglog(snap["rounds"], np.maximum(kls, 1e-8), "o-", ms=3, color=COLORS[m], label=METHOD_LABELS[m])
    axes[1].set_xlabel("round t")
    axes[1].set_ylabel("KL(π_t ‖ π*) on context 0")
    axes[1].grid(alpha=0.3, which="both")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def eta_figure(res: dict):
    import matplotlib

    matplotlib.use("Agg")

    fig, ax = subplots(figsize=(6, 3.8))
    for m, vals in res["final_regret"].items():
        ax.errorbar(res["etas"], vals, yerr=res["final_std"][m], fmt="o-", color=COLORS[m], label=METHOD_LABELS[m])
    ax.set_xscale("log")
    ax.set_xlabel("η (inverse KL strength)")
    ax.set_ylabel(f"KL regret at T = {res['horizon']}")
    ax.set_title("Regret grows with η (bound O(η·log T))", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


RLHF_COLORS = {"kl_ucb": COLORS["kl_ucb"], "kl_greedy": COLORS["kl_greedy"], "reference": "#7f7f7f"}


def rlhf_figure(res: dict):
    """Cumulative KL-regularised regret of the LLM loop (soft best-of-N) per method."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    from .rlhf import METHODS

    fig, axes = subplots(1, 2, figsize=(11, 3.6))
    for m, cum in res["cumulative_regret"].items():
        t = np.arange(1, len(cum) + 1)
        axes[0].plot(t, cum, "o-", ms=2, color=RLHF_COLORS[m], label=METHODS[m])
    axes[0].set_xlabel("round")
    axes[0].set_ylabel("cumulative KL regret (candidate set)")
    axes[0].set_title(f"π₀ = {res['policy_model']}", fontsize=9)
    axes[0].grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    b = res["mean_bonus"]
    axes[1].plot(np.arange(1, len(b) + 1), b, color=COLORS["kl_ucb"])
    axes[1].set_xlabel("round")
    axes[1].set_ylabel("ensemble std on candidates")
    axes[1].set_title("KL-UCB's optimism shrinks as data arrive", fontsize=9)
    axes[1].grid(alpha=0.3)
    fig.tight_layout()
    return fig
