"""Figures of the benchmark (matplotlib)."""
from __future__ import annotations

import numpy as np

from .benchmark import TAGS
from engines.common.figures import subplots


def gap_figure(res: dict, title: str = "Exact edit-set match by gap type"):

    runs = res["runs"]
    tags = [t for t in TAGS if any(t in r["by_tag"] for r in runs)] + ["all"]
    fig, ax = subplots(figsize=(9, 3.6))
    w = 0.8 / max(len(runs), 1)
    x = np.arange(len(tags))
    for i, r in enumerate(runs):
        vals = [100 * (r["overall"]["exact"] if t == "all" else r["by_tag"].get(t, {}).get("exact", np.nan)) for t in tags]
        ax.bar(x + (i - (len(runs) - 1) / 2) * w, vals, w, label=r["label"])
    ax.set_xticks(x, [f"{t}\n(n={int(res['n'] if t == 'all' else runs[0]['by_tag'].get(t, {}).get('n', 0))})" for t in tags], fontsize=8)
    ax.set_ylabel("exact match (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title + f" — {res['split']} split, {res['n']} instructions", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    fig.tight_layout()
    return fig


def error_figure(res: dict):
    """Over-specification (unintended edits) and under-specification per mapper."""

    runs = res["runs"]
    fig, ax = subplots(figsize=(7, 3.2))
    y = np.arange(len(runs))
    ax.barh(y - 0.2, [100 * r["overall"]["over"] for r in runs], 0.4, label="unintended edit (over-spec.)", color="#d9534f")
    ax.barh(y + 0.2, [100 * r["overall"]["under"] for r in runs], 0.4, label="missed edit (under-spec.)", color="#f0ad4e")
    ax.set_yticks(y, [r["label"] for r in runs], fontsize=7)
    ax.set_xlabel("% of instructions")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
