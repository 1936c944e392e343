"""Multinoulli-SCG: stochastic continuous greedy on the Multinoulli Extension, then lossless rounding.

Frank–Wolfe from q⁰ = 0 (all mass on "no element") with the fixed step 1/T:
    d_t  ← gradient estimate of ME at q^t (momentum or path-integrated, below)
    v_t  ← argmax_{v ∈ Π_u Δ_u} ⟨v, d_t⟩: per unit, the vertex e_j of its best element (or 0)
    q^{t+1} = q^t + v_t / T
and finally a rounded set from q^T. No α, γ or β enters anywhere: that is the
"parameter-free" claim. Step size, estimators and batch size are reconstructed
(the paper's listing is not public): momentum d_t = (1 − ρ_t) d_{t−1} + ρ_t g_t with
ρ_t = 4/(t+8)^{2/3} as in Mokhtari et al.'s SCG, or the SCG++-style path-integrated
d_t = d_{t−1} + ∇̃²ME(z_t)(q^t − q^{t−1}) with z_t uniform on the segment.
"""
from __future__ import annotations

import numpy as np

from .extension import Priors, grad_estimate, hessian_vector_estimate, round_priors, sample_set
from .objectives import Objective, Partition
from .runs import Run, StepHook, Tracker


def momentum_weight(t: int) -> float:
    """ρ_t = 4 / (t + 8)^{2/3} (Mokhtari, Hassani & Karbasi, SCG)."""
    return 4.0 / (t + 8) ** (2.0 / 3.0)


def linear_maximiser(pr: Priors, d: np.ndarray) -> np.ndarray:
    """Vertex of the product of down-closed simplices maximising ⟨v, d⟩."""
    v = np.zeros_like(d)
    for u in range(pr.U):
        a, b = pr.offsets[u], pr.offsets[u + 1]
        j = int(np.argmax(d[a:b]))
        if d[a + j] > 0:
            v[a + j] = 1.0
    return v


def multinoulli_scg(obj: Objective, part: Partition, T: int = 50, batch: int = 1,
                    estimator: str = "momentum", draws: str = "slots", rounding_samples: int = 8,
                    pad: str = "greedy", seed: int = 0, snapshots: int = 12, on_step: StepHook = None) -> Run:
    """Run Multinoulli-SCG; note the signature: no α, γ or β."""
    if estimator not in ("momentum", "path_integrated"):
        raise ValueError(f"unknown estimator {estimator!r} (momentum or path_integrated)")
    rng = np.random.default_rng(seed)
    tr = Tracker(obj, "scg")
    pr = Priors.zeros(part, draws)
    d = np.zeros_like(pr.x)
    prev_x = pr.x.copy()
    snap_at = set(np.unique(np.linspace(0, T, snapshots).round().astype(int)).tolist())
    snaps, snap_t = [], []
    relaxed = []  # single-sample estimates of ME(q^t), a by-product of the gradient samples
    if 0 in snap_at:
        snaps.append([b.tolist() for b in pr.block_distribution()])
        snap_t.append(0)
    for t in range(1, T + 1):
        if estimator == "momentum" or t == 1:
            est = [grad_estimate(obj, pr, rng) for _ in range(batch)]
            g = np.mean([e[0] for e in est], axis=0)
            fvals = [e[1] for e in est]
            rho = momentum_weight(t) if estimator == "momentum" else 1.0
            d = (1.0 - rho) * d + rho * g
        else:
            delta = pr.x - prev_x
            z = pr.with_x(prev_x + rng.random() * delta)
            d = d + np.mean([hessian_vector_estimate(obj, z, delta, rng) for _ in range(batch)], axis=0)
            fvals = [obj.value(sample_set(pr, rng))]
        relaxed.append(float(np.mean(fvals)))
        tr.point(relaxed[-1])
        v = linear_maximiser(pr, d)
        prev_x = pr.x.copy()
        pr = pr.with_x(pr.x + v / T)
        if t in snap_at:
            snaps.append([b.tolist() for b in pr.block_distribution()])
            snap_t.append(t)
        if on_step is not None:
            on_step(t / T, f"Multinoulli-SCG step {t}/{T}")
    relax_evals = tr.evals
    S, val, vals, raw = round_priors(obj, pr, rng, rounding_samples, pad)
    return tr.done(S, val, relaxed=relaxed, relax_evals=relax_evals, rounded_values=vals, sampled_values=raw,
                   snapshots=snaps, snapshot_t=snap_t, estimator=estimator, draws=draws, T=T, batch=batch,
                   priors=[b.tolist() for b in pr.block_distribution()], x=pr.x.tolist())
