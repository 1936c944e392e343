"""Figures of the SAeUron tab and report (matplotlib, Agg)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from engines.common.figures import subplots


def _up(img: np.ndarray, f: int) -> np.ndarray:
    return img.repeat(f, 0).repeat(f, 1)


def pair_grid(original: np.ndarray, erased: np.ndarray, scale: int = 4, pad: int = 4) -> np.ndarray:
    """Top row: original images; bottom row: the same seeds with the concepts erased (uint8)."""
    n, H, W, _ = original.shape
    h, w = H * scale, W * scale
    out = np.full((2 * h + 3 * pad, n * w + (n + 1) * pad, 3), 255, np.uint8)
    for r, imgs in enumerate((original, erased)):
        for i, im in enumerate(imgs):
            y, x = pad + r * (h + pad), pad + i * (w + pad)
            out[y:y + h, x:x + w] = _up(im, scale)
    return out


def judge_bars(judges: dict, erased_concepts: list[str]):
    fig, axes = subplots(1, 2, figsize=(10, 3.2))
    for ax, kind in zip(axes, ("style", "object")):
        j = judges[kind]
        x = np.arange(len(j["classes"]))
        ax.bar(x - 0.2, j["before"], 0.4, label="original", color="#8aa4c8")
        ax.bar(x + 0.2, j["after"], 0.4, label="erased", color="#d9534f")
        ax.set_xticks(x, j["classes"], rotation=45, ha="right", fontsize=8)
        for i, c in enumerate(j["classes"]):
            if c in erased_concepts:
                ax.get_xticklabels()[i].set_color("#d9534f")
                ax.get_xticklabels()[i].set_fontweight("bold")
        ax.set_ylim(0, 1)
        ax.set_title(f"{kind} judge: mean probability")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def score_histograms(diag: dict, cap_step: int, steps: int):
    items = [(kind, c, d, plan) for kind, (info, cap, plan) in diag.items() for c, d in info.items()]
    fig, axes = subplots(1, len(items), figsize=(4.5 * len(items), 3), squeeze=False)
    from .erase import CLASSES

    for ax, (kind, c, d, plan) in zip(axes[0], items):
        sc = d["score"]
        t = plan.index(None, cap_step / max(1, steps - 1))
        s = sc[t].numpy()
        ax.hist(s, bins=60, color="#999", log=True)
        for f in d["selected"][t]:
            ax.axvline(float(s[int(f)]), color="#d9534f", lw=1.5)
        ax.set_title(f"scores for '{CLASSES[kind][c]}' at step {t} ({len(d['selected'][t])} selected)", fontsize=9)
        ax.set_xlabel("importance score (share on concept − share elsewhere)", fontsize=8)
    fig.tight_layout()
    return fig


def heatmaps(diag: dict, images: np.ndarray, classes: dict, max_feats: int = 3, max_images: int = 4):
    rows = []
    for kind, (info, cap, plan) in diag.items():
        if cap is None or cap.z is None or cap.feats is None or len(cap.feats) == 0:
            continue
        for j, f in enumerate(cap.feats.tolist()[: max_feats]):
            rows.append((f"{kind} feature {f}", cap.z[:, :, j], cap.hw))
    if not rows:
        return None
    n_img = min(max_images, len(images))
    fig, axes = subplots(len(rows), n_img, figsize=(1.8 * n_img, 1.8 * len(rows)), squeeze=False)
    vmax = max(float(r[1].max()) for r in rows) or 1.0
    for r, (label, z, (H, W)) in enumerate(rows):
        for i in range(n_img):
            ax = axes[r][i]
            ax.imshow(images[i], extent=(0, 1, 1, 0))
            ax.imshow(z[i].reshape(H, W).numpy(), extent=(0, 1, 1, 0), cmap="magma", alpha=0.6, vmin=0, vmax=vmax,
                      interpolation="bilinear")
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_ylabel(label, fontsize=7)
    fig.suptitle("where the selected features fire (original images)", fontsize=9)
    fig.tight_layout()
    return fig


def benchmark_bars(rows: list[dict], title: str):
    fig, ax = subplots(figsize=(7, 3.2))
    names = [r["target"] for r in rows]
    x = np.arange(len(names))
    for k, (m, col) in enumerate((("UA", "#d9534f"), ("IRA", "#5cb85c"), ("CRA", "#428bca"))):
        ax.bar(x + (k - 1) * 0.27, [r[m] for r in rows], 0.27, label=m, color=col)
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=3)
    fig.tight_layout()
    return fig
