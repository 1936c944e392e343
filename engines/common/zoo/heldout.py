"""Held-out metrics of the zoo models, as the release manifests and ``make models`` record and check them.

Every metric is measured on data the model never saw in training (fresh minicanvas seeds ≥ 10,000, the
digits / Fashion-MNIST test splits, never-trained prompt combinations) with fixed seeds, so the same
weights give the same numbers. ``TOLERANCE`` is what a retrain from scratch may differ by (thread count
and hardware change float rounding, hence the trajectory) before ``make models`` reports a mismatch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

N_IMAGES = 2000  # real minicanvas test images for the judges and the autoencoder
N_GENERATED = 200  # text-to-image samples from held-out prompts
JUDGE_SEED, CLIP_SEED = 20_001, 10_001

# Absolute tolerance on accuracies (fractions) and relative tolerance on errors, for a retrain.
TOLERANCE = {"accuracy": 0.03, "generated": 0.06, "relative": 0.2}
# "Metrics do not move" when weights are stored in float16: at most this much (absolute / relative).
HALF_TOLERANCE = {"accuracy": 0.005, "generated": 0.02, "relative": 0.02}


def kind_of(metric: str) -> str:
    if metric.startswith("t2i_"):
        return "generated"
    if metric.endswith("mae") or "loss" in metric or metric.endswith("_var"):
        return "relative"
    return "accuracy"


def measure(name: str, model: Any, judges: dict | None = None) -> dict[str, float]:
    """Held-out metrics of a loaded zoo model. ``judges`` ({"object": Judge, "style": Judge}) for vae / t2i."""
    import torch

    from engines.common import data

    with torch.no_grad():
        if name == "clip":
            from .clip import minicanvas_prompts

            out = {}
            mc = data.minicanvas(1000, seed=CLIP_SEED)
            for key in ("object", "style"):
                p = model.zero_shot(mc.images, minicanvas_prompts(key)).argmax(1)
                out[f"minicanvas_{key}"] = float((p == mc.labels[key]).mean())
            dg = data.digits("test")
            out["digits"] = float((model.zero_shot(dg.images, [data.digit_caption(k) for k in range(10)]).argmax(1)
                                   == dg.labels["label"]).mean())
            if data.fashion_available():
                fm = data.fashion_mnist("test", n=1000)
                out["fashion_mnist"] = float((model.zero_shot(fm.images, [data.fashion_caption(k) for k in range(10)]).argmax(1)
                                              == fm.labels["label"]).mean())
            return out
        test = data.minicanvas(N_IMAGES, seed=JUDGE_SEED)
        if name.startswith("judge_"):
            t = model.target
            return {"test_accuracy": float((model.predict(test.images) == test.labels[t]).mean())}
        if name == "vae":
            from .vae import reconstruct

            rec = reconstruct(model, test.images)
            out = {f"judge_{t}": float((j.predict(rec) == test.labels[t]).mean()) for t, j in (judges or {}).items()}
            out["test_mae"] = float(np.abs(rec.astype(float) - test.images.astype(float)).mean() / 255)
            return out
        if name == "t2i":
            from .reproduce import generate_held_out

            imgs, _, objs, styles = generate_held_out(model, n=N_GENERATED)
            po, ps = judges["object"].predict(imgs), judges["style"].predict(imgs)
            out = {"t2i_object": float((po == objs).mean()), "t2i_style": float((ps == styles).mean())}
            out["t2i_min_style"] = float(min((ps[styles == s] == s).mean() for s in np.unique(styles)))
            return out
    raise KeyError(name)


def compare(new: dict[str, float], ref: dict[str, float], tol: dict[str, float] = TOLERANCE) -> list[str]:
    """Metrics of ``new`` outside the tolerance of ``ref`` (empty: they agree)."""
    bad = []
    for k, r in ref.items():
        if k not in new or not isinstance(r, (int, float)):
            continue
        v, kind = new[k], kind_of(k)
        lim = tol[kind] * (abs(r) if kind == "relative" else 1.0)
        if abs(v - r) > lim + 1e-12:
            bad.append(f"{k}: {v:.4g} vs {r:.4g} (tolerance ±{lim:.3g})")
    return bad
