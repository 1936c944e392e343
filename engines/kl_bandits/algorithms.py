"""KL-regularised UCB (Algorithm 1) and its baselines, vectorised over methods × seeds.

Every method keeps a ridge least-squares estimate ŵ with Λ = λI + Σ ψψᵀ and the
elliptical uncertainty U_t(x, a) = ‖ψ(x, a)‖_{Λ⁻¹} (the linear case of the
paper's U_t). Per round, on the drawn context:

* ``kl_ucb``    R̃ = clip(R̂ + min(1, β·U), 0, 1); play π_t ∝ π₀ exp(η R̃)    (Alg. 1)
* ``kl_greedy`` the same Gibbs policy with β = 0 (no optimism)
* ``ucb``       play argmax R̂ + β·√(2 log t)·U (LinUCB; UCB1 for one-hot ψ)
* ``vw_softmax`` Vowpal Wabbit ``--cb_explore_adf --softmax --lambda η``: a Gibbs
  policy with uniform π₀ over VW's online regressor (an external peer)

Gibbs methods are scored on the KL-regularised regret J(π*) − J(π_t) =
η⁻¹ KL(π_t ‖ π*), exact per round (no sampling noise); UCB on the
unregularised regret max_a R*(x, a) − R*(x, a_t). Every method is also scored on the
other objective (``regret_alt``), so the methods can be compared on the same one: Gibbs
methods on the expected unregularised regret Σ_a π_t(a)(max R* − R*(a)) of their policy,
UCB on the KL-regularised regret J(π*) − J(δ_{a_t}) of the action it plays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from . import gibbs
from .envs import Bandit

GIBBS_METHODS = ("kl_ucb", "kl_greedy")


@dataclass
class Trace:
    """Per-round traces, shape (methods, seeds, T)."""

    methods: tuple[str, ...]
    regret: np.ndarray  # per-round regret
    bonus: np.ndarray  # bonus (β·U, capped at 1) on the played action
    snapshot_rounds: np.ndarray  # rounds at which the policy on context 0 was recorded
    snapshot_kl: np.ndarray  # (methods, seeds, n_snapshots) KL(π_t(·|x₀) ‖ π*(·|x₀))
    snapshot_policy: np.ndarray  # (methods, n_snapshots, K) π_t(·|x₀) of seed 0
    regret_alt: np.ndarray | None = None  # per-round regret on the other objective (see the module doc)


def _snapshot_rounds(horizon: int) -> np.ndarray:
    r = np.unique(np.geomspace(1, horizon, num=min(24, horizon)).astype(int))
    return r


def simulate(
    bandits: Sequence[Bandit],
    methods: Sequence[str],
    eta: float,
    beta: float,
    ridge: float,
    horizon: int,
    seed: int,
    on_progress: Callable[[float], None] | None = None,
) -> Trace:
    """Run ``methods`` on each bandit (one per seed) for ``horizon`` rounds."""
    vec = [m for m in methods if m != "vw_softmax"]
    snaps = _snapshot_rounds(horizon)
    K = bandits[0].arms
    if vec:
        R, Bn, SK, SP, RA = _simulate_vectorised(bandits, vec, eta, beta, ridge, horizon, seed, snaps, on_progress)
    else:
        R = Bn = RA = np.zeros((0, len(bandits), horizon), np.float32)
        SK, SP = np.zeros((0, len(bandits), len(snaps))), np.zeros((0, len(snaps), K))
    out_methods = list(vec)
    if "vw_softmax" in methods:
        vr, vb, vk, vp, va = _simulate_vw(bandits, eta, horizon, seed, snaps)
        out_methods.append("vw_softmax")
        R = np.concatenate([R, vr[None]])
        RA = np.concatenate([RA, va[None]])
        Bn = np.concatenate([Bn, vb[None]])
        SK = np.concatenate([SK, vk[None]])
        SP = np.concatenate([SP, vp[None]])
    order = [out_methods.index(m) for m in methods]
    return Trace(tuple(methods), R[order], Bn[order], snaps, SK[order], SP[order], RA[order])


def _simulate_vectorised(bandits, vec, eta, beta, ridge, horizon, seed, snaps, on_progress):
    S, M = len(bandits), len(vec)
    N, K, D = bandits[0].features.shape
    F = np.stack([b.features for b in bandits])  # (S, N, K, D)
    Rstar = np.einsum("snkd,sd->snk", F, np.stack([b.w_star for b in bandits]))
    pi0 = np.stack([b.pi0 for b in bandits])  # (S, N, K)
    pistar = gibbs.gibbs_policy(Rstar, pi0, eta)
    noise = bandits[0].noise

    B = M * S
    env = np.tile(np.arange(S), M)  # batch index -> seed index
    is_gibbs = np.repeat([m in GIBBS_METHODS for m in vec], S)
    beta_b = np.repeat([0.0 if m == "kl_greedy" else beta for m in vec], S)
    A = np.tile(np.eye(D) * ridge, (B, 1, 1))
    Ainv = np.tile(np.eye(D) / ridge, (B, 1, 1))
    bvec = np.zeros((B, D))
    w = np.zeros((B, D))

    regret = np.zeros((B, horizon), dtype=np.float32)
    regret_alt = np.zeros((B, horizon), dtype=np.float32)
    bonus = np.zeros((B, horizon), dtype=np.float32)
    snap_kl = np.zeros((B, len(snaps)))
    snap_pi = np.zeros((B, len(snaps), K))
    rng = np.random.default_rng([seed, 7])
    rows = np.arange(B)
    chunk = max(1, horizon // 50)
    si = 0

    for t in range(1, horizon + 1):
        x = rng.integers(N, size=S)[env]
        u = rng.random(S)[env]
        z = rng.standard_normal(S)[env]
        psi = F[env, x]  # (B, K, D)
        rhat = np.einsum("bkd,bd->bk", psi, w)
        width = np.sqrt(np.maximum(np.einsum("bkd,bde,bke->bk", psi, Ainv, psi), 0.0))
        bon = np.minimum(1.0, beta_b[:, None] * width)
        # Gibbs methods: optimistic reward, Gibbs policy, sample by inverse CDF.
        pi = gibbs.gibbs_policy(np.clip(rhat + bon, 0.0, 1.0), pi0[env, x], eta)
        a_gibbs = np.minimum((np.cumsum(pi, -1) < u[:, None]).sum(-1), K - 1)
        # UCB: optimistic argmax with a log t confidence radius.
        a_ucb = np.argmax(rhat + beta_b[:, None] * np.sqrt(2 * np.log(t + 1)) * width, -1)
        a = np.where(is_gibbs, a_gibbs, a_ucb)

        r_star = Rstar[env, x]
        regret[:, t - 1] = np.where(
            is_gibbs,
            gibbs.kl(pi, pistar[env, x]) / eta,
            r_star.max(-1) - r_star[rows, a],
        )
        jstar = gibbs.optimal_value(r_star, pi0[env, x], eta)
        regret_alt[:, t - 1] = np.where(
            is_gibbs,
            (pi * (r_star.max(-1, keepdims=True) - r_star)).sum(-1),
            jstar - (r_star[rows, a] + np.log(pi0[env, x][rows, a]) / eta),
        )
        bonus[:, t - 1] = np.minimum(1.0, beta_b * width[rows, a])

        if si < len(snaps) and t == snaps[si]:
            psi0 = F[env, 0]
            r0 = np.einsum("bkd,bd->bk", psi0, w)
            w0 = np.sqrt(np.maximum(np.einsum("bkd,bde,bke->bk", psi0, Ainv, psi0), 0.0))
            p0 = gibbs.gibbs_policy(np.clip(r0 + np.minimum(1.0, beta_b[:, None] * w0), 0, 1), pi0[env, 0], eta)
            snap_pi[:, si] = p0
            snap_kl[:, si] = gibbs.kl(p0, pistar[env, 0])
            si += 1

        # Observe r_t and update the ridge estimate (Sherman–Morrison).
        phi = psi[rows, a]  # (B, D)
        r = r_star[rows, a] + noise * z
        A += phi[:, :, None] * phi[:, None, :]
        v = np.einsum("bde,be->bd", Ainv, phi)
        Ainv -= v[:, :, None] * v[:, None, :] / (1.0 + (phi * v).sum(-1))[:, None, None]
        bvec += r[:, None] * phi
        if t % 2048 == 0:  # refresh against round-off drift
            Ainv = np.linalg.inv(A)
        w = np.einsum("bde,be->bd", Ainv, bvec)
        if on_progress is not None and t % chunk == 0:
            on_progress(t / horizon)

    return (regret.reshape(M, S, horizon), bonus.reshape(M, S, horizon), snap_kl.reshape(M, S, -1),
            snap_pi.reshape(M, S, len(snaps), K)[:, 0], regret_alt.reshape(M, S, horizon))


def _vw_examples(psi: np.ndarray) -> list[str]:
    return ["shared |s bias"] + [
        "|a " + " ".join(f"f{i}:{v:.6f}" for i, v in enumerate(row)) for row in psi
    ]


def _simulate_vw(bandits, eta, horizon, seed, snaps):
    """VW's softmax explorer: π ∝ exp(−λ·ĉ), cost ĉ = 1 − r̂, i.e. a Gibbs policy with uniform π₀."""
    try:
        import vowpalwabbit
    except ImportError as e:  # pragma: no cover - vowpalwabbit is a declared dependency
        raise RuntimeError("the vw_softmax peer needs the vowpalwabbit package") from e
    S = len(bandits)
    K = bandits[0].arms
    regret = np.zeros((S, horizon), dtype=np.float32)
    regret_alt = np.zeros((S, horizon), dtype=np.float32)
    snap_kl = np.zeros((S, len(snaps)))
    snap_pi = np.zeros((len(snaps), K))
    for s, bandit in enumerate(bandits):
        if not np.allclose(bandit.pi0, 1.0 / K):
            raise ValueError("the vw_softmax peer supports only the uniform reference policy π₀")
        rstar = bandit.mean_reward
        pistar = gibbs.gibbs_policy(rstar, bandit.pi0, eta)
        rng = np.random.default_rng([seed, 11, s])
        vw = vowpalwabbit.Workspace(f"--cb_explore_adf --softmax --lambda {eta} --quiet --random_seed {seed}")
        si = 0
        for t in range(1, horizon + 1):
            x = int(rng.integers(bandit.n_contexts))
            ex = _vw_examples(bandit.features[x])
            pmf = np.asarray(vw.predict(ex), dtype=float)
            pmf = pmf / pmf.sum()
            a = int(min((np.cumsum(pmf) < rng.random()).sum(), K - 1))
            regret[s, t - 1] = gibbs.kl(pmf, pistar[x]) / eta
            regret_alt[s, t - 1] = (pmf * (rstar[x].max() - rstar[x])).sum()
            if si < len(snaps) and t == snaps[si]:
                p0 = np.asarray(vw.predict(_vw_examples(bandit.features[0])), dtype=float)
                p0 /= p0.sum()
                snap_kl[s, si] = gibbs.kl(p0, pistar[0])
                if s == 0:
                    snap_pi[si] = p0
                si += 1
            r = rstar[x, a] + bandit.noise * rng.standard_normal()
            ex[a + 1] = f"0:{1.0 - r:.6f}:{pmf[a]:.6f} " + ex[a + 1]
            vw.learn(ex)
        vw.finish()
    return regret, np.zeros_like(regret), snap_kl, snap_pi, regret_alt
