"""Figures (matplotlib object API only) and the board view; no torch."""
from __future__ import annotations

import numpy as np
from engines.common.figures import figure as Figure

LABELS = {
    "dense_gelu": "Dense GELU", "dense_relu": "Dense ReLU", "topk_gelu": "TopK MoE", "topk_relu": "TopK+ReLU",
    "topk_gelu_sparsity": "TopK+sparsity router", "moex": "MoE-X", "sae": "SAE on dense",
}


def board_svg(fen: str, size: int = 360, highlight: list[str] | None = None) -> str:
    import chess
    import chess.svg

    board = chess.Board(fen)
    fill = {chess.parse_square(s): "#f4c43088" for s in (highlight or [])}
    last = None
    return chess.svg.board(board, size=size, fill=fill, lastmove=last, coordinates=True)


def move_list_markdown(sans: list[str], plies: int) -> str:
    """Numbered moves; the moves already played are bold, the cursor sits before White's next move."""
    parts = []
    for i, s in enumerate(sans):
        tok = (f"{i // 2 + 1}. " if i % 2 == 0 else "") + s
        parts.append(f"**{tok}**" if i < plies else tok)
        if i == plies - 1:
            parts.append("◀")
    return " ".join(parts)


def grid_figure(rows: list[dict]) -> Figure:
    """Coverage and reconstruction per variant (mean ± sd over seeds)."""
    fig = Figure(figsize=(9, 3.6))
    axes = fig.subplots(1, 3)
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    for ax, key, title in zip(axes, ("coverage", "reconstruction", "val_loss"),
                              ("Coverage", "Board reconstruction", "Validation loss")):
        vals = [[r[key] for r in rows if r["variant"] == v and r.get(key) is not None] for v in variants]
        m = [np.mean(x) if x else np.nan for x in vals]
        s = [np.std(x) if len(x) > 1 else 0 for x in vals]
        colors = ["#d62728" if v == "moex" else "#7f7f7f" if v.startswith("dense") else "#1f77b4" for v in variants]
        ax.bar(range(len(variants)), m, yerr=s, color=colors, capsize=3)
        ax.set_xticks(range(len(variants)), [LABELS.get(v, v) for v in variants], rotation=40, ha="right",
                      fontsize=8)
        ax.set_title(title, fontsize=10)
        if key == "val_loss":
            lo = np.nanmin(m)
            ax.set_ylim(lo * 0.95, np.nanmax(m) * 1.02)
    fig.tight_layout()
    return fig


def curves_figure(curves: dict) -> Figure:
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot(111)
    for name, c in curves.items():
        c = np.asarray(c)
        if len(c):
            ax.plot(c[:, 0], c[:, 1], label=name, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats/char)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def router_figure(stats: dict[str, dict]) -> Figure:
    """Router score vs true expert L0 (paper Fig. 9), one panel per router."""
    fig = Figure(figsize=(4 * max(1, len(stats)), 3.4))
    axes = np.atleast_1d(fig.subplots(1, max(1, len(stats))))
    for ax, (name, st) in zip(axes, stats.items()):
        s = st.get("sample", {})
        ax.scatter(s.get("l0", []), s.get("score", []), s=3, alpha=0.3)
        ax.set_xlabel("true expert L0 (active units)")
        ax.set_ylabel("router score")
        ax.set_title(f"{name}: ρ = {st.get('spearman_token_mean', float('nan')):.2f}", fontsize=10)
    fig.tight_layout()
    return fig
