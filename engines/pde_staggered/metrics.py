"""Rollouts and the paper's metrics: NRMSE and Pearson correlation of ζ per step, correlation time,
equivariance error under the 8 grid symmetries, mass drift, wall-clock per step."""
from __future__ import annotations

import time

import numpy as np
import torch

from . import groups as G
from . import swe

CORR_THRESHOLD = 0.8
DIVERGED = 1e3  # |ζ| beyond this counts as a blow-up


def surrogate_rollout(model, zeta, u, v, steps: int, dtype=torch.float64):
    """Autoregressive rollout (network in float32, state in ``dtype``, no grad): arrays (B, steps + 1, ...).
    A trajectory that blows up
    (non-finite or |ζ| > 1e3) is frozen at its last finite state and reported in ``diverged`` (step index)."""
    z, uu, vv = (torch.as_tensor(np.asarray(a), dtype=dtype) for a in (zeta, u, v))
    zs, us, vs = [z], [uu], [vv]
    diverged = np.full(z.shape[0], -1)
    with torch.no_grad():
        for t in range(steps):
            nz, nu, nv = model(z, uu, vv)
            bad = ~(torch.isfinite(nz).flatten(1).all(1) & torch.isfinite(nu).flatten(1).all(1)
                    & torch.isfinite(nv).flatten(1).all(1) & (nz.abs().flatten(1).amax(1) < DIVERGED))
            if bad.any():
                for b in torch.nonzero(bad).flatten().tolist():
                    if diverged[b] < 0:
                        diverged[b] = t + 1
                keep = bad[:, None, None]
                nz, nu, nv = torch.where(keep, z, nz), torch.where(keep, uu, nu), torch.where(keep, vv, nv)
            z, uu, vv = nz, nu, nv
            zs.append(z)
            us.append(uu)
            vs.append(vv)
    return torch.stack(zs, 1).numpy(), torch.stack(us, 1).numpy(), torch.stack(vs, 1).numpy(), diverged


def nrmse(pred: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(B, T+1, N, N) -> (B, T+1): RMSE of ζ over the grid / spatial std of the reference."""
    err = np.sqrt(((pred - ref) ** 2).mean((-2, -1)))
    return err / np.maximum(ref.std((-2, -1)), 1e-12)


def correlation(pred: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Pearson correlation over the grid per sample and step: (B, T+1)."""
    a = pred - pred.mean((-2, -1), keepdims=True)
    b = ref - ref.mean((-2, -1), keepdims=True)
    den = np.sqrt((a ** 2).sum((-2, -1)) * (b ** 2).sum((-2, -1)))
    return (a * b).sum((-2, -1)) / np.maximum(den, 1e-30)


def correlation_time(corr: np.ndarray, threshold: float = CORR_THRESHOLD) -> np.ndarray:
    """Steps until the correlation first falls below the threshold (the horizon if it never does)."""
    below = corr < threshold
    first = np.where(below.any(1), below.argmax(1), corr.shape[1])
    return first.astype(float)


def mass_drift(zeta: np.ndarray) -> np.ndarray:
    """|∑ζ_t − ∑ζ_0| / ∑|ζ_0| per sample and step, summed in float64."""
    m = zeta.astype(np.float64).sum((-2, -1))
    return np.abs(m - m[:, :1]) / np.maximum(np.abs(zeta[:, :1].astype(np.float64)).sum((-2, -1)), 1e-30)


def equivariance_errors(model, zeta, u, v) -> list[float]:
    """max over the batch of ‖G(g·w) − g·G(w)‖ / ‖G(w) − w‖ for each of the 8 elements of D4."""
    x = tuple(torch.as_tensor(np.asarray(a), dtype=torch.float32) for a in (zeta, u, v))
    with torch.no_grad():
        y = model(*x)
        den = sum(((a - b).flatten(1) ** 2).sum(1) for a, b in zip(y, x)).sqrt()
        out = []
        for g in G.ELEMENTS:
            a = model(*G.act_state(*x, g))
            b = G.act_state(*y, g)
            num = sum(((p - q).flatten(1) ** 2).sum(1) for p, q in zip(a, b)).sqrt()
            out.append(float((num / den.clamp_min(1e-30)).max()))
    return out


def wall_velocity(u: np.ndarray, v: np.ndarray) -> float:
    return float(max(np.abs(u[..., 0]).max(), np.abs(u[..., -1]).max(), np.abs(v[..., 0, :]).max(),
                     np.abs(v[..., -1, :]).max()))


def timing(models: dict, cfg: swe.SWEConfig, zeta, u, v, repeats: int = 3) -> dict[str, float]:
    """Seconds per surrogate step (= cfg.substeps solver steps) for the whole batch, best of ``repeats``."""
    out = {}
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        swe.advance(cfg, zeta, u, v)
        best = min(best, time.perf_counter() - t0)
    out["solver"] = best
    x = tuple(torch.as_tensor(np.asarray(a), dtype=torch.float32) for a in (zeta, u, v))
    with torch.no_grad():
        for name, m in models.items():
            m(*x)
            best = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                m(*x)
                best = min(best, time.perf_counter() - t0)
            out[name] = best
    return out


# ----------------------------------------------------------------------------- generic (either problem)


def rollout_states(model, state, steps: int, dtype=torch.float64):
    """Autoregressive rollout of any state tuple; blow-ups are frozen as in ``surrogate_rollout``.
    Returns (list of arrays (B, steps + 1, ...), diverged step per sample or -1)."""
    x = [torch.as_tensor(np.asarray(a), dtype=dtype) for a in state]
    hist = [[a] for a in x]
    diverged = np.full(x[0].shape[0], -1)
    with torch.no_grad():
        for t in range(steps):
            y = list(model(*x))
            ok = torch.ones(x[0].shape[0], dtype=torch.bool)
            for a in y:
                ok &= torch.isfinite(a).flatten(1).all(1) & (a.abs().flatten(1).amax(1) < DIVERGED)
            if (~ok).any():
                for b in torch.nonzero(~ok).flatten().tolist():
                    if diverged[b] < 0:
                        diverged[b] = t + 1
                keep = (~ok)[:, None, None]
                y = [torch.where(keep, a, b) for a, b in zip(x, y)]
            x = y
            for h, a in zip(hist, x):
                h.append(a)
    return [torch.stack(h, 1).numpy() for h in hist], diverged


def equivariance_errors_generic(model, state, act) -> list[float]:
    """Like ``equivariance_errors`` for any state tuple and group action ``act(state, g)``."""
    x = tuple(torch.as_tensor(np.asarray(a), dtype=torch.float32) for a in state)
    with torch.no_grad():
        y = model(*x)
        den = sum(((a - b).flatten(1) ** 2).sum(1) for a, b in zip(y, x)).sqrt()
        out = []
        for g in G.ELEMENTS:
            a = model(*act(x, g))
            b = act(y, g)
            num = sum(((p - q).flatten(1) ** 2).sum(1) for p, q in zip(a, b)).sqrt()
            out.append(float((num / den.clamp_min(1e-30)).max()))
    return out


def momentum_drift(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(|ū_t − ū_0| + |v̄_t − v̄_0|) / rms speed at t = 0, per sample and step (periodic domain)."""
    mu, mv = u.astype(np.float64).mean((-2, -1)), v.astype(np.float64).mean((-2, -1))
    rms = np.sqrt((u[:, :1].astype(np.float64) ** 2 + v[:, :1].astype(np.float64) ** 2).mean((-2, -1)))
    return (np.abs(mu - mu[:, :1]) + np.abs(mv - mv[:, :1])) / np.maximum(rms, 1e-30)
