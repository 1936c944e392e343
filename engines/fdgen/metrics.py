"""Bias, fairness and generation-quality metrics (numpy and scikit-learn; no torch).

* downstream fairness: ΔSP, ΔEO (and accuracy) of predictions on real test nodes;
* feature bias: MMD² between X|s=0 and X|s=1, and the AUC of a logistic probe predicting s from X;
* structural bias: sensitive homophily h_s (and its value under random mixing), degree gap Δdeg,
  dyadic gap P(edge | same s) − P(edge | different s);
* generation quality: degree and clustering MMD (GraphRNN-style Gaussian-EMD kernel on histograms),
  feature MMD between real and generated X.
"""
from __future__ import annotations

import numpy as np

from .data import Graph


# ------------------------------------------------------------------ downstream fairness


def delta_sp(pred: np.ndarray, s: np.ndarray) -> float:
    """|P(ŷ=1 | s=0) − P(ŷ=1 | s=1)|."""
    pred, s = np.asarray(pred), np.asarray(s)
    return float(abs(pred[s == 0].mean() - pred[s == 1].mean()))


def delta_eo(pred: np.ndarray, y: np.ndarray, s: np.ndarray) -> float:
    """|P(ŷ=1 | y=1, s=0) − P(ŷ=1 | y=1, s=1)| (true-positive-rate gap)."""
    pred, y, s = np.asarray(pred), np.asarray(y), np.asarray(s)
    a, b = pred[(y == 1) & (s == 0)], pred[(y == 1) & (s == 1)]
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    return float(abs(a.mean() - b.mean()))


# ------------------------------------------------------------------ feature bias


def _sqdist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T, 0.0)


def mmd2(a: np.ndarray, b: np.ndarray, bandwidth: float | None = None, max_n: int = 1000, seed: int = 0) -> float:
    """Biased MMD² with a Gaussian kernel; bandwidth = median pairwise distance of the pooled sample."""
    rng = np.random.default_rng(seed)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if len(a) > max_n:
        a = a[rng.choice(len(a), max_n, replace=False)]
    if len(b) > max_n:
        b = b[rng.choice(len(b), max_n, replace=False)]
    if bandwidth is None:
        pool = np.concatenate([a, b])
        d = _sqdist(pool, pool)
        bandwidth = float(np.sqrt(np.median(d[d > 0]))) if (d > 0).any() else 1.0
    g = 1.0 / (2 * bandwidth**2)
    kaa, kbb, kab = np.exp(-g * _sqdist(a, a)), np.exp(-g * _sqdist(b, b)), np.exp(-g * _sqdist(a, b))
    return float(max(kaa.mean() + kbb.mean() - 2 * kab.mean(), 0.0))


def feature_mmd_groups(X: np.ndarray, s: np.ndarray) -> float:
    return mmd2(X[s == 0], X[s == 1])


