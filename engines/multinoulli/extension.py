"""The Multinoulli Extension (ME): multinoulli priors per partition block, sampling, gradients, rounding.

A point of the relaxation is a set of *units*. Unit u belongs to block k(u), holds a
multinoulli prior q_u over the elements of V_k(u) with Σ_v q_u[v] ≤ 1 (the missing
mass 1 − Σ q_u is the outcome "no element") and makes c_u independent draws from it.
A random set S ~ q is the union of all draws; since unit u contributes at most c_u
elements of its block, S is always feasible. ME(q) = E_{S~q}[f(S)].

Two draw modes (the paper's text is not public, see docs/methods/multinoulli.md):
* ``shared``: one prior per block and c = B_k draws from it (one unit per block);
* ``slots``: B_k unit-budget slots per block, each with its own prior (c = 1),
  i.e. the sibling paper's policy-based extension with one "agent" per slot.

Because each draw enters ME linearly, ∂ME/∂q_u[v] = c_u·E[f(S₋ ∪ {v}) − f(S₋)]
where S₋ is S without unit u's first draw: one sample S gives an unbiased
gradient for |V_k| + 1 queries per unit.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .objectives import Objective, Partition

DrawMode = str  # "shared" | "slots"


@dataclass
class Priors:
    part: Partition
    mode: DrawMode
    unit_block: np.ndarray  # k(u)
    draws: np.ndarray  # c_u
    offsets: np.ndarray  # unit u's coordinates are x[offsets[u]:offsets[u+1]]
    x: np.ndarray  # concatenated priors

    @classmethod
    def zeros(cls, part: Partition, mode: DrawMode = "shared") -> "Priors":
        if mode == "shared":
            ub = np.arange(part.K)
            c = part.budgets.copy()
        elif mode == "slots":
            ub = np.repeat(np.arange(part.K), part.budgets)
            c = np.ones(ub.size, dtype=np.int64)
        else:
            raise ValueError(f"unknown draw mode {mode!r} (shared or slots)")
        sizes = np.array([part.blocks[k].size for k in ub])
        off = np.concatenate([[0], np.cumsum(sizes)])
        return cls(part, mode, ub, c, off, np.zeros(off[-1]))

    @property
    def U(self) -> int:
        return self.unit_block.size

    def q(self, u: int) -> np.ndarray:
        return self.x[self.offsets[u]:self.offsets[u + 1]]

    def elems(self, u: int) -> np.ndarray:
        return self.part.blocks[self.unit_block[u]]

    def with_x(self, x: np.ndarray) -> "Priors":
        return Priors(self.part, self.mode, self.unit_block, self.draws, self.offsets, np.asarray(x, float))

    def block_distribution(self) -> list[np.ndarray]:
        """Per block: expected number of draws landing on each element, divided by B_k (sums to ≤ 1)."""
        out = [np.zeros(b.size) for b in self.part.blocks]
        for u in range(self.U):
            k = self.unit_block[u]
            out[k] += self.draws[u] * self.q(u) / self.part.budgets[k]
        return out


# ------------------------------------------------------------------------ sampling


def sample_draws(pr: Priors, rng: np.random.Generator) -> list[np.ndarray]:
    """One draw vector per unit: c_u element ids, −1 for "no element" (inverse-CDF sampling)."""
    out = []
    for u in range(pr.U):
        cs = np.cumsum(np.clip(pr.q(u), 0.0, None))
        idx = np.searchsorted(cs, rng.random(int(pr.draws[u])), side="right")
        el = pr.elems(u)
        out.append(np.where(idx < el.size, el[np.minimum(idx, el.size - 1)], -1))
    return out


def _union(draws: list[np.ndarray], skip: dict[int, tuple[int, ...]] | None = None) -> list[int]:
    """Set of drawn elements, leaving out draws ``skip[u]`` (indices) of each unit u."""
    skip = skip or {}
    s = set()
    for u, d in enumerate(draws):
        left_out = skip.get(u, ())
        s.update(int(v) for j, v in enumerate(d) if v >= 0 and j not in left_out)
    return sorted(s)


def sample_set(pr: Priors, rng: np.random.Generator) -> list[int]:
    return _union(sample_draws(pr, rng))


# ------------------------------------------------------------------------ gradients


def grad_estimate(obj: Objective, pr: Priors, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Unbiased one-sample estimate of ∇ME(q) and the value f(S) of the sample (free by-product)."""
    draws = sample_draws(pr, rng)
    g = np.zeros_like(pr.x)
    fS = None
    for u in range(pr.U):
        R = _union(draws, {u: (0,)})
        el = pr.elems(u)
        base, vp = obj.value_and_plus(R, el)
        g[pr.offsets[u]:pr.offsets[u + 1]] = pr.draws[u] * (vp - base)
        if u == 0:  # S = R ∪ {first draw of unit 0}
            v0 = draws[0][0]
            fS = base if v0 < 0 else float(vp[np.flatnonzero(el == v0)[0]])
    return g, float(fS)


