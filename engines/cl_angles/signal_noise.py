"""The signal–noise data model (Definition 1.1 of the paper, as built by the official script).

A sample of task k is x = [y·μ_k, ξ] with y ∈ {±1} uniform, ξ ~ N(0, σ²I_d), and the two patches in
random order. μ₁ = ‖μ‖·e₁; μ₂ is μ₁ rotated by θ in the (e₁, e₂) plane, so cos θ₁₂ = cos θ.

Draws are *common random numbers* across angles: for one seed, the labels, noise vectors and patch
orders of task 2 are drawn once and only μ₂'s direction changes with θ, so differences between
angles are not sampling noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def signal(angle_deg: float | torch.Tensor, d: int, mu_norm: float) -> torch.Tensor:
    """μ(θ) = ‖μ‖·(cos θ·e₁ + sin θ·e₂); a (d,) vector, or (A, d) for a tensor of angles."""
    th = torch.as_tensor(angle_deg, dtype=torch.float32) * (math.pi / 180.0)
    th = th.reshape(-1)
    mu = torch.zeros(th.numel(), d)
    mu[:, 0] = mu_norm * torch.cos(th)
    mu[:, 1] = mu_norm * torch.sin(th)
    # exact zeros at multiples of 90° (cos 90° is 6e-17 in float64, −4e-8 in float32)
    mu[mu.abs() < 1e-6 * mu_norm] = 0.0
    return mu if torch.as_tensor(angle_deg).dim() > 0 else mu[0]


def task_angle(mu1: torch.Tensor, mu2: torch.Tensor) -> float:
    """θ₁₂ in degrees from cos θ₁₂ = ⟨μ₁, μ₂⟩ / (‖μ₁‖‖μ₂‖)."""
    c = float(torch.dot(mu1, mu2) / (mu1.norm() * mu2.norm()))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


@dataclass
class Draw:
    """The random parts of n samples: labels y ∈ {±1}, noise ξ (n, d), index of the signal patch."""

    y: torch.Tensor  # (..., n) float ±1
    xi: torch.Tensor  # (..., n, d)
    sig: torch.Tensor  # (..., n) long in {0, 1}

    @property
    def y01(self) -> torch.Tensor:
        return (self.y > 0).long()

    def take(self, idx: torch.Tensor) -> "Draw":
        """Select samples along the last sample axis (idx broadcast over leading axes)."""
        g = lambda t: torch.gather(t, -1, idx) if t.dim() == idx.dim() else torch.gather(  # noqa: E731
            t, -2, idx[..., None].expand(*idx.shape, t.shape[-1]))
        return Draw(g(self.y), g(self.xi), g(self.sig))


def draw(shape: tuple[int, ...], n: int, d: int, noise_std: float, gen: torch.Generator) -> Draw:
    """``shape`` leading axes (e.g. seeds) of n samples each."""
    y = torch.randint(0, 2, (*shape, n), generator=gen).float() * 2 - 1
    xi = torch.randn(*shape, n, d, generator=gen) * noise_std
    sig = torch.randint(0, 2, (*shape, n), generator=gen)
    return Draw(y, xi, sig)


def build(dr: Draw, mu: torch.Tensor) -> torch.Tensor:
    """Samples x = [y·μ, ξ] with the patches in the drawn order: (..., n, 2, d).

    ``mu`` is (d,) or broadcastable to the draw's leading axes plus (d,), e.g. (S, A, 1, d) against a
    draw of shape (S, 1, n).
    """
    s = dr.y[..., None] * mu
    first = torch.where(dr.sig[..., None] == 0, s, dr.xi)
    second = torch.where(dr.sig[..., None] == 0, dr.xi, s)
    return torch.stack([first, second], -2)
