"""Figures: mask overlay, patch-weight heatmaps, mel-spectrograms, classifier bars."""
from __future__ import annotations

import numpy as np

from . import sounds
from engines.common.figures import subplots

OVERLAY = np.array([0.0, 0.9, 1.0])


def overlay(image: np.ndarray, mask: np.ndarray | None, clicks=()) -> np.ndarray:
    """The image with the mask tinted cyan and its outline, clicks drawn (green include, red exclude)."""
    from scipy import ndimage

    img = np.asarray(image, np.float32)[..., :3] / 255.0
    out = img.copy()
    if mask is not None and mask.any():
        out[mask] = 0.45 * img[mask] + 0.55 * OVERLAY
        edge = mask & ~ndimage.binary_erosion(mask)
        out[edge] = OVERLAY
    h, w = mask.shape if mask is not None else img.shape[:2]
    r = max(1, round(max(h, w) / 64))
    for x, y, lab in clicks:
        x, y = int(x), int(y)
        col = (0.1, 0.8, 0.1) if lab == 1 else (0.9, 0.1, 0.1)
        out[max(0, y - r):y + r + 1, max(0, x - r):x + r + 1] = col
    from .images import for_display

    return for_display((np.clip(out, 0, 1) * 255).astype(np.uint8))


def results_figure(mel_obj, mel_whole, w_used, w_attn, probs_obj, probs_whole, clicked: str | None,
                   attn_label: str, mode_label: str):
    import matplotlib

    matplotlib.use("Agg")

    g = int(round(len(w_used) ** 0.5))
    fig, ax = subplots(2, 3, figsize=(12, 6.2), gridspec_kw=dict(width_ratios=[1, 1, 1.4]))
    for a, w, title in ((ax[0, 0], w_used, f"weights used ({mode_label})"), (ax[0, 1], w_attn, attn_label)):
        im = a.imshow(np.asarray(w).reshape(g, g), cmap="magma")
        a.set_title(title, fontsize=9)
        a.set_xticks([])
        a.set_yticks([])
        fig.colorbar(im, ax=a, fraction=0.046)
    for a, m, title in ((ax[1, 0], mel_obj, "generated: clicked object"), (ax[1, 1], mel_whole, "generated: whole scene")):
        a.imshow(np.asarray(m), origin="lower", aspect="auto", cmap="viridis", vmin=-1, vmax=1)
        a.set_title(title, fontsize=9)
        a.set_xlabel("frame (10 ms)")
        a.set_ylabel("mel bin")
    xs = np.arange(len(sounds.CLASSES))
    for a, pr, title in ((ax[0, 2], probs_obj, "classifier: clicked-object clip"),
                         (ax[1, 2], probs_whole, "classifier: whole-scene clip")):
        cols = ["tab:orange" if clicked == c else "tab:blue" for c in sounds.CLASSES]
        a.bar(xs, pr, color=cols)
        a.set_xticks(xs, sounds.CLASSES)
        a.set_ylim(0, 1)
        a.set_title(title + (f" (orange = clicked: {clicked})" if clicked else ""), fontsize=9)
    fig.tight_layout()
    return fig


def benchmark_figure(res: dict):
    import matplotlib

    matplotlib.use("Agg")

    names = [("acc_mask", "mask (ours)"), ("acc_mask_interior", "mask (interior)"),
             ("acc_text_attention", "text attention"), ("acc_whole", "whole image"),
             ("acc_text_only_all", "text: all objects"), ("acc_additive_mask", "additive attn + mask")]
    names = [(k, n) for k, n in names if res.get(k) is not None]
    colours = {"acc_mask": "tab:green", "acc_mask_interior": "tab:green", "acc_text_attention": "tab:olive",
               "acc_whole": "tab:gray", "acc_text_only_all": "tab:gray", "acc_additive_mask": "tab:red"}
    fig, ax = subplots(1, 2, figsize=(11, 3.6))
    ax[0].bar([n for _, n in names], [res[k] for k, _ in names],
              color=[colours[k] for k, _ in names])
    ax[0].axhline(res.get("single_acc", 1.0), ls="--", c="k", lw=1, label="classifier ceiling")
    ax[0].set_ylim(0, 1.05)
    ax[0].set_ylabel("clicked-class accuracy")
    ax[0].tick_params(axis="x", rotation=20)
    ax[0].legend(fontsize=8)
    pre, lc = res.get("pretrain_loss_curve") or [], res.get("loss_curve") or []
    ax[1].plot(np.arange(len(pre)) * 25, pre, label="stage 1: AudioLDM analogue (c = CLAP audio)")
    ax[1].plot(len(pre) * 25 + np.arange(len(lc)) * 25, lc, label="stage 2: fine-tuning (c = object attention)")
    ax[1].set_yscale("log")
    ax[1].set_xlabel("training step")
    ax[1].set_ylabel("ε-prediction loss")
    ax[1].set_title("diffusion training", fontsize=9)
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    return fig