def hessian_vector_estimate(obj: Objective, pr: Priors, delta: np.ndarray,
                            rng: np.random.Generator) -> np.ndarray:
    """Unbiased estimate of ∇²ME(q)·δ from one sample S ~ q and one coordinate (w, x) of δ.

    (w, x) is drawn with probability ∝ |δ_w[x]| and the column H[:, (w, x)] is estimated
    with second-order differences f(R+v+x) − f(R+v) − f(R+x) + f(R), where R is S without
    one draw of unit u and one of unit w (two draws of u when w = u, since then the
    coordinate pair lives in the same prior and needs c_u ≥ 2).
    """
    nz = np.flatnonzero(delta)
    out = np.zeros_like(pr.x)
    if nz.size == 0:
        return out
    w_abs = np.abs(delta[nz])
    pick = rng.choice(nz.size, p=w_abs / w_abs.sum())
    i = nz[pick]
    scale = delta[i] / (w_abs[pick] / w_abs.sum())
    w = int(np.searchsorted(pr.offsets, i, side="right") - 1)
    xel = int(pr.elems(w)[i - pr.offsets[w]])
    draws = sample_draws(pr, rng)
    for u in range(pr.U):
        if u == w:
            if pr.draws[u] < 2:
                continue
            coef = pr.draws[u] * (pr.draws[u] - 1)
            R = _union(draws, {u: (0, 1)})
        else:
            coef = pr.draws[u] * pr.draws[w]
            R = _union(draws, {u: (0,), w: (0,)})
        el = pr.elems(u)
        fRx, a = obj.value_and_plus(sorted(set(R) | {xel}), el)
        fR, b = obj.value_and_plus(R, el)
        out[pr.offsets[u]:pr.offsets[u + 1]] = coef * (a - b - fRx + fR)
    return scale * out


# ------------------------------------------------------------------------ exact (tiny instances)


def exact_value(obj: Objective, pr: Priors) -> float:
    """ME(q) by enumerating every draw outcome (tests only: (|V_k|+1)^{Σ c_u} terms)."""
    per_draw = []
    for u in range(pr.U):
        el = list(pr.elems(u)) + [-1]
        q = pr.q(u)
        p = list(q) + [max(0.0, 1.0 - q.sum())]
        per_draw += [(el, p)] * int(pr.draws[u])
    total = 0.0
    for combo in itertools.product(*[range(len(e)) for e, _ in per_draw]):
        prob = 1.0
        S = set()
        for (el, p), j in zip(per_draw, combo):
            prob *= p[j]
            if el[j] >= 0:
                S.add(el[j])
        if prob > 0:
            total += prob * obj._value(np.array(sorted(S), dtype=np.int64))
    return total


def exact_gradient(obj: Objective, pr: Priors) -> np.ndarray:
    """∇ME by central differences of the exact polynomial (exact when every c_u ≤ 2)."""
    h = 1e-3
    g = np.zeros_like(pr.x)
    for i in range(pr.x.size):
        e = np.zeros_like(pr.x)
        e[i] = h
        g[i] = (exact_value(obj, pr.with_x(pr.x + e)) - exact_value(obj, pr.with_x(pr.x - e))) / (2 * h)
    return g


# ------------------------------------------------------------------------ lossless rounding


def pad_greedily(obj: Objective, part: Partition, S: list[int]) -> list[int]:
    """Fill every block up to exactly B_k elements by marginal gain (never lowers a monotone f)."""
    S = sorted(set(S))
    counts = part.counts(S)
    for k in np.flatnonzero(counts < part.budgets):
        for _ in range(int(part.budgets[k] - counts[k])):
            cand = np.setdiff1d(part.blocks[k], S)
            vals = obj.values_plus(S, cand)
            S = sorted(S + [int(cand[int(np.argmax(vals))])])
    return S


def round_priors(obj: Objective, pr: Priors, rng: np.random.Generator, samples: int = 1, pad: str = "greedy"
                 ) -> tuple[list[int], float, list[float], list[float]]:
    """Lossless rounding: draw S ~ q (always feasible), pad each block to B_k, keep the best of ``samples``.

    E f(S) = ME(q) and f(padded S) ≥ f(S) for any monotone f: no submodularity is used.
    ``pad="none"`` keeps the sampled set as it is (valid for any set function, monotone or not).
    Returns (best set, its value, f of every padded draw, f of every draw before padding).
    """
    best, best_v, vals, raw = None, -np.inf, [], []
    for _ in range(samples):
        S0 = sample_set(pr, rng)
        raw.append(obj.value(S0))
        if pad == "greedy":
            S = pad_greedily(obj, pr.part, S0)
            v = obj.value(S)
        else:
            S, v = S0, raw[-1]
        vals.append(v)
        if v > best_v:
            best, best_v = S, v
    return best, float(best_v), vals, raw
