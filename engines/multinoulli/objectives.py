"""Partition constraints and set functions behind one evaluation-counting oracle.

Every algorithm reaches ``f`` only through ``Objective.value`` (one query),
``Objective.values_plus`` (f(S ∪ {v}) for a batch of candidates: one query per
candidate) and ``Objective.values_batch`` (many sets: one query per set), so the
counter ``evals`` is the number of set-function evaluations in the paper's sense.
Batching only makes the queries cheaper in wall time; it never hides one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


class ObjectiveError(ValueError):
    """The objective is unusable (NaN/inf values, not monotone, empty instance)."""


class PartitionError(ValueError):
    """The partition constraint is malformed (empty block, budget larger than its block)."""


@dataclass
class Partition:
    """V = V_1 ∪ … ∪ V_K (disjoint) with budgets B_k: S is feasible iff |S ∩ V_k| ≤ B_k for all k."""

    blocks: list[np.ndarray]
    budgets: np.ndarray
    names: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.blocks = [np.asarray(b, dtype=np.int64) for b in self.blocks]
        self.budgets = np.asarray(self.budgets, dtype=np.int64)
        if not self.blocks:
            raise PartitionError("the partition has no blocks")
        if len(self.budgets) != len(self.blocks):
            raise PartitionError(f"{len(self.blocks)} blocks but {len(self.budgets)} budgets")
        if not self.names:
            self.names = [f"block {k + 1}" for k in range(len(self.blocks))]
        for k, (b, B) in enumerate(zip(self.blocks, self.budgets)):
            if b.size == 0:
                raise PartitionError(f"{self.names[k]} is empty: every block needs at least one element")
            if B < 1:
                raise PartitionError(f"{self.names[k]} has budget {B}; budgets must be at least 1")
            if B > b.size:
                raise PartitionError(
                    f"budget B = {B} is larger than {self.names[k]}, which has only {b.size} element(s); "
                    "lower the budget or use fewer blocks")
        allv = np.concatenate(self.blocks)
        if np.unique(allv).size != allv.size:
            raise PartitionError("blocks overlap: an element belongs to two blocks")
        self.n = int(allv.max()) + 1
        self.block_of = np.full(self.n, -1, dtype=np.int64)
        for k, b in enumerate(self.blocks):
            self.block_of[b] = k

    @property
    def K(self) -> int:
        return len(self.blocks)

    @property
    def rank(self) -> int:
        return int(self.budgets.sum())

    def counts(self, S) -> np.ndarray:
        S = np.asarray(list(S), dtype=np.int64)
        return np.bincount(self.block_of[S], minlength=self.K) if S.size else np.zeros(self.K, np.int64)

    def feasible(self, S) -> bool:
        S = list(S)
        return len(set(S)) == len(S) and all(0 <= v < self.n and self.block_of[v] >= 0 for v in S) \
            and bool(np.all(self.counts(S) <= self.budgets))

    def n_bases(self) -> int:
        return int(np.prod([math.comb(b.size, int(B)) for b, B in zip(self.blocks, self.budgets)], dtype=object))


class Objective:
    """A monotone set function f: 2^V → ℝ₊ with an evaluation counter (subclasses give ``_value``)."""

    name = "objective"

    def __init__(self, n: int):
        self.n = n
        self.evals = 0

    # -- counted oracle -------------------------------------------------------------
    def value(self, S) -> float:
        self.evals += 1
        return float(self._value(np.asarray(sorted(set(int(v) for v in S)), dtype=np.int64)))

    def values_plus(self, S, cands) -> np.ndarray:
        """f(S ∪ {v}) for each v in ``cands`` (len(cands) evaluations)."""
        fS, out = self.value_and_plus(S, cands)
        self.evals -= 1
        return out

    def value_and_plus(self, S, cands) -> tuple[float, np.ndarray]:
        """(f(S), f(S ∪ {v}) for each v in ``cands``): 1 + len(cands) evaluations."""
        cands = np.asarray(cands, dtype=np.int64)
        self.evals += int(cands.size) + 1
        S = np.asarray(sorted(set(int(v) for v in S)), dtype=np.int64)
        fS, out = self._values_plus(S, cands)
        out = np.asarray(out, dtype=float)
        if S.size:
            Sset = set(S.tolist())
            inside = np.array([c in Sset for c in cands.tolist()]) if cands.size < 64 else np.isin(cands, S)
            out[inside] = fS
        return float(fS), out

    def values_batch(self, sets: np.ndarray) -> np.ndarray:
        """f of each row of an (N, m) integer array of distinct elements (N evaluations)."""
        sets = np.asarray(sets, dtype=np.int64)
        self.evals += int(sets.shape[0])
        return np.asarray(self._values_batch(sets), dtype=float)

    # -- implementations ------------------------------------------------------------
    def _value(self, S: np.ndarray) -> float:
        raise NotImplementedError

    def _values_plus(self, S: np.ndarray, cands: np.ndarray) -> tuple[float, np.ndarray]:
        """(f(S), [f(S ∪ {c}) for c in cands]); entries for c ∈ S are overwritten by the caller."""
        return self._value(S), np.array([self._value(np.union1d(S, [c])) for c in cands])

    def _values_batch(self, sets: np.ndarray) -> np.ndarray:
        return np.array([self._value(np.unique(s)) for s in sets])


class LogDet(Objective):
    """DPP diversity f(S) = log det(I + L_S) with a PSD kernel L (monotone submodular, α = 1)."""

    name = "log det(I + L_S)"

    def __init__(self, L: np.ndarray):
        super().__init__(L.shape[0])
        self.L = np.asarray(L, dtype=float)

    def _value(self, S):
        if S.size == 0:
            return 0.0
        return float(np.linalg.slogdet(np.eye(S.size) + self.L[S][:, S])[1])

    def _values_plus(self, S, cands):
        diag = self.L[cands, cands]
        if S.size == 0:
            return 0.0, np.log1p(diag)
        LS = self.L[S]
        C = np.linalg.cholesky(np.eye(S.size) + LS[:, S])
        W = np.linalg.solve(C, LS[:, cands])  # C⁻¹ L_{S,c}
        schur = 1.0 + diag - (W * W).sum(0)  # Schur complement of I + L_{S+c}
        base = 2.0 * np.log(np.diag(C)).sum()
        return base, base + np.log(np.maximum(schur, 1e-300))

    def _values_batch(self, sets):
        if sets.shape[1] == 0:
            return np.zeros(sets.shape[0])
        M = self.L[sets[:, :, None], sets[:, None, :]] + np.eye(sets.shape[1])
        return np.linalg.slogdet(M)[1]


class AOptimalDesign(Objective):
    """Bayesian A-optimal design f(S) = tr(Λ⁻¹) − tr((Λ + σ⁻² X_Sᵀ X_S)⁻¹) (monotone, (γ, β)-weakly submodular)."""

    name = "A-optimal design"

    def __init__(self, X: np.ndarray, prior_precision: float = 1.0, noise: float = 1.0):
        super().__init__(X.shape[0])
        self.X = np.asarray(X, dtype=float)
        self.lam = float(prior_precision)
        self.s2 = float(noise) ** 2
        self.d = X.shape[1]

    def _M(self, S):
        XS = self.X[S]
        return self.lam * np.eye(self.d) + XS.T @ XS / self.s2

    def _value(self, S):
        return float(self.d / self.lam - np.trace(np.linalg.inv(self._M(S))))

    def _values_plus(self, S, cands):
        Minv = np.linalg.inv(self._M(S))
        base = self.d / self.lam - np.trace(Minv)
        Xc = self.X[cands]
        U = Xc @ Minv  # rows: (M⁻¹ x)ᵀ
        # Sherman–Morrison: tr(M⁻¹) − tr((M + xxᵀ/σ²)⁻¹) = ‖M⁻¹x‖² / (σ² + xᵀM⁻¹x)
        return base, base + (U * U).sum(1) / (self.s2 + (U * Xc).sum(1))

    def _values_batch(self, sets):
        XS = self.X[sets]  # (N, m, d)
        M = self.lam * np.eye(self.d) + np.einsum("nmi,nmj->nij", XS, XS) / self.s2
        return self.d / self.lam - np.trace(np.linalg.inv(M), axis1=1, axis2=2)


class Coverage(Objective):
    """Weighted coverage f(S) = Σ_{u covered by S} w_u, with A[v, u] = 1 when v covers u (monotone submodular)."""

    name = "weighted coverage"

    def __init__(self, A: np.ndarray, w: np.ndarray):
        super().__init__(A.shape[0])
        self.A = np.asarray(A, dtype=bool)
        self.Af = self.A.astype(np.float64)
        self.w = np.asarray(w, dtype=float)

    def _covered(self, S):
        return self.A[S].any(0) if S.size else np.zeros(self.A.shape[1], bool)

    def _value(self, S):
        return float(self.w[self._covered(S)].sum())

    def _values_plus(self, S, cands):
        cov = self._covered(S)
        base = self.w[cov].sum()
        return base, base + self.Af[cands] @ (self.w * ~cov)

    def _values_batch(self, sets):
        cov = self.A[sets].any(1)  # (N, m)
        return cov @ self.w


class BlackBox(Objective):
    """Wrap a plain Python callable f(list_of_ints) -> float (used for black-box objectives and tests)."""

    def __init__(self, fn, n: int, name: str = "custom"):
        super().__init__(n)
        self.fn = fn
        self.name = name

    def _value(self, S):
        return float(self.fn([int(v) for v in S]))


def check_objective(obj: Objective, part: Partition, seed: int = 0, chains: int = 8) -> None:
    """Evaluate f along random feasible chains ∅ ⊂ S₁ ⊂ … ⊂ base; refuse NaN/inf or any decrease.

    Run before every experiment; its evaluations are not charged to any algorithm.
    """
    rng = np.random.default_rng(seed)
    before = obj.evals
    try:
        f0 = obj.value([])
        if not math.isfinite(f0):
            raise ObjectiveError(f"{obj.name}: f(∅) = {f0} is not a finite number")
        for _ in range(chains):
            order = np.concatenate([rng.choice(b, size=int(B), replace=False)
                                    for b, B in zip(part.blocks, part.budgets)])
            rng.shuffle(order)
            prev, S = f0, []
            for v in order:
                S.append(int(v))
                fv = obj.value(S)
                if not math.isfinite(fv):
                    raise ObjectiveError(f"{obj.name}: f returned {fv} for a set of {len(S)} elements; "
                                         "the objective must give finite numbers")
                tol = 1e-9 * max(1.0, abs(prev))
                if fv < prev - tol:
                    raise ObjectiveError(
                        f"{obj.name} is not monotone: adding element {v} to a set of {len(S) - 1} elements "
                        f"lowered f from {prev:.6g} to {fv:.6g}")
                prev = fv
    finally:
        obj.evals = before
