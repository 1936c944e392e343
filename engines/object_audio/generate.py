"""Test-time mask substitution (Sec. 3.3) and sampling: CFG + DDIM in latent space, decoder, Griffin-Lim.

``mask_to_weights``: the SAM (or flood-fill) mask → average-pooled to the P-patch grid → normalised to
sum 1 → rescaled so that its mean and variance match the attention-weight statistics of training →
clipped at 0 and renormalised. The rescaling solves for the scale s of
``w(s) = normalise(max(0, 1/P + s (m − 1/P)))`` with var(w(s)) = σ²_train by bisection, so the three
invariants (w ≥ 0, Σw = 1, var w = σ²_train) hold exactly whenever σ²_train is reachable.
"""
from __future__ import annotations

import numpy as np


class MaskError(ValueError):
    pass


def pool_mask(mask: np.ndarray, grid: int) -> np.ndarray:
    """Bool H×W mask → fraction of each of the grid×grid patches it covers, flattened (P,)."""
    m = np.asarray(mask, np.float64)
    h, w = m.shape
    ys = (np.arange(h) * grid // h)
    xs = (np.arange(w) * grid // w)
    out = np.zeros((grid, grid))
    np.add.at(out, (ys[:, None].repeat(w, 1), xs[None, :].repeat(h, 0)), m)
    counts = np.zeros((grid, grid))
    np.add.at(counts, (ys[:, None].repeat(w, 1), xs[None, :].repeat(h, 0)), 1.0)
    return (out / counts).reshape(-1)


def _weights(m: np.ndarray, s: float) -> np.ndarray:
    P = len(m)
    w = np.maximum(0.0, 1.0 / P + s * (m - 1.0 / P))
    return w / w.sum()


def rescale_weights(m: np.ndarray, target_var: float, tol: float = 1e-6) -> np.ndarray:
    """Patch weights m (sum 1) → w ≥ 0, Σw = 1, mean 1/P, variance target_var (when reachable)."""
    m = np.asarray(m, np.float64)
    if m.sum() <= 0:
        raise MaskError("the mask is empty: it covers no pixel of the image")
    m = m / m.sum()
    if np.var(m) == 0:
        return m  # a full-image mask is the uniform (whole-scene) weighting
    lo, hi = 0.0, 1.0
    while np.var(_weights(m, hi)) < target_var and hi < 1e6:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.var(_weights(m, mid)) < target_var:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol * hi:
            break
    return _weights(m, 0.5 * (lo + hi))


def interior_patches(m: np.ndarray, min_cover: float = 0.9) -> np.ndarray:
    """Pooled mask (P,) → 1 on the patches the mask covers almost entirely, 0 elsewhere (the pooled mask
    itself when no patch qualifies, e.g. an object smaller than a patch)."""
    inner = (np.asarray(m) >= min_cover).astype(np.float64)
    return inner if inner.any() else np.asarray(m, np.float64)


def mask_to_weights(mask: np.ndarray, grid: int, target_var: float, downsample: str = "average") -> np.ndarray:
    """The click's mask → substituted attention weights. ``downsample``: "average" (area fraction per patch,
    the spec's reading of "downsampled to the patch grid") or "interior" (only patches inside the mask)."""
    if not np.asarray(mask).any():
        raise MaskError("the mask is empty: the segmenter found no object at the click (try another click "
                        "or the flood-fill segmenter)")
    m = pool_mask(mask, grid)
    return rescale_weights(interior_patches(m) if downsample == "interior" else m, target_var)


def uniform_weights(P: int) -> np.ndarray:
    """Whole-image conditioning (the holistic baseline): every patch weighted 1/P."""
    return np.full(P, 1.0 / P)


def sample_latents(bundle, cond, steps: int = 50, cfg: float = 2.0, seed: int = 0):
    """DDIM with classifier-free guidance: ε = ε(∅) + s (ε(c) − ε(∅)). ``cond`` (B, 1, 64)."""
    import torch

    from .models import predict_noise

    B = cond.shape[0]
    C = bundle.meta["latent_channels"]
    g = torch.Generator().manual_seed(int(seed))
    x = torch.randn(B, C, 8, 12, generator=g)
    sch = bundle.ddim
    sch.set_timesteps(steps)
    hid = torch.cat([torch.zeros_like(cond), cond])
    with torch.no_grad():
        for t in sch.timesteps:
            eps = predict_noise(bundle.unet, torch.cat([x, x]), t, hid)
            e_u, e_c = eps.chunk(2)
            x = sch.step(e_u + cfg * (e_c - e_u), t, x).prev_sample
    return x


def generate_mels(bundle, patches, weights=None, queries=None, steps: int = 50, cfg: float = 2.0, seed: int = 0):
    """Patch features (B, P, D) + either substituted ``weights`` (B, P) or text ``queries`` (B, L) → log-mels."""
    import torch

    with torch.no_grad():
        w = None if weights is None else torch.as_tensor(np.asarray(weights), dtype=torch.float32)
        c, used = bundle.attn(patches, query=queries, weights=w)
        z = sample_latents(bundle, c, steps, cfg, seed)
        return bundle.base.ae.decode(z), used


def classify(bundle, mels) -> np.ndarray:
    """Class probabilities (softmax over the classifier's logits) of log-mels (B, 64, 96)."""
    import torch

    with torch.no_grad():
        return torch.softmax(bundle.base.cls(mels), -1).numpy()
