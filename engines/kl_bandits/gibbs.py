"""The KL-regularised objective and its maximiser, the Gibbs policy.

For one context x with rewards R(a) and reference policy π₀:

    J(π)  = Σ_a π(a) R(a) − η⁻¹ KL(π ‖ π₀)
    π*(a) ∝ π₀(a) exp(η R(a))                   (Gibbs policy)
    J(π*) = η⁻¹ log Σ_a π₀(a) exp(η R(a))
    J(π*) − J(π) = η⁻¹ KL(π ‖ π*)               (for every π)

η is the *inverse* KL strength: large η means weak regularisation.
All functions work on the last axis and broadcast over leading axes.
"""
from __future__ import annotations

import numpy as np


def _logsumexp(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[..., 0]


def gibbs_policy(reward: np.ndarray, pi0: np.ndarray, eta: float) -> np.ndarray:
    """π(a) ∝ π₀(a)·exp(η·reward(a))."""
    logits = np.log(pi0) + eta * reward
    logits = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=-1, keepdims=True)


def objective(pi: np.ndarray, reward: np.ndarray, pi0: np.ndarray, eta: float) -> np.ndarray:
    """J(π) = E_π[R] − η⁻¹ KL(π ‖ π₀)."""
    return (pi * reward).sum(-1) - kl(pi, pi0) / eta


def optimal_value(reward: np.ndarray, pi0: np.ndarray, eta: float) -> np.ndarray:
    """J(π*) = η⁻¹ log Σ π₀ exp(η R), computed stably."""
    return _logsumexp(np.log(pi0) + eta * reward) / eta


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p ‖ q) with 0·log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return t.sum(-1)


def kl_regret(pi: np.ndarray, reward: np.ndarray, pi0: np.ndarray, eta: float) -> np.ndarray:
    """Per-round KL-regularised regret J(π*) − J(π) = η⁻¹ KL(π ‖ π*) ≥ 0."""
    return kl(pi, gibbs_policy(reward, pi0, eta)) / eta
