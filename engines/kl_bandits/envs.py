"""Bandit environments of the CPU-scale reproduction (spec section 4).

Both are linear: the mean reward of arm a in context x is ⟨w*, ψ(x, a)⟩ ∈ [0, 1].

* Environment A (``linear``): d-dimensional features φ(x, a) on the unit sphere
  plus an intercept, ψ = [φ, 1], R* = 0.5 + 0.5⟨θ*, φ⟩, K arms, a fixed set of
  contexts drawn uniformly each round.
* Environment B (``hard``): a K-armed bandit (one-hot ψ) whose best arm has the
  horizon-dependent gap Δ_T = √(K/T), the minimax-hard family on which
  unregularised UCB pays √T.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .params import EnvParams


@dataclass
class Bandit:
    features: np.ndarray  # (n_contexts, K, D) = ψ(x, a)
    w_star: np.ndarray  # (D,)
    pi0: np.ndarray  # (n_contexts, K) reference policy
    noise: float

    @property
    def mean_reward(self) -> np.ndarray:
        """R*(x, a), shape (n_contexts, K)."""
        return self.features @ self.w_star

    @property
    def n_contexts(self) -> int:
        return self.features.shape[0]

    @property
    def arms(self) -> int:
        return self.features.shape[1]

    @property
    def dim(self) -> int:
        return self.features.shape[2]


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def reference_policy(p: EnvParams, n_contexts: int, arms: int, rng: np.random.Generator) -> np.ndarray:
    if p.reference == "uniform":
        return np.full((n_contexts, arms), 1.0 / arms)
    logits = rng.standard_normal((n_contexts, arms)) / p.reference_temperature
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def linear_bandit(p: EnvParams, seed: int) -> Bandit:
    rng = np.random.default_rng([seed, 1])
    phi = _unit(rng.standard_normal((p.contexts, p.arms, p.dim)))
    theta = _unit(rng.standard_normal(p.dim))
    psi = np.concatenate([phi, np.ones((p.contexts, p.arms, 1))], axis=-1)
    w = np.concatenate([0.5 * theta, [0.5]])
    return Bandit(psi, w, reference_policy(p, p.contexts, p.arms, rng), p.noise)


def hard_gap(arms: int, horizon: int) -> float:
    return float(min(0.5, np.sqrt(arms / horizon)))


def hard_bandit(p: EnvParams, horizon: int, seed: int) -> Bandit:
    rng = np.random.default_rng([seed, 2])
    K = p.arms
    means = np.full(K, 0.5)
    means[rng.integers(K)] += hard_gap(K, horizon)
    return Bandit(np.eye(K)[None], means, reference_policy(p, 1, K, rng), p.noise)


def make(p: EnvParams, horizon: int, seed: int) -> Bandit:
    return linear_bandit(p, seed) if p.env == "linear" else hard_bandit(p, horizon, seed)
