"""The BiClip operator and a drop-in ``torch.optim`` inner optimiser (``BiClipSGD``).

BiClip_{u,d}(x)_j = sign(x_j) · min(max(|x_j|, d), u), coordinate-wise, 0 ≤ d ≤ u:
large coordinates shrink to u (robust to heavy tails), small non-zero ones are raised to d
(an Adam-like per-coordinate normalisation with no state); zero stays zero.
"""
from __future__ import annotations

import torch


def bi_clip(x: torch.Tensor, d, u) -> torch.Tensor:
    """Coordinate-wise BiClip; ``d`` and ``u`` are scalars or tensors broadcastable to ``x``."""
    return torch.sign(x) * torch.minimum(torch.maximum(x.abs(), torch.as_tensor(d, dtype=x.dtype)),
                                         torch.as_tensor(u, dtype=x.dtype))


def bi_clip_reference(x: float, d: float, u: float) -> float:
    """Scalar reference of the definition (for tests)."""
    if x == 0:
        return 0.0
    s = 1.0 if x > 0 else -1.0
    return s * min(max(abs(x), d), u)


def clip_fractions(x: torch.Tensor, d, u) -> tuple[torch.Tensor, torch.Tensor]:
    """Fractions of coordinates clipped down (|x| > u) and raised up (0 < |x| < d), over the last axis."""
    a = x.abs()
    down = (a > torch.as_tensor(u, dtype=x.dtype)).to(x.dtype).mean(-1)
    up = ((a > 0) & (a < torch.as_tensor(d, dtype=x.dtype))).to(x.dtype).mean(-1)
    return down, up


def l2_clip(x: torch.Tensor, u) -> torch.Tensor:
    """Norm clipping over the last axis: x · min(1, u / ‖x‖₂) (the 'L2Clip' inner optimiser)."""
    n = x.norm(dim=-1, keepdim=True)
    return x * torch.clamp(torch.as_tensor(u, dtype=x.dtype) / torch.clamp(n, min=1e-300), max=1.0)


def threshold_schedule(d0, u0, t: int, gamma: float):
    """u_t = u₀(1+t)^γ grows and d_t = d₀(1+t)^−γ shrinks (γ = 0: constant thresholds)."""
    if gamma == 0:
        return d0, u0
    f = (1.0 + t) ** gamma
    return d0 / f, u0 * f


class BiClipSGD(torch.optim.Optimizer):
    """Inner optimiser of TailOPT: p ← p − lr · BiClip_{u,d}(∇p). Keeps no per-parameter state."""

    def __init__(self, params, lr: float = 1e-2, d: float = 1e-4, u: float = 1e-1):
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}")
        if not 0 <= d <= u:
            raise ValueError(f"need 0 ≤ d ≤ u, got d={d}, u={u}")
        super().__init__(params, dict(lr=lr, d=d, u=u))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(bi_clip(p.grad, group["d"], group["u"]), alpha=-group["lr"])
        return loss
