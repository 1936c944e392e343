"""Decaying 2-D incompressible turbulence on a doubly periodic MAC (staggered) grid.

The reference integrates the vorticity equation ∂ω/∂t + u·∇ω = ν∇²ω pseudo-spectrally (2/3 de-aliasing,
RK4) on [0, 2π)²; the state handed to the surrogates is the staggered velocity obtained from the stream
function ψ sampled at cell corners: u (west faces) = ∂ψ/∂row, v (north faces) = −∂ψ/∂col by differences of
corner values, so the discrete MAC divergence is exactly 0 and the mean velocity (momentum) is 0.

Array layout (periodic): u[i, j] on the face between cells (i, j-1) and (i, j), v[i, j] on the face between
(i-1, j) and (i, j), corners c[i, j] at the top-left vertex of cell (i, j); all (N, N).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import groups as G
from .swe import SolverError


@dataclass(frozen=True)
class INSConfig:
    n: int = 32
    nu: float = 2e-3
    dt: float = 0.02
    substeps: int = 10  # solver steps per surrogate step (Δt = 0.2)
    k_peak: float = 4.0


def _k(n: int):
    k = np.fft.fftfreq(n, 1.0 / n)
    kr, kc = np.meshgrid(k, k, indexing="ij")
    k2 = kr ** 2 + kc ** 2
    mask = (np.abs(kr) < n / 3) & (np.abs(kc) < n / 3)
    return kr, kc, k2, mask


def random_vorticity(rng: np.random.Generator, n: int, k_peak: float = 4.0, rms_speed: float = 1.0):
    """Random ω with energy spectrum E(k) ∝ k⁴ exp(−2 (k / k_peak)²), scaled to an rms speed."""
    kr, kc, k2, mask = _k(n)
    k = np.sqrt(k2)
    amp = np.where(k > 0, k ** 2 * np.exp(-(k / k_peak) ** 2) / np.maximum(k, 1e-12) ** 0.5, 0.0)
    w_hat = amp * np.exp(2j * np.pi * rng.uniform(size=(n, n))) * mask
    w = np.fft.ifft2(w_hat).real
    u, v = corner_velocity(w)
    s = np.sqrt(np.mean(u ** 2 + v ** 2))
    return w * rms_speed / max(s, 1e-12)


def vortex_pair(n: int, strength: float = 1.0):
    c = (np.arange(n) + 0.5) * 2 * np.pi / n
    r, cc = np.meshgrid(c, c, indexing="ij")
    w = np.zeros((n, n))
    for sign, col in ((1, 0.8 * np.pi), (-1, 1.2 * np.pi)):
        w += sign * strength * 4 * np.exp(-((r - np.pi) ** 2 + (cc - col) ** 2) / (2 * 0.35 ** 2))
    return w - w.mean()


def _psi_hat(w: np.ndarray):
    kr, kc, k2, _ = _k(w.shape[-1])
    wh = np.fft.fft2(w)
    return np.where(k2 > 0, wh / np.where(k2 > 0, k2, 1.0), 0.0)  # ∇²ψ = −ω -> ψ̂ = ω̂ / k²


def corner_velocity(w: np.ndarray):
    """MAC velocities (u, v) from cell-centred ω: ψ sampled at corners by a spectral half-cell shift, then
    staggered differences (dx = 2π/N)."""
    n = w.shape[-1]
    dx = 2 * np.pi / n
    kr, kc, _, _ = _k(n)
    shift = np.exp(-1j * (kr + kc) * dx / 2)  # evaluate at (row − ½, col − ½): the top-left corner
    psi_c = np.fft.ifft2(_psi_hat(w) * shift).real
    u = (np.roll(psi_c, -1, axis=-2) - psi_c) / dx  # ∂ψ/∂row between corners (i, j) and (i+1, j)
    v = -(np.roll(psi_c, -1, axis=-1) - psi_c) / dx  # −∂ψ/∂col between corners (i, j) and (i, j+1)
    return u, v


def vorticity(u: np.ndarray, v: np.ndarray, dx: float | None = None):
    """Discrete curl at corners: ω = ∂v/∂col − ∂u/∂row... in the MAC sense (works on numpy or torch)."""
    n = u.shape[-1]
    dx = dx or 2 * np.pi / n
    if G._is_torch(u):
        import torch

        return -((v - torch.roll(v, 1, -1)) + (u - torch.roll(u, 1, -2))) / dx
    return -((v - np.roll(v, 1, -1)) + (u - np.roll(u, 1, -2))) / dx


def divergence(u, v):
    if G._is_torch(u):
        import torch

        return (torch.roll(u, -1, -1) - u) + (torch.roll(v, -1, -2) - v)
    return (np.roll(u, -1, -1) - u) + (np.roll(v, -1, -2) - v)


def _rhs(w_hat, cfg: INSConfig, kr, kc, k2, mask):
    psi_hat = np.where(k2 > 0, w_hat / np.where(k2 > 0, k2, 1.0), 0.0)
    ur = np.fft.ifft2(-1j * kc * psi_hat).real  # velocity along rows  = −∂ψ/∂col
    uc = np.fft.ifft2(1j * kr * psi_hat).real  # velocity along cols  = ∂ψ/∂row
    wr = np.fft.ifft2(1j * kr * w_hat).real
    wc = np.fft.ifft2(1j * kc * w_hat).real
    return -np.fft.fft2(ur * wr + uc * wc) * mask - cfg.nu * k2 * w_hat


def check(cfg: INSConfig, w: np.ndarray) -> None:
    if not np.all(np.isfinite(w)):
        raise SolverError("the initial vorticity has non-finite values")
    u, v = corner_velocity(w)
    c = float(np.max(np.abs(np.concatenate([u.ravel(), v.ravel()])))) * cfg.dt / (2 * np.pi / cfg.n)
    if c > 0.5:
        raise SolverError(f"time step beyond the CFL limit: |u|max·dt/dx = {c:.2f} > 0.5 (dt = {cfg.dt:g}); "
                          "reduce dt or the initial speed")


def rollout(cfg: INSConfig, w: np.ndarray, frames: int):
    """ω (B, N, N) -> MAC velocities (B, frames + 1, N, N) each, one frame per surrogate step."""
    check(cfg, w)
    kr, kc, k2, mask = _k(cfg.n)
    w_hat = np.fft.fft2(w) * mask
    us, vs = [], []
    for t in range(frames + 1):
        if t:
            for _ in range(cfg.substeps):
                k1 = _rhs(w_hat, cfg, kr, kc, k2, mask)
                k2_ = _rhs(w_hat + 0.5 * cfg.dt * k1, cfg, kr, kc, k2, mask)
                k3 = _rhs(w_hat + 0.5 * cfg.dt * k2_, cfg, kr, kc, k2, mask)
                k4 = _rhs(w_hat + cfg.dt * k3, cfg, kr, kc, k2, mask)
                w_hat = w_hat + cfg.dt / 6 * (k1 + 2 * k2_ + 2 * k3 + k4)
        u, v = corner_velocity(np.fft.ifft2(w_hat).real)
        if not np.all(np.isfinite(u)):
            raise SolverError(f"the turbulence solver became unstable at step {t}: reduce dt")
        us.append(u)
        vs.append(v)
    return np.stack(us, 1), np.stack(vs, 1)


# --------------------------------------------------------------------------- D4 on periodic MAC fields

def to_box(u, v):
    """Periodic faces -> the closed-box layout of ``groups`` (duplicate the wrapped last face)."""
    return G._cat([u, u[..., :, :1]], -1), G._cat([v, v[..., :1, :]], -2)


def act(u, v, g):
    ub, vb = to_box(u, v)
    z = ub[..., :, :-1]  # dummy scalar of the right shape
    _, u2, v2 = G.act_state(z, ub, vb, g)
    return u2[..., :, :-1], v2[..., :-1, :]
