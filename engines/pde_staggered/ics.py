"""Initial conditions: random Gaussian bumps (training distribution), a placed bump, an L-shaped bump
(out of distribution), a vortex pair (velocity only, out of distribution), and user-drawn masks."""
from __future__ import annotations

import numpy as np

from .swe import SolverError, zeros


def _grid(n: int):
    c = np.arange(n) + 0.5
    return np.meshgrid(c, c, indexing="ij")  # (row, col) cell centres


def gaussian(n: int, row: float, col: float, width: float, amp: float) -> np.ndarray:
    r, c = _grid(n)
    return amp * np.exp(-((r - row) ** 2 + (c - col) ** 2) / (2 * width ** 2))


def random_bumps(rng: np.random.Generator, n: int, max_bumps: int = 3, amp=(0.1, 0.3), width=(0.06, 0.14)):
    """1..max_bumps positive bumps; widths are fractions of the basin so they scale with N."""
    z = np.zeros((n, n))
    for _ in range(int(rng.integers(1, max_bumps + 1))):
        w = rng.uniform(*width) * n
        row, col = rng.uniform(0.2 * n, 0.8 * n, size=2)
        z += gaussian(n, row, col, w, rng.uniform(*amp))
    return z


def batch_random(seed: int, batch: int, n: int, max_bumps: int = 3):
    rng = np.random.default_rng(seed)
    zeta, u, v = zeros(batch, n)
    for b in range(batch):
        zeta[b] = random_bumps(rng, n, max_bumps)
    return zeta, u, v


def l_shape(n: int, amp: float = 0.2) -> np.ndarray:
    """An L-shaped plateau with smoothed edges (the paper's OOD shape)."""
    m = np.zeros((n, n))
    a, b, t = int(0.3 * n), int(0.7 * n), max(2, int(0.14 * n))
    m[a:b, a:a + t] = 1.0
    m[b - t:b, a:b] = 1.0
    return amp * smooth(m, 0.04 * n)


def smooth(m: np.ndarray, width: float) -> np.ndarray:
    """Gaussian blur via FFT with zero padding (keeps the bump away from the walls' wrap-around)."""
    n = m.shape[0]
    big = np.zeros((2 * n, 2 * n))
    big[:n, :n] = m
    k = np.fft.fftfreq(2 * n)
    kr, kc = np.meshgrid(k, k, indexing="ij")
    out = np.fft.ifft2(np.fft.fft2(big) * np.exp(-2 * (np.pi * width) ** 2 * (kr ** 2 + kc ** 2))).real
    return out[:n, :n]


def from_mask(mask: np.ndarray, n: int, amp: float) -> np.ndarray:
    """A drawn region (any HxW array, non-zero = water) resampled to N×N, smoothed, scaled to ``amp``."""
    mask = np.asarray(mask, dtype=float)
    if mask.ndim != 2 or mask.size == 0:
        raise SolverError("the drawn initial condition must be a 2-D image")
    if not np.all(np.isfinite(mask)):
        raise SolverError("the drawn initial condition has non-finite values")
    r = (np.arange(n) + 0.5) * mask.shape[0] / n
    c = (np.arange(n) + 0.5) * mask.shape[1] / n
    m = (mask[np.clip(r.astype(int), 0, mask.shape[0] - 1)][:, np.clip(c.astype(int), 0, mask.shape[1] - 1)] > 0)
    if not m.any():
        raise SolverError("the drawn initial condition is empty: draw a region of raised water")
    if m.mean() > 0.6:
        raise SolverError(f"the drawn region covers {100 * m.mean():.0f}% of the basin (max 60%): draw a bump, "
                          "not a flood")
    z = smooth(m.astype(float), 0.04 * n)
    return amp * z / z.max()


def vortex_pair(n: int, strength: float = 0.15):
    """A counter-rotating vortex pair (ζ = 0) from a stream function at cell corners: u = ∂ψ/∂row,
    v = -∂ψ/∂col on the faces, ψ = 0 on the walls, so the walls see no normal flow."""
    c = np.arange(n + 1, dtype=float)
    r, cc = np.meshgrid(c, c, indexing="ij")
    w = 0.1 * n
    psi = np.zeros((n + 1, n + 1))
    for sign, col in ((1, 0.4 * n), (-1, 0.6 * n)):
        psi += sign * strength * w * np.exp(-((r - 0.5 * n) ** 2 + (cc - col) ** 2) / (2 * w ** 2))
    psi[0, :] = psi[-1, :] = psi[:, 0] = psi[:, -1] = 0.0
    u = psi[1:, :] - psi[:-1, :]  # (n, n+1)
    v = -(psi[:, 1:] - psi[:, :-1])  # (n+1, n)
    return np.zeros((n, n)), u, v
