"""Shallow-water equations on an Arakawa C-grid in a closed square basin (the reference solver).

    ∂u/∂t = -g ∂ζ/∂x - r u,   ∂v/∂t = -g ∂ζ/∂y - r v,   ∂ζ/∂t = -∂(h u)/∂x - ∂(h v)/∂y,   h = H + ζ

Forward-backward time stepping (velocities first, then the height with the new velocities), flux-form
continuity with face depths h = H + mean of the two neighbouring ζ, zero normal velocity on the walls.
The height update is a telescoping sum of face fluxes that vanish at the walls, so ∑ζ is conserved to
round-off, and every operation commutes with the eight rotations/reflections of the square grid
(differences only change sign, sums only change order), so the scheme is D4-equivariant to machine
precision. Vectorised over a leading batch axis (numpy, float64).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_CFL = 1.0 / np.sqrt(2.0)  # forward-backward stability limit of the 2-D C-grid gravity-wave scheme


class SolverError(ValueError):
    """Unstable or unphysical solver input (CFL violation, non-positive depth, non-finite values)."""


@dataclass(frozen=True)
class SWEConfig:
    n: int = 32
    g: float = 1.0
    depth: float = 1.0  # mean depth H
    dx: float = 1.0
    dt: float = 0.5
    drag: float = 0.002
    substeps: int = 4  # solver steps per surrogate step


def zeros(batch: int, n: int):
    return np.zeros((batch, n, n)), np.zeros((batch, n, n + 1)), np.zeros((batch, n + 1, n))


def cfl(cfg: SWEConfig, zeta: np.ndarray) -> float:
    """Courant number c·dt/dx with the fastest gravity-wave speed c = sqrt(g·max h)."""
    hmax = cfg.depth + float(np.max(zeta)) if zeta.size else cfg.depth
    return float(np.sqrt(cfg.g * max(hmax, 0.0)) * cfg.dt / cfg.dx)


def check_state(cfg: SWEConfig, zeta, u, v, what: str = "initial condition") -> None:
    """Refuse states the explicit scheme cannot integrate, with a message that names the problem."""
    for name, a in (("ζ", zeta), ("u", u), ("v", v)):
        if not np.all(np.isfinite(a)):
            raise SolverError(f"the {what} has non-finite {name} values (NaN or inf)")
    hmin = cfg.depth + float(np.min(zeta))
    if hmin <= 0:
        raise SolverError(f"negative depth: the {what} has H + ζ = {hmin:.3g} ≤ 0 somewhere "
                          f"(mean depth H = {cfg.depth:g}, min ζ = {float(np.min(zeta)):.3g}); "
                          "lower the trough amplitude or raise the depth")
    c = cfl(cfg, zeta)
    if c > MAX_CFL:
        raise SolverError(f"time step beyond the CFL limit: c·dt/dx = {c:.3f} > {MAX_CFL:.3f} "
                          f"(dt = {cfg.dt:g}, dx = {cfg.dx:g}, g = {cfg.g:g}, max depth "
                          f"{cfg.depth + float(np.max(zeta)):.3g}); reduce dt or the bump amplitude")
    for name, a, axis in (("u", u, -1), ("v", v, -2)):
        wall = np.take(a, [0, -1], axis=axis)
        if np.any(wall != 0):
            raise SolverError(f"closed basin: the wall-normal velocity {name} must be 0 on the walls "
                              f"(max |{name}| there = {np.max(np.abs(wall)):.3g})")


def step(cfg: SWEConfig, zeta: np.ndarray, u: np.ndarray, v: np.ndarray):
    """One forward-backward step; returns new arrays (inputs untouched)."""
    g, dt, dx, r = cfg.g, cfg.dt, cfg.dx, cfg.drag
    u = u.copy()
    v = v.copy()
    # momentum (forward): interior faces only; the wall faces stay 0
    u[..., :, 1:-1] += dt * (-g * (zeta[..., :, 1:] - zeta[..., :, :-1]) / dx - r * u[..., :, 1:-1])
    v[..., 1:-1, :] += dt * (-g * (zeta[..., 1:, :] - zeta[..., :-1, :]) / dx - r * v[..., 1:-1, :])
    # continuity (backward, with the new velocities), flux form
    h = cfg.depth + zeta
    fu = np.zeros_like(u)
    fv = np.zeros_like(v)
    fu[..., :, 1:-1] = 0.5 * (h[..., :, 1:] + h[..., :, :-1]) * u[..., :, 1:-1]
    fv[..., 1:-1, :] = 0.5 * (h[..., 1:, :] + h[..., :-1, :]) * v[..., 1:-1, :]
    div = (fu[..., :, 1:] - fu[..., :, :-1]) + (fv[..., 1:, :] - fv[..., :-1, :])
    return zeta - (dt / dx) * div, u, v


def advance(cfg: SWEConfig, zeta, u, v, steps: int | None = None):
    """``steps`` solver steps (default: one surrogate step = cfg.substeps solver steps)."""
    for _ in range(cfg.substeps if steps is None else steps):
        zeta, u, v = step(cfg, zeta, u, v)
    return zeta, u, v


def rollout(cfg: SWEConfig, zeta, u, v, frames: int, check: bool = True):
    """States at surrogate-step resolution: arrays (B, frames + 1, ...) starting with the input."""
    if check:
        check_state(cfg, zeta, u, v)
    zs, us, vs = [zeta], [u], [v]
    for t in range(frames):
        zeta, u, v = advance(cfg, zeta, u, v)
        if not (np.all(np.isfinite(zeta)) and np.all(np.isfinite(u))):
            raise SolverError(f"the solver became unstable at step {t + 1}: reduce dt or the amplitude")
        zs.append(zeta)
        us.append(u)
        vs.append(v)
    return np.stack(zs, 1), np.stack(us, 1), np.stack(vs, 1)
