"""Patching and the pre-training masks (spec §1 (a)).

Decomposed frequency learning: X = rFFT(x); per view draw τ ~ U(0, τ_max); with probability p zero the LOW
band X[:⌊τ·F⌋], otherwise the HIGH band X[⌊τ·F⌋:]; the inverse FFT is one filtered view. The ablation is random
patch masking (PatchTST/SimMTM style): zero a share of whole patches per view.
"""
from __future__ import annotations

import torch


def patchify(x: torch.Tensor, patch_len: int) -> torch.Tensor:
    """[B, L] → [B, L // P, P] non-overlapping patches (the most recent points kept when L % P ≠ 0)."""
    L = x.shape[-1]
    n = L // patch_len
    return x[..., L - n * patch_len:].unfold(-1, patch_len, patch_len)


def band_mask(n_bins: int, tau: torch.Tensor, low: torch.Tensor) -> torch.Tensor:
    """Keep-mask [..., F] for rFFT bins: cut = ⌊τ·F⌋; low=True zeroes bins < cut, low=False zeroes bins ≥ cut."""
    cut = torch.floor(tau * n_bins).long()[..., None]
    k = torch.arange(n_bins, device=tau.device)
    below = k < cut
    return torch.where(low[..., None], ~below, below)


def freq_view(x: torch.Tensor, tau, low) -> torch.Tensor:
    """One view per row of x [B, L] with per-row τ (float or [B]) and band (bool or [B]); returns [B, L]."""
    B, L = x.shape
    X = torch.fft.rfft(x, dim=-1)
    tau = torch.as_tensor(tau, dtype=torch.float32, device=x.device).expand(B)
    low = torch.as_tensor(low, dtype=torch.bool, device=x.device).expand(B)
    keep = band_mask(X.shape[-1], tau, low)
    return torch.fft.irfft(X * keep, n=L, dim=-1)


def freq_multi_views(x: torch.Tensor, k: int, tau_max: float = 0.4, p_low: float = 0.5,
                     generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
    """K_f independently masked views [K, B, L]; τ and the band are drawn per view and per series.

    (The released code draws one τ and one band per batch and view; per series gives every series the same
    distribution of views, which is what the paper describes.)"""
    B, L = x.shape
    tau = torch.rand(k, B, generator=generator, device=x.device) * tau_max
    low = torch.rand(k, B, generator=generator, device=x.device) < p_low
    X = torch.fft.rfft(x, dim=-1)  # [B, F]
    keep = band_mask(X.shape[-1], tau, low)  # [K, B, F]
    views = torch.fft.irfft(X[None] * keep, n=L, dim=-1)
    return views, {"tau": tau, "low": low}


def patch_multi_views(x: torch.Tensor, k: int, patch_len: int, ratio: float = 0.4,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """K views [K, B, L], each with round(ratio·N) random whole patches set to zero (ablation)."""
    B, L = x.shape
    n = L // patch_len
    n_mask = max(1, int(round(ratio * n)))
    order = torch.rand(k, B, n, generator=generator, device=x.device).argsort(-1)
    masked = torch.zeros(k, B, n, dtype=torch.bool, device=x.device)
    masked.scatter_(-1, order[..., :n_mask], True)
    keep = (~masked).repeat_interleave(patch_len, -1)
    pad = L - keep.shape[-1]
    if pad:
        keep = torch.cat([torch.ones(k, B, pad, dtype=torch.bool, device=x.device), keep], -1)
    return x[None] * keep