def probe_auc(X: np.ndarray, s: np.ndarray, seed: int = 0) -> float:
    """Cross-validated (5-fold) AUC of a logistic-regression probe predicting s from X: 0.5 = no leakage."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    folds = int(min(5, np.bincount(s).min()))
    if folds < 2:
        return float("nan")
    clf = LogisticRegression(C=1.0, max_iter=300)
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    p = cross_val_predict(clf, X, s, cv=cv, method="predict_proba")[:, 1]
    return float(roc_auc_score(s, p))


# ------------------------------------------------------------------ structural bias


def sensitive_homophily(edges: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """(h_s = share of edges inside a group, its expectation under degree-preserving random mixing)."""
    if len(edges) == 0:
        return float("nan"), float("nan")
    h = float((s[edges[:, 0]] == s[edges[:, 1]]).mean())
    deg = np.bincount(edges.ravel(), minlength=len(s)).astype(float)
    vol1 = deg[s == 1].sum() / deg.sum()
    return h, float(vol1**2 + (1 - vol1) ** 2)


def degree_gap(g: Graph) -> float:
    """|E[deg | s=0] − E[deg | s=1]|."""
    d = g.degrees()
    return float(abs(d[g.s == 0].mean() - d[g.s == 1].mean()))


def dyadic_gap(edges: np.ndarray, s: np.ndarray) -> float:
    """P(edge | same group) − P(edge | different group), over all node pairs."""
    n0, n1 = int((s == 0).sum()), int((s == 1).sum())
    same_pairs = n0 * (n0 - 1) / 2 + n1 * (n1 - 1) / 2
    diff_pairs = n0 * n1
    same = (s[edges[:, 0]] == s[edges[:, 1]]).sum() if len(edges) else 0
    diff = len(edges) - same
    return float(same / max(same_pairs, 1) - diff / max(diff_pairs, 1))


# ------------------------------------------------------------------ generation quality


def _emd_1d(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.abs(np.cumsum(p - q)).sum())


def _gaussian_emd_mmd(real: list[np.ndarray], gen: list[np.ndarray], sigma: float) -> float:
    """MMD² between two sets of normalised histograms with k(p, q) = exp(−EMD(p, q)² / 2σ²) (GraphRNN)."""
    L = max(max(len(h) for h in real), max(len(h) for h in gen))
    pad = lambda h: np.pad(h, (0, L - len(h)))  # noqa: E731
    R = [pad(h) / max(h.sum(), 1e-12) for h in real]
    G = [pad(h) / max(h.sum(), 1e-12) for h in gen]
    k = lambda a, b: np.exp(-_emd_1d(a, b) ** 2 / (2 * sigma**2))  # noqa: E731
    krr = np.mean([k(a, b) for a in R for b in R])
    kgg = np.mean([k(a, b) for a in G for b in G])
    krg = np.mean([k(a, b) for a in R for b in G])
    return float(max(krr + kgg - 2 * krg, 0.0))


def degree_mmd(real: Graph, gens: list[Graph]) -> float:
    hist = lambda g: np.bincount(g.degrees().astype(int)).astype(float)  # noqa: E731
    return _gaussian_emd_mmd([hist(real)], [hist(g) for g in gens], sigma=1.0)


def clustering(g: Graph) -> np.ndarray:
    """Local clustering coefficient of every node (sparse triangle count)."""
    import scipy.sparse as sp

    A = sp.coo_matrix((np.ones(2 * g.m), (np.r_[g.edges[:, 0], g.edges[:, 1]], np.r_[g.edges[:, 1], g.edges[:, 0]])),
                      shape=(g.n, g.n)).tocsr()
    tri = np.asarray((A @ A).multiply(A).sum(1)).ravel() / 2
    d = g.degrees()
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(d > 1, 2 * tri / (d * (d - 1)), 0.0)
    return c


def clustering_mmd(real: Graph, gens: list[Graph], bins: int = 100) -> float:
    hist = lambda g: np.histogram(clustering(g), bins=bins, range=(0, 1))[0].astype(float)  # noqa: E731
    return _gaussian_emd_mmd([hist(real)], [hist(g) for g in gens], sigma=0.1 * bins)


def graph_bias(g: Graph, seed: int = 0) -> dict[str, float]:
    """Feature and structural bias of one graph (the numbers of the 'Inspect' table)."""
    h, h_rand = sensitive_homophily(g.edges, g.s)
    return {
        "nodes": float(g.n),
        "edges": float(g.m),
        "mean_degree": float(2 * g.m / g.n),
        "h_s": h,
        "h_s_random": h_rand,
        "degree_gap": degree_gap(g),
        "dyadic_gap": dyadic_gap(g.edges, g.s),
        "feature_mmd_s": feature_mmd_groups(g.X, g.s),
        "probe_auc": probe_auc(g.X, g.s, seed),
        "minority_share": float(g.s.mean()),
        "base_rate_gap": float(abs(g.y[g.s == 0].mean() - g.y[g.s == 1].mean())),
    }


def most_biased_feature(X: np.ndarray, s: np.ndarray) -> int:
    """Index of the feature with the largest standardised mean difference between groups, preferring
    continuous features (≥ 10 distinct values) over one-hot columns, whose histograms say little."""
    d = np.abs(X[s == 0].mean(0) - X[s == 1].mean(0)) / (X.std(0) + 1e-9)
    continuous = np.array([len(np.unique(X[:, k])) >= 10 for k in range(X.shape[1])])
    if continuous.any():
        d = np.where(continuous, d, -1.0)
    return int(np.argmax(d))
