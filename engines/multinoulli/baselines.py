"""Baselines over the same counted oracle: greedy, residual random greedy, distorted local search,
multilinear-extension continuous greedy with swap rounding, a random base, and brute force.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .extension import pad_greedily
from .objectives import Objective, Partition
from .runs import Run, StepHook, Tracker
from .scg import momentum_weight


def _free(part: Partition, S: list[int]) -> np.ndarray:
    """Elements that can still be added to S (not in S, block not full)."""
    full = np.flatnonzero(part.counts(S) >= part.budgets)
    mask = np.ones(part.n, bool)
    mask[S] = False
    for k in full:
        mask[part.blocks[k]] = False
    mask &= part.block_of >= 0
    return np.flatnonzero(mask)


def greedy(obj: Objective, part: Partition, on_step: StepHook = None, method: str = "greedy") -> Run:
    """Partition-matroid greedy: add the feasible element of largest marginal gain, r times."""
    tr = Tracker(obj, method)
    S: list[int] = []
    fS = obj.value(S)
    tr.point(fS)
    for i in range(part.rank):
        cand = _free(part, S)
        vals = obj.values_plus(S, cand)
        j = int(np.argmax(vals))
        S.append(int(cand[j]))
        fS = float(vals[j])
        tr.point(fS)
        if on_step:
            on_step((i + 1) / part.rank, f"greedy {i + 1}/{part.rank}")
    return tr.done(S, fS)


def residual_random_greedy(obj: Objective, part: Partition, seed: int = 0, on_step: StepHook = None) -> Run:
    """Chen, Feldman & Karbasi (2018): add a uniform element of a max-weight base of the residual matroid,
    weights = marginal gains (for a partition matroid: the top c_k gains of each block with c_k free slots)."""
    rng = np.random.default_rng(seed)
    tr = Tracker(obj, "residual_random_greedy")
    S: list[int] = []
    fS = obj.value(S)
    tr.point(fS)
    for i in range(part.rank):
        cand = _free(part, S)
        vals = obj.values_plus(S, cand)
        free = part.budgets - part.counts(S)
        M = []
        for k in np.flatnonzero(free > 0):
            idx = np.flatnonzero(part.block_of[cand] == k)
            M += list(idx[np.argsort(-vals[idx], kind="stable")[: int(free[k])]])
        j = int(M[rng.integers(len(M))])
        S.append(int(cand[j]))
        fS = float(vals[j])
        tr.point(fS)
        if on_step:
            on_step((i + 1) / part.rank, f"residual random greedy {i + 1}/{part.rank}")
    return tr.done(S, fS)


def distortion_phi(gamma: float, beta: float) -> float:
    """φ(γ, β) = β(1 − γ) + γ²; the guarantee is γ²(1 − e^{−φ})/φ (= 1 − 1/e at γ = β = 1)."""
    return beta * (1.0 - gamma) + gamma ** 2


def guarantee(gamma: float, beta: float) -> float:
    phi = distortion_phi(gamma, beta)
    return gamma ** 2 * (1.0 - math.exp(-phi)) / phi


def distorted_local_search(obj: Objective, part: Partition, gamma: float, beta: float, epsilon: float = 0.1,
                           samples: int | None = None, max_swaps: int | None = None, seed: int = 0,
                           on_step: StepHook = None) -> Run:
    """Distorted local search (after Thiery & Ward 2022; reconstructed, see docs).

    The distorted potential g has marginals g(A+e) − g(A) = E_{p~D_φ} E_{B~A(p)}[f(B+e) − f(B)], where
    A(p) keeps each element of A with probability p and D_φ has density φe^{φp}/(e^φ − 1) on [0, 1],
    φ = φ(γ, β): it needs γ and β. A swap A − a + b changes g by E[f(B+b) − f(B+a)], B ~ (A − a)(p),
    estimated from ``samples`` draws (default ⌈1/ε²⌉); a swap is taken when the estimated gain exceeds
    (ε/r)·f(A). Starts from the greedy solution; stops at a local optimum or after ``max_swaps``.
    """
    rng = np.random.default_rng(seed)
    phi = distortion_phi(gamma, beta)
    N = samples or math.ceil(1.0 / epsilon ** 2)
    r = part.rank
    max_swaps = max_swaps if max_swaps is not None else math.ceil(r / epsilon)
    tr = Tracker(obj, "distorted_local_search")
    init = greedy(obj, part, method="greedy-init")
    tr.curve_evals += init.curve_evals
    tr.curve_values += init.curve_values
    A = list(init.selection)
    fA = init.value
    swaps = passes = 0
    while swaps < max_swaps:
        passes += 1
        improved = False
        for ai, a in enumerate(rng.permutation(A)):
            a = int(a)
            k = part.block_of[a]
            cand = np.setdiff1d(part.blocks[k], A)
            if cand.size == 0:
                continue
            rest = np.array([e for e in A if e != a])
            diff = np.zeros(cand.size)
            for _ in range(N):
                p = math.log1p(rng.random() * math.expm1(phi)) / phi  # p ~ D_φ
                B = rest[rng.random(rest.size) < p] if rest.size else rest
                vals = obj.values_plus(B, np.append(cand, a))
                diff += vals[:-1] - vals[-1]
            diff /= N
            j = int(np.argmax(diff))
            if diff[j] > epsilon / r * fA:
                A = sorted([e for e in A if e != a] + [int(cand[j])])
                fA = obj.value(A)
                tr.point(fA)
                swaps += 1
                improved = True
                break
            if on_step:
                on_step(min(0.99, (swaps + (ai + 1) / len(A)) / (swaps + 2)),
                        f"distorted local search: pass {passes}, {swaps} swaps")
        if not improved:
            break
    return tr.done(A, fA, swaps=swaps, passes=passes, samples=N, gamma=gamma, beta=beta, phi=phi,
                   epsilon=epsilon)


# ----------------------------------------------------------- multilinear extension + swap rounding


def _decompose(x: np.ndarray, B: int) -> list[tuple[float, list[int]]]:
    """Write x (0 ≤ x ≤ 1, Σx = B) as a convex combination of B-subsets (systematic sampling)."""
    c = np.concatenate([[0.0], np.cumsum(x)])
    cuts = np.unique(np.concatenate([[0.0], np.mod(c, 1.0)]))
    cuts = np.append(cuts[cuts < 1.0 - 1e-12], 1.0)
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi - lo < 1e-12:
            continue
        u = 0.5 * (lo + hi)
        pts = u + np.arange(B)
        idx = np.searchsorted(c, pts, side="right") - 1
        out.append((float(hi - lo), sorted(set(int(i) for i in idx))))
    return out


def swap_rounding_block(x: np.ndarray, B: int, rng: np.random.Generator) -> list[int]:
    """Swap rounding (Chekuri, Vondrák & Zenklusen 2010) on the uniform matroid of rank B.

    Slack elements ("no element") bring Σx up to exactly B; the returned indices exclude them.
    """
    n = x.size
    slack = max(0.0, B - x.sum())
    extra = [1.0] * int(slack) + ([slack - int(slack)] if slack - int(slack) > 1e-12 else [])
    xx = np.concatenate([np.clip(x, 0, 1), extra])
    xx *= B / xx.sum()
    bases = _decompose(xx, B)
    wC, C = bases[0]
    C = set(C)
    for wB, Bk in bases[1:]:
        Bk = set(Bk)
        while C != Bk:
            i = next(iter(C - Bk))
            j = next(iter(Bk - C))
            if rng.random() < wC / (wC + wB):
                Bk = (Bk - {j}) | {i}
            else:
                C = (C - {i}) | {j}
        wC += wB
    return sorted(i for i in C if i < n)


def continuous_greedy(obj: Objective, part: Partition, T: int = 50, batch: int = 1, seed: int = 0,
                      on_step: StepHook = None) -> Run:
    """Stochastic continuous greedy on the multilinear extension F(x) = E_{R~x}[f(R)] (independent
    Bernoulli coordinates) over the partition-matroid polytope, same momentum and step 1/T as SCG, then swap
    rounding per block and greedy padding. Its rounding is lossless only for submodular f."""
    rng = np.random.default_rng(seed)
    tr = Tracker(obj, "continuous_greedy")
    ground = np.concatenate(part.blocks)
    x = np.zeros(part.n)
    d = np.zeros(part.n)
    for t in range(1, T + 1):
        g = np.zeros(part.n)
        fR_all = []
        for _ in range(batch):
            R = ground[rng.random(ground.size) < x[ground]]
            out = np.setdiff1d(ground, R)
            fR, vals = obj.value_and_plus(R, out)
            fR_all.append(fR)
            g[out] += vals - fR
            for v in R:  # ∂F/∂x_v = E[f(R + v) − f(R − v)]
                g[v] += fR - obj.value(R[R != v])
        g /= batch
        tr.point(float(np.mean(fR_all)))
        rho = momentum_weight(t)
        d = (1 - rho) * d + rho * g
        v = np.zeros(part.n)
        for b, B in zip(part.blocks, part.budgets):
            top = b[np.argsort(-d[b], kind="stable")[: int(B)]]
            v[top[d[top] > 0]] = 1.0
        x += v / T
        if on_step:
            on_step(t / T, f"continuous greedy step {t}/{T}")
    S = []
    for b, B in zip(part.blocks, part.budgets):
        S += [int(b[i]) for i in swap_rounding_block(x[b], int(B), rng)]
    S = pad_greedily(obj, part, S)
    return tr.done(S, obj.value(S))


def random_base(obj: Objective, part: Partition, seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    tr = Tracker(obj, "random")
    S = [int(v) for b, B in zip(part.blocks, part.budgets) for v in rng.choice(b, int(B), replace=False)]
    return tr.done(S, obj.value(S))


def brute_force(obj: Objective, part: Partition, limit: int = 200_000, chunk: int = 4096,
                on_step: StepHook = None) -> Run:
    """OPT over all bases (a monotone f attains its maximum on a base)."""
    total = part.n_bases()
    if total > limit:
        raise ValueError(f"brute force would enumerate {total:,} sets (limit {limit:,}); "
                         "use fewer blocks, smaller blocks or smaller budgets")
    tr = Tracker(obj, "brute_force")
    per_block = [np.array(list(itertools.combinations(b, int(B)))) for b, B in zip(part.blocks, part.budgets)]
    dims = [len(c) for c in per_block]
    best, best_v = None, -np.inf
    for start in range(0, total, chunk):
        idx = np.unravel_index(np.arange(start, min(total, start + chunk)), dims)
        sets = np.concatenate([per_block[k][idx[k]] for k in range(part.K)], axis=1)
        vals = obj.values_batch(sets)
        j = int(np.argmax(vals))
        if vals[j] > best_v:
            best, best_v = sets[j], float(vals[j])
            tr.point(best_v)
        if on_step:
            on_step(min(1.0, (start + chunk) / total), f"brute force {min(total, start + chunk):,}/{total:,}")
    return tr.done(list(best), best_v)


# ----------------------------------------------------------- structural parameters (for DLS only)


def estimate_ratios(obj: Objective, part: Partition, samples: int = 200, seed: int = 0) -> tuple[float, float]:
    """Empirical lower/upper submodularity ratios (γ, β) on random small sets (Thiery & Ward's notions):
    Σ_{b∈B} [f(A+b) − f(A)] ≥ γ·[f(A∪B) − f(A)] and Σ_{b∈B} [f(A) − f(A−b)] ≤ β·[f(A) − f(A∖B)], B ⊆ A.
    An estimate (min/max over samples), not a certificate; its evaluations are not charged to anyone."""
    rng = np.random.default_rng(seed)
    before = obj.evals
    ground = np.concatenate(part.blocks)
    r = part.rank
    gam, bet = 1.0, 0.0
    for _ in range(samples):
        m = int(rng.integers(1, max(2, r) + 1))
        pool = rng.choice(ground, size=min(ground.size, 2 * m), replace=False)
        A, Bs = list(pool[: m // 2]), list(pool[m // 2: m])
        fA = obj.value(A)
        den = obj.value(A + Bs) - fA
        if den > 1e-9 * max(1.0, abs(fA)):
            num = float((obj.values_plus(A, Bs) - fA).sum())
            gam = min(gam, num / den)
        S = list(pool[:m])
        if len(S) >= 2:
            Bsub = S[: max(1, len(S) // 2)]
            fS = obj.value(S)
            den = fS - obj.value([e for e in S if e not in Bsub])
            if den > 1e-9 * max(1.0, abs(fS)):
                num = sum(fS - obj.value([e for e in S if e != b]) for b in Bsub)
                bet = max(bet, num / den)
    obj.evals = before
    return max(gam, 1e-3), max(bet, 1e-3)
