"""Step 1 of SLUG: forget and retain gradients from θ⁽⁰⁾ in one pass each (no optimiser step).

Forget loss (matched pairs only, official ``calc_grad``: ``nn.CosineEmbeddingLoss`` with target 1):
    L_f = 1/N_f Σ_i (1 − cos(v_i, t_i))
Retain loss: CLIP's symmetric InfoNCE, L_r = ½ (ℓ_i2t + ℓ_t2i); images sharing a caption are all positives
of that caption (the zoo's captions repeat, e.g. "a photo of the digit seven").
Per-parameter gradients are summed over batches and divided by the number of batches, as the code does.
We store ∇L_f itself (the code stores ∇(−L_f) and steps with a negative ratio: the same update).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F


@dataclass
class GradientPass:
    grads: dict[str, torch.Tensor]
    loss: float
    batches: int
    examples: int
    seconds: float
    optimizer_steps: int = 0  # always 0: gradients only
    batch_sizes: list[int] = field(default_factory=list)


def forget_loss(zc, images, captions: list[str]) -> torch.Tensor:
    """L_f: mean of 1 − cos(image, its own caption); negatives are left alone."""
    v, t = zc.encode_images(images), zc.encode_texts(captions)  # unit vectors, with the autograd graph
    return (1.0 - (v * t).sum(-1)).mean()


def retain_loss(zc, images, captions: list[str]) -> torch.Tensor:
    """L_r: CLIP InfoNCE (image→text and text→image), duplicate captions treated as shared positives."""
    uniq = sorted(set(captions))
    pos = {c: i for i, c in enumerate(uniq)}
    inv = torch.tensor([pos[c] for c in captions], device=zc.device)
    v, t = zc.encode_images(images), zc.encode_texts(uniq)
    logits = zc.model.logit_scale.exp().clamp(max=100) * v @ t.T  # (B, U)
    onehot = F.one_hot(inv, len(uniq)).float()
    l_i2t = F.cross_entropy(logits, inv)
    l_t2i = -(F.log_softmax(logits.T, dim=1) * (onehot.T / onehot.T.sum(1, keepdim=True))).sum(1).mean()
    return 0.5 * (l_i2t + l_t2i)


def accumulate_gradients(zc, images: np.ndarray, captions: list[str], loss: str, batch_size: int = 64,
                         names: set[str] | None = None, progress=None, square: bool = False) -> GradientPass:
    """One pass over the pairs: Σ_batches ∇L / #batches for every (or the named) parameter; with ``square``
    Σ_batches (∇L)² / #batches (the official ``calc_grad`` with ``norm='l2'``: SSD's importances)."""
    fn = {"forget": forget_loss, "retain": retain_loss}[loss]
    model = zc.model
    params = {n: p for n, p in model.named_parameters() if names is None or n in names}
    grads = {n: torch.zeros_like(p) for n, p in params.items()}
    was_training = model.training
    model.train()
    t0 = time.perf_counter()
    total, sizes = 0.0, []
    n = len(images)
    nb = (n + batch_size - 1) // batch_size
    try:
        for b in range(nb):
            sl = slice(b * batch_size, (b + 1) * batch_size)
            model.zero_grad(set_to_none=True)
            value = fn(zc, images[sl], captions[sl])
            value.backward()
            for k, p in params.items():
                if p.grad is not None:
                    grads[k] += p.grad.square() if square else p.grad
            total += float(value.detach())
            sizes.append(len(captions[sl]))
            if progress is not None:
                progress((b + 1) / nb, f"{loss} gradients: batch {b + 1}/{nb}")
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    for k in grads:
        grads[k] /= max(nb, 1)
    return GradientPass(grads, total / max(nb, 1), nb, n, time.perf_counter() - t0, 0, sizes)
